"""Concurrent requests gathered into batches for the model, taken in turn so that a large request does not stall
small ones.

Each text a request brings is cut into pieces of about a quarter of a batch (`pieces`): at paragraph boundaries,
where the model encodes every paragraph on its own anyway, so the pieces' entities, shifted back, are the whole
text's; and a paragraph longer than a batch into overlapping stretches of a quarter of a batch, cut at spaces,
each keeping the entities that start in its middle part, so an entity shorter than half the overlap is found whole
in the stretch that keeps it. A single worker builds each batch by taking one piece from each waiting request in
turn, up to `max_texts` pieces and `max_chars` characters (one request at most half of them after a shared batch),
after waiting `max_wait_ms` from the first for others to arrive; the detector runs in a worker thread, so the event
loop never blocks on the model and the model sees one batch at a time. A small request that arrives while a 1 MB
one runs waits for half a batch of it, not for all of it. When the detector fails on a batch, each of its pieces is
tried alone, so only the request holding the piece it cannot take fails; the service goes on.
"""

import asyncio
import collections
import time

from piiner.hub.encoding_piiner import paragraphs


def _word_start(text, position, lowest):
    """The last position in `(lowest, position]` where a word starts (after whitespace); `position` where none does."""
    for i in range(position, lowest, -1):
        if text[i - 1].isspace() and not text[i].isspace():
            return i
    return position


