"""Concurrent requests gathered into batches for the model.

Each text a request brings waits in one queue; a single worker takes up to `max_texts` of them, or whatever has
arrived `max_wait_ms` after the first, and runs the detector on them in a worker thread, so the event loop never
blocks on the model and the model always sees one batch at a time. When the detector fails on a batch, each of
its texts is tried alone, so only the request holding the text it cannot take fails; the service goes on.
"""

import asyncio
import time


class MicroBatcher:
    """`await batcher.submit(texts)` -> the detector's result for each text, computed in shared batches.

    Args:
        detect (callable): list of texts -> list of results (one per text), run in a thread.
        max_texts (`int`): texts per detector call at most.
        max_wait_ms (`float`): how long the first text of a batch waits for others.
    """

    def __init__(self, detect, max_texts=32, max_wait_ms=10.0):
        if max_texts < 1 or max_wait_ms < 0:
            raise ValueError(f"max_texts must be >= 1 and max_wait_ms >= 0, got {max_texts}, {max_wait_ms}")
        self.detect, self.max_texts, self.max_wait = detect, max_texts, max_wait_ms / 1000
        self.queue = None
        self.worker = None
        self.batches_run = self.texts_run = 0  # for the health endpoint: counts, so a long-lived service stays flat

    async def start(self):
        self.queue = asyncio.Queue()
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
        futures = [loop.create_future() for _ in texts]
        for text, future in zip(texts, futures):
            self.queue.put_nowait((text, future))
        return await asyncio.gather(*futures)

    async def _run(self):
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            deadline = time.monotonic() + self.max_wait
            while len(batch) < self.max_texts:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self.queue.get(), timeout))
                except asyncio.TimeoutError:
                    break
            live = [(text, future) for text, future in batch if not future.done()]  # a cancelled request's texts go
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
