"""Text -> model inputs for piiner: token windows, offsets and the char ids of each token's source word.

Ships with the weights: imports only torch, NumPy, the standard library and its sibling ``checksums``.

The char CNN reads, for every subword token, the characters of the whole whitespace-delimited word the token comes
from, taken from the original text (case and punctuation kept), so "(John" and "SSN:123-45-6789" keep the
evidence the lower-casing subword tokenizer throws away. A long text becomes overlapping token windows
(``encode_texts``); ``decoding_piiner`` turns the model's tags back into entities.
"""

import bisect
import functools
import importlib.metadata
import itertools
import re

import numpy as np
import torch

from .checksums import fold_width


# Ids kept for code points outside the direct range. Every code point maps somewhere, so no text can index past
# the embedding (the reference crashed on ids >= 256).
HASHED_CHAR_BUCKETS = 64
_HASH_BITS = 6  # 2**6 buckets: the top bits of a multiplicative hash are the well-mixed ones
assert 1 << _HASH_BITS == HASHED_CHAR_BUCKETS
# Knuth's multiplicative constant: spreads neighbouring code points (a CJK block, an emoji range) over the buckets.
# Python's hash() is salted per process, so it would give a reloaded model different ids.
_FIBONACCI_MULTIPLIER = 0x9E3779B1