def _stretches(text, start, end, max_chars):
    """`(start, end, keep_from, keep_to)` of overlapping stretches of at most `max_chars` characters covering
    `text[start:end]`, cut where words start. Each keeps the entities that start in `[keep_from, keep_to)`, the
    middle of its overlaps with its neighbours: a quarter of `max_chars` is shared, so an entity of up to an eighth
    of it is whole in the stretch that keeps it, read with as much context on each side."""
    overlap = max_chars // 4
    cuts, s = [], start
    while end - s > max_chars:
        e = _word_start(text, s + max_chars, s + max_chars - overlap // 2)
        following = _word_start(text, e - overlap, e - overlap - overlap // 2)
        cuts.append((s, e, following))
        s = following
    cuts.append((s, end, end))
    out, keep_from = [], start
    for s, e, following in cuts:
        keep_to = (following + e) // 2 if following < end else end
        out.append((s, e, keep_from, keep_to))
        keep_from = keep_to
    return out


def pieces(text, max_chars):
    """`(offset, piece, keep_from, keep_to)` of `text`: pieces of about a quarter of `max_chars`, cut at paragraph
    boundaries (the whitespace between paragraphs goes with the piece before it); a paragraph of up to `max_chars`
    is a piece of its own, and a longer one is cut into overlapping stretches of a quarter of `max_chars`
    (`_stretches`). A piece's entities count where they start in `[keep_from, keep_to)` (offsets into `text`); the
    kept ranges tile the text."""
    # A quarter of a batch: a batch then holds a piece of a large request beside the small ones that wait, and what
    # a small request waits for behind a large one is about a piece. Short stretches also cost less than one long
    # stretch, which the model reads in windows that overlap.
    quarter = max(max_chars // 4, 1)
    out, start, end = [], 0, 0

    def close(upto):
        if upto - start <= max_chars:
            out.append((start, text[start:upto], start, upto))
            return
        out.extend((s, text[s:e], lo, hi) for s, e, lo, hi in _stretches(text, start, upto, quarter))

    for _, paragraph_end in paragraphs(text):
        if paragraph_end - start > quarter and end > start:
            close(end)
            start = end
        end = paragraph_end
    close(len(text))
    return out


def joined(cut, found):
    """The entities of a text from those of its `pieces` (`found`, one list per piece, offsets into the piece): each
    piece's entities that start in its kept range, shifted back; one that overlaps an entity kept before it (a
    neighbouring stretch read the same words another way) is left out."""
    entities = []
    for (offset, _, keep_from, keep_to), piece_entities in zip(cut, found):
        for entity in piece_entities:
            entity = {**entity, "start": entity["start"] + offset, "end": entity["end"] + offset} if offset else entity
            if keep_from <= entity["start"] < keep_to and not (entities and entity["start"] < entities[-1]["end"]):
                entities.append(entity)
    return entities


class MicroBatcher:
    """`await batcher.submit(texts)` -> the detector's result for each text, computed in shared batches.

    Args:
        detect (callable): list of texts -> list of results (one list of entity dicts per text), run in a thread.
        max_texts (`int`): pieces per detector call at most.
        max_wait_ms (`float`): how long the first piece of a batch waits for others.
        max_chars (`int`): characters per detector call at most (a batch always takes at least one piece); texts
            are cut into pieces of a quarter of it (`pieces`).
    """

    def __init__(self, detect, max_texts=32, max_wait_ms=10.0, max_chars=4000):
        if max_texts < 1 or max_wait_ms < 0 or max_chars < 1:
            raise ValueError(f"max_texts and max_chars must be >= 1 and max_wait_ms >= 0, got {max_texts}, "
                             f"{max_chars}, {max_wait_ms}")
        self.detect, self.max_texts, self.max_wait, self.max_chars = detect, max_texts, max_wait_ms / 1000, max_chars
        self.requests = collections.deque()  # per waiting request, a deque of its (piece, future)
        self.arrived = None
        self.worker = None
        self.shared = False  # whether the last batch held pieces of several requests
        self.batches_run = self.texts_run = 0  # for the health endpoint: counts, so a long-lived service stays flat

    @property
    def waiting(self):
        """Requests with pieces not yet taken into a batch."""
        return len(self.requests)

    async def start(self):
        self.arrived = asyncio.Event()
        self.worker = asyncio.create_task(self._run())

    async def stop(self):
        if self.worker is not None:
            self.worker.cancel()
            try:
                await self.worker
            except asyncio.CancelledError:
                pass
            self.worker = None

    async def submit(self, texts):
        loop = asyncio.get_running_loop()
        cut = [pieces(text, self.max_chars) for text in texts]
        work = collections.deque((piece, loop.create_future()) for parts in cut for _, piece, _, _ in parts)
        futures = [future for _, future in work]
        if work:
            self.requests.append(work)
            self.arrived.set()
        found = iter(await asyncio.gather(*futures))
        return [joined(parts, [next(found) for _ in parts]) for parts in cut]

    def _take(self):
        """One piece from each waiting request in turn, within the batch's limits. After a batch shared by several
        requests, one request takes at most half a batch's characters (its first piece always fits): the clients
        of the others are likely to send again while this batch runs, and then wait for half a batch, not a whole
        one. A request alone since the batch before fills a batch."""
        share = self.max_chars // 2 if self.shared else self.max_chars
        batch, chars, shares, passed = [], 0, collections.Counter(), 0
        while self.requests and len(batch) < self.max_texts and passed < len(self.requests):
            work = self.requests[0]
            piece, future = work[0]
            if batch and chars + len(piece) > self.max_chars:
                break
            self.requests.rotate(-1)
            if shares[id(work)] and shares[id(work)] + len(piece) > share:
                passed += 1  # this request has had its share of the batch
                continue
            passed = 0
            work.popleft()
            if not work:
                self.requests.remove(work)
            if not future.done():  # a cancelled request's pieces go
                batch.append((piece, future))
                chars += len(piece)
                shares[id(work)] += len(piece)
        self.shared = len(shares) > 1
        return batch

    async def _run(self):
        loop = asyncio.get_running_loop()
        while True:
            if not self.requests:
                self.arrived.clear()
                await self.arrived.wait()
                deadline = time.monotonic() + self.max_wait
                while time.monotonic() < deadline and sum(map(len, self.requests)) < self.max_texts:
                    await asyncio.sleep(min(0.001, max(deadline - time.monotonic(), 0)))
            live = self._take()
            if not live:
                continue
            self.batches_run += 1
            self.texts_run += len(live)
            try:
                results = await loop.run_in_executor(None, self.detect, [text for text, _ in live])
            except Exception:  # noqa: BLE001 - one text may be to blame: each is tried alone
                results = None
            if results is not None:
                for (_, future), result in zip(live, results):
                    if not future.done():
                        future.set_result(result)
                continue
            for text, future in live:
                try:
                    result = (await loop.run_in_executor(None, self.detect, [text]))[0]
                except Exception as error:  # noqa: BLE001 - fails its own request; the service stays up
                    if not future.done():
                        future.set_exception(error)
                    continue
                if not future.done():
                    future.set_result(result)