# str.isspace() and the regex \s agree on str patterns (both use Py_UNICODE_ISSPACE); tests check it.
_WORD = re.compile(r"\S+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_char(ch, char_vocab_size):
    """Id of one character for the char embedding.

    0 is padding. Code points 1 .. ``char_vocab_size - 65`` keep their own id; every other code point (NUL, CJK,
    emoji, lone surrogates) is hashed deterministically into the last 64 ids.
    """
    if char_vocab_size <= HASHED_CHAR_BUCKETS + 1:
        raise ValueError(
            f"char_vocab_size={char_vocab_size} leaves no direct ids: it must exceed {HASHED_CHAR_BUCKETS + 1}"
        )
    code_point = ord(ch)
    direct_ids = char_vocab_size - HASHED_CHAR_BUCKETS
    if 0 < code_point < direct_ids:
        return code_point
    bucket = ((code_point * _FIBONACCI_MULTIPLIER) & 0xFFFFFFFF) >> (32 - _HASH_BITS)
    return direct_ids + bucket


@functools.lru_cache(maxsize=1 << 16)
def _encode_word(word, char_vocab_size):
    return tuple(encode_char(ch, char_vocab_size) for ch in word)


def _strip_span(text, start, end):
    """Narrow text[start:end] to its non-whitespace ends (start == end when it is all whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class _WordIndex:
    """The whitespace-delimited words of one text, and the char ids each token reads from them."""

    def __init__(self, text, max_word_chars, char_vocab_size):
        self.text = text
        self.max_word_chars = max_word_chars
        self.char_vocab_size = char_vocab_size
        spans = [m.span() for m in _WORD.finditer(text)]
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]
        self._word_rows = None

    def word_span(self, start, end):
        """(word_start, word_end) covering the non-whitespace characters of text[start:end]; None if there are none."""
        start, end = _strip_span(self.text, start, end)
        if start >= end:
            return None
        first = bisect.bisect_right(self.starts, start) - 1
        last = bisect.bisect_right(self.starts, end - 1) - 1
        return self.starts[first], self.ends[last]

    def char_ids(self, start, end):
        """Char ids of the word under text[start:end], one token at a time (the reference for `char_array`)."""
        span = self.word_span(start, end)
        if span is None:
            return []
        word_start, word_end = span
        if word_end - word_start > self.max_word_chars:
            # Centre the window on the token so every token of a long IBAN or URL still reads its own characters.
            centre = (start + end) // 2
            word_start = min(max(centre - self.max_word_chars // 2, word_start), word_end - self.max_word_chars)
            word_end = word_start + self.max_word_chars
        return list(_encode_word(self.text[word_start:word_end], self.char_vocab_size))

    def char_array(self, offsets):
        """(T, C) int64 char ids for (T, 2) offsets, equal to `char_ids` token by token, padded with 0.

        Runs on every token at inference, so the common case (a token inside one word of at most `max_word_chars`)
        is a gather from a table holding each word of the text once; only the rest goes through `char_ids`. NumPy
        rather than torch: a few small operations per text, where torch's per-op cost would be most of the time.
        """
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        if not self.starts:  # whitespace only: no token has characters
            return np.zeros((len(offsets), 1), dtype=np.int64)
        if self._word_rows is None:
            words = [self.text[s:e] if e - s <= self.max_word_chars else "" for s, e in zip(self.starts, self.ends)]
            codes = [_encode_word(word, self.char_vocab_size) for word in words]
            lengths = np.fromiter(map(len, codes), dtype=np.int64, count=len(codes))
            # Row 0 stays empty for special tokens and the tokens handled one by one.
            table = np.zeros((len(codes) + 1, max(int(lengths.max()), 1)), dtype=np.int64)
            table[1:][np.arange(table.shape[1]) < lengths[:, None]] = np.fromiter(
                itertools.chain.from_iterable(codes), dtype=np.int64, count=int(lengths.sum()))
            self._word_rows = table
            self._starts_a = np.asarray(self.starts, dtype=np.int64)
            self._ends_a = np.asarray(self.ends, dtype=np.int64)
        starts, ends = offsets[:, 0], offsets[:, 1]
        word = np.searchsorted(self._starts_a, starts, side="right") - 1
        last_word = np.searchsorted(self._starts_a, ends - 1, side="right") - 1
        safe = np.maximum(word, 0)
        word_end = self._ends_a[safe]
        real = ends > starts
        simple = (
            real & (word >= 0) & (starts < word_end) & (last_word == word)
            & (word_end - self._starts_a[safe] <= self.max_word_chars)
        )
        out = self._word_rows[np.where(simple, safe + 1, 0)]
        rest = np.flatnonzero(real & ~simple).tolist()
        if rest:
            extra = [self.char_ids(int(starts[i]), int(ends[i])) for i in rest]
            widest = max(map(len, extra))
            if widest > out.shape[1]:
                out = np.pad(out, ((0, 0), (0, widest - out.shape[1])))
            for i, ids in zip(rest, extra):
                out[i, : len(ids)] = ids
        return out


def _as_offset_pairs(offsets):
    if isinstance(offsets, torch.Tensor):
        offsets = offsets.tolist()
    return [(int(s), int(e)) for s, e in offsets]


def token_char_ids(text, offsets, max_word_chars, char_vocab_size):
    """Per token, the char ids of the whole whitespace word it comes from.

    Args:
        text (`str`): the original text the offsets point into.
        offsets (list of `(start, end)` or a `(T, 2)` tensor): char offsets of each token; `(0, 0)` marks a special
            or padding token, which gets `[]`.
        max_word_chars (`int`): a longer word is seen through a window of this size centred on the token.
        char_vocab_size (`int`): size of the char embedding (see `encode_char`).
    """
    words = _WordIndex(text, max_word_chars, char_vocab_size)
    return [words.char_ids(s, e) if e > s else [] for s, e in _as_offset_pairs(offsets)]


def trim_char_ids(char_ids, min_chars=1):
    """Drop the all-padding columns at the end of a (..., C) char id tensor or array, keeping at least
    `min_chars`."""
    used = (char_ids != 0).reshape(-1, char_ids.shape[-1]).any(0).tolist()
    width = max(max((i + 1 for i, column in enumerate(used) if column), default=0), min_chars)
    return char_ids[..., :width]


def pad_char_ids(batch, seq_len=None, min_chars=1):
    """Pad per-token char ids to a LongTensor (B, T, C).

    T is `seq_len` (default: the longest sequence), C the longest word in the batch, at least `min_chars` (pass the
    widest char kernel so a batch of one-letter words still fits the convolutions). Padding is 0.
    """
    longest_seq = max((len(seq) for seq in batch), default=0)
    if seq_len is None:
        seq_len = longest_seq
    elif seq_len < longest_seq:
        raise ValueError(f"seq_len={seq_len} is shorter than the longest sequence in the batch ({longest_seq})")
    rows = [list(seq) + [[]] * (seq_len - len(seq)) for seq in batch]
    flat_rows = list(itertools.chain.from_iterable(rows))
    lengths = torch.tensor([len(r) for r in flat_rows], dtype=torch.long)
    width = max(int(lengths.max()) if len(flat_rows) else 0, min_chars)
    out = torch.zeros(len(batch) * seq_len, width, dtype=torch.long)
    if len(flat_rows) and int(lengths.sum()):
        # One scatter instead of a Python loop over B*T rows.
        values = torch.tensor(list(itertools.chain.from_iterable(flat_rows)), dtype=torch.long)
        row_idx = torch.repeat_interleave(torch.arange(len(flat_rows)), lengths)
        row_start = torch.cumsum(lengths, 0) - lengths
        col_idx = torch.arange(len(values)) - torch.repeat_interleave(row_start, lengths)
        out[row_idx, col_idx] = values
    return out.view(len(batch), seq_len, width)


def _check_texts(texts):
    if isinstance(texts, str):
        return [texts]
    if not isinstance(texts, (list, tuple)):
        raise TypeError(f"texts must be a str or a list of str, got {type(texts).__name__}")
    if not texts:
        raise ValueError("texts is empty: nothing to encode")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
    return list(texts)


def default_max_length(tokenizer, config):
    """Tokens per window: the least of the tokenizer's limit, the encoder's position table and 512."""
    limits = [512, tokenizer.model_max_length or 512]
    encoder_config = getattr(config, "encoder_config", None)
    max_positions = getattr(encoder_config, "max_position_embeddings", None)
    if max_positions:
        limits.append(max_positions)
    return int(min(limits))


def _with_markers(text, marker):
    return text.replace("\n", marker) if marker else text


# A blank line (spaces or tabs allowed on it) and the whitespace after it: where one paragraph ends and the next
# begins.
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n\s*")


def paragraphs(text):
    """(start, end) of each paragraph of `text`, the stretches between blank lines; `[(0, len(text))]` when it has
    none. A paragraph is encoded on its own: text the model never saw beside it is not read as its context."""
    bounds, start = [], 0
    for match in _BLANK_LINE.finditer(text):
        if match.start() > start:
            bounds.append((start, match.start()))
        start = match.end()
    if start < len(text) or not bounds:
        bounds.append((start, len(text)))
    return bounds


def _shifted(offsets, by):
    """Token offsets of a paragraph as offsets into its text; special and padding tokens stay (0, 0)."""
    return [(start + by, end + by) if end > start else (start, end) for start, end in offsets]


def length_order(texts):
    """Indices of `texts`, shortest first: the order a list runs in, so that texts of similar length share a batch
    (a batch is padded to its longest window). The pipeline and the ONNX runtime both batch by it."""
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


# Characters read at each end of a text to find its first and last token: a token never spans more than a word, and
# a word cut at the edge of the stretch still ends (starts) where it does in the whole text.
_EDGE_CHARS = 64


class WindowCoverageError(RuntimeError):
    """The tokenizer's overflow windows do not reach the ends of a text (see `_check_windows_cover`)."""


def _installed(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "(not found)"


def _real_bounds(offsets):
    real = [(s, e) for s, e in offsets if e > s]
    return (real[0][0], real[-1][1]) if real else None


def _check_windows_cover(tokenizer, inputs, encoding, max_length):
    """Raise unless the windows of every text that overflowed reach its first and last tokens.

    tokenizers 0.23.1 and 0.23.2 stop tokenizing a truncated text early (huggingface/tokenizers#2091): its overflow
    then holds one short window and the rest of the text is silently gone, unseen by the model and unredacted. A text
    whose first window is not full was never truncated, so only the others are checked, against their first and last
    tokens as the tokenizer gives them without truncation."""
    samples = encoding["overflow_to_sample_mapping"]
    first_window = {}
    for w, sample in enumerate(samples):
        first_window.setdefault(sample, w)
    full = {p for p, w in first_window.items() if sum(encoding["attention_mask"][w]) >= max_length}
    if not full:  # the common case: no text overflowed, and no token's offsets need reading
        return
    reach = {}
    for sample, offsets in zip(samples, encoding["offset_mapping"]):
        bounds = _real_bounds(offsets) if sample in full else None
        if bounds:
            low, high = reach.get(sample, bounds)
            reach[sample] = (min(low, bounds[0]), max(high, bounds[1]))
    truncated = sorted(reach)
    if not truncated:
        return
    edges = tokenizer([inputs[p][:_EDGE_CHARS] for p in truncated] + [inputs[p][-_EDGE_CHARS:] for p in truncated],
                      add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    for k, p in enumerate(truncated):
        head, tail = _real_bounds(edges[k]), _real_bounds(edges[len(truncated) + k])
        shift = max(len(inputs[p]) - _EDGE_CHARS, 0)
        want = (head[0] if head else reach[p][0], tail[1] + shift if tail else reach[p][1])
        if reach[p] != want:
            raise WindowCoverageError(
                f"the tokenizer's windows of a text reach its characters {reach[p][0]}:{reach[p][1]}, but its tokens "
                f"run over {want[0]}:{want[1]}: the rest would go unread. Installed: tokenizers "
                f"{_installed('tokenizers')}; 0.23.1 and 0.23.2 drop what follows a truncated text's first window "
                "(huggingface/tokenizers#2091): install tokenizers 0.23.3 or later, or 0.22."
            )


def check_tokenizer_windows(tokenizer, config):
    """Raise `WindowCoverageError` at load when `tokenizer` cuts a long text's windows short, rather than at the first
    long text a server or a corpus job meets: a text of several small windows through `encode_texts`."""
    encode_texts(tokenizer, " ".join(["window"] * 40), config, max_length=12, stride=2, return_tensors=None)


def encode_texts(tokenizer, texts, config, max_length=None, stride=None, return_tensors="pt", split_paragraphs=True):
    """Tokenize texts for piiner: windows, offsets and char ids.

    Each paragraph of a text (`paragraphs`: the stretches between blank lines) is windowed on its own, so no window
    holds two (unless `split_paragraphs` is False); a paragraph longer than `max_length` tokens becomes overlapping
    windows (`stride` tokens shared by neighbours), so nothing is cut. Offsets point into the whole text, and
    `overflow_to_sample_mapping` says which text each window belongs to.

    Args:
        tokenizer: a fast (Rust) tokenizer: the offsets it returns are what maps predictions back to the text.
        texts (`str` or `list[str]`): the texts; offsets point into them as given. Full-width forms are read as
            their ASCII characters (`fold_width`, one code point for one); nothing else is normalised.
        config: the model config (`PiiNerConfig`): `max_word_chars`, `char_vocab_size`, `char_kernel_sizes`,
            `line_break_marker` and the encoder's `max_position_embeddings` are read from it.
        max_length (`int`, *optional*): tokens per window, special tokens included (default: `default_max_length`).
        stride (`int`, *optional*): tokens shared by consecutive windows (default: a quarter of `max_length`).
        return_tensors (`"pt"` or `None`): tensors padded to the longest window, or plain lists.
        split_paragraphs (`bool`, defaults to `True`): window each paragraph on its own, as every inference path
            does. Training features pass `False` and window each record whole, so the model learns from context
            across blank lines and a label that crosses one (an address in a letter) is not cut in two.

    Returns:
        The tokenizer's `BatchEncoding` (input_ids, attention_mask, token_type_ids when the tokenizer makes them,
        offset_mapping, overflow_to_sample_mapping) plus `char_ids`: (windows, T, C) when tensors, else nested lists.
    """
    texts = [fold_width(text) for text in _check_texts(texts)]
    if tokenizer is None:
        raise ValueError("no tokenizer: piiner needs its model's fast tokenizer, e.g. AutoTokenizer.from_pretrained(the "
                         "model's folder or Hub id), passed as tokenizer=")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"{type(tokenizer).__name__} is a slow tokenizer: piiner needs a fast tokenizer (token offsets into the "
            "text). Load it with AutoTokenizer.from_pretrained(..., use_fast=True)."
        )
    if return_tensors not in ("pt", None):
        raise ValueError(f"return_tensors must be 'pt' or None, got {return_tensors!r}")
    if max_length is None:
        max_length = default_max_length(tokenizer, config)
    positions = getattr(getattr(config, "encoder_config", None), "max_position_embeddings", None)
    if positions and max_length > positions:
        raise ValueError(f"max_length={max_length} is longer than the encoder's {positions} positions; use at most "
                         f"{positions} (longer texts are cut into overlapping windows anyway)")
    room = max_length - tokenizer.num_special_tokens_to_add(pair=False)
    if room < 1:
        raise ValueError(f"max_length={max_length} leaves no room for text tokens after the special tokens")
    if stride is None:
        stride = min(max_length // 4, room - 1)
    if not 0 <= stride < room:
        raise ValueError(
            f"stride={stride} must be >= 0 and < {room} (max_length={max_length} minus the special tokens), "
            "or consecutive windows would not advance"
        )
    marker = getattr(config, "line_break_marker", None)
    pieces = [(i, start, end) for i, text in enumerate(texts)
              for start, end in (paragraphs(text) if split_paragraphs else [(0, len(text))])]
    # Lone surrogates (which no UTF-8 tokenizer accepts) as U+FFFD and line breaks as the config's marker, one code
    # point for one: offsets stay those of the original text, which the char ids and the entities are read from (a
    # marker's token reads "\n" there, which has no characters: no char ids, no CRF position).
    inputs = [_with_markers(_LONE_SURROGATE.sub("\ufffd", texts[i][start:end]), marker) for i, start, end in pieces]
    encoding = tokenizer(
        inputs,
        truncation=True,
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="longest" if return_tensors else False,
    )
    _check_windows_cover(tokenizer, inputs, encoding, max_length)
    if len(pieces) > len(texts):  # windows of paragraphs -> windows of their texts, offsets into the whole text
        windows = encoding["overflow_to_sample_mapping"]
        encoding["offset_mapping"] = [_shifted(offsets, pieces[p][1])
                                      for p, offsets in zip(windows, encoding["offset_mapping"])]
        encoding["overflow_to_sample_mapping"] = [pieces[p][0] for p in windows]
    if return_tensors == "pt":
        # The padded lists straight to tensors: the tokenizer's own conversion walks every nested value first.
        for key, value in encoding.items():
            encoding[key] = torch.tensor(value, dtype=torch.long)
    words = [_WordIndex(text, config.max_word_chars, config.char_vocab_size) for text in texts]
    windows = encoding["overflow_to_sample_mapping"]
    if return_tensors == "pt":
        # The windows of one text are consecutive: look up all their tokens at once.
        offsets, seq_len, per_text, first = encoding["offset_mapping"].numpy(), encoding["input_ids"].shape[1], [], 0
        for sample, group in itertools.groupby(windows.tolist()):
            count = len(list(group))
            text_offsets = offsets[first : first + count].reshape(-1, 2)
            per_text.append(words[sample].char_array(text_offsets).reshape(count, seq_len, -1))
            first += count
        width = max(t.shape[-1] for t in per_text)
        char_ids = per_text[0] if len(per_text) == 1 else np.concatenate(
            [np.pad(t, ((0, 0), (0, 0), (0, width - t.shape[-1]))) for t in per_text])
        widest_kernel = max(getattr(config, "char_kernel_sizes", None) or [1])
        char_ids = torch.from_numpy(trim_char_ids(char_ids, min_chars=widest_kernel))
    else:  # the same table lookup as for tensors, as lists (training features): one way to build char ids
        char_ids = [
            [row[: int((row != 0).sum())].tolist() for row in words[i].char_array(offsets)]
            for i, offsets in zip(windows, encoding["offset_mapping"])
        ]
    encoding["char_ids"] = char_ids
    return encoding


__all__ = ["WindowCoverageError", "check_tokenizer_windows", "length_order", "encode_char", "token_char_ids",
           "pad_char_ids", "trim_char_ids", "default_max_length", "paragraphs", "encode_texts"]
