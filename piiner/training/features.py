"""Unified records -> model windows with BIO labels and char ids.

Labels come from the records' character spans and the tokens' character offsets, so they never depend on how a
tokenizer splits words: every real token gets a label; the first token of a window that touches a span gets B-,
the following ones I-; tokens touching no span get O; special tokens get -100. A text longer than one window
becomes overlapping windows (``encoding_piiner.encode_texts``), never a cut text. A window that opens inside an
entity labels its first entity token B-, because the BIO CRF forbids a sequence opening with I-.
"""

import bisect
import hashlib
import inspect
import itertools
import json
import random

import datasets
import tokenizers
from datasets.fingerprint import Hasher

from piiner.hub import encoding_piiner
from piiner.data_prep.records import ANNOTATION_FIELDS, annotation_problem, span_problem
from piiner.hub.pii_schema import TIER_OF, label_ids_of_types, split_label
from piiner.hub.encoding_piiner import default_max_length, encode_texts

IGNORE_INDEX = -100


def align_labels(offsets, spans, label2id):
    """BIO label ids of one window's tokens from character spans.

    Args:
        offsets: `(start, end)` per token into the original text; `start == end` marks a special token.
        spans: the record's spans, dicts with start, end, label, sorted and non-overlapping.
        label2id: the model's label map ("B-EMAIL" -> id).

    Returns:
        list of label ids, `IGNORE_INDEX` on special tokens.
    """
    starts = [span["start"] for span in spans]
    labels = []
    previous = None  # index of the span the previous real token belonged to
    for start, end in offsets:
        if end <= start:
            labels.append(IGNORE_INDEX)
            continue
        # The last span starting before this token ends is the only candidate: spans do not overlap, and when a
        # token straddles the end of one span and the start of the next, the one starting inside it wins.
        j = bisect.bisect_left(starts, end) - 1
        if j < 0 or spans[j]["end"] <= start:
            labels.append(label2id["O"])
            previous = None
            continue
        prefix = "I" if previous == j else "B"
        labels.append(_label_id(label2id, f"{prefix}-{spans[j]['label']}"))
        previous = j
    return labels


def _label_id(label2id, label):
    try:
        return label2id[label]
    except KeyError:
        raise ValueError(f"span label {label.split('-', 1)[1]!r} is not a type of the model's label map") from None


def unannotated_label_ids(labelled_types, label2id):
    """Ids of the B-/I- labels of every type a record's annotation did not cover (`labelled_types`; None: all
    covered, so none): where such a record says "O", the loss may read any of them (see the model's
    `unannotated_labels`)."""
    if labelled_types is None:
        return []
    every_type = {split_label(label)[1] for label in label2id} - {None}
    return label_ids_of_types(label2id, every_type - set(labelled_types))


def stretch_mask(offsets, stretches):
    """1 on each real token of a window that overlaps one of `stretches` (character ranges), else 0: the model's
    `not_pii_mask` from a record's `not_pii_spans`, its `unjudged_mask` from its `unjudged_spans`."""
    return [int(end > start and any(s["start"] < end and start < s["end"] for s in stretches))
            for start, end in offsets]


def unreachable_spans(offsets_per_window, spans):
    """Spans whose start or end falls inside a token: strict span matching can never score them."""
    starts, ends = set(), set()
    for offsets in offsets_per_window:
        for start, end in offsets:
            if end > start:
                starts.add(start)
                ends.add(end)
    return sum(1 for span in spans if span["start"] not in starts or span["end"] not in ends)


class RecordCheck:
    """Records of one split checked before they become windows: kept ones get their spans sorted; a record that
    cannot be labelled is rejected by id and counted by reason (`span_problem`, `annotation_problem`), never
    half-labelled."""

    def __init__(self, name):
        self.name, self.rejected = name, {}

    def __call__(self, records, label_types):
        missing = {"id", "text", "spans"} - set(records.column_names)
        if missing:
            raise ValueError(f"the {self.name} records have no {sorted(missing)} column(s) "
                             f"(columns: {records.column_names})")
        keep, unsorted = [], False
        fields = [f for f in ANNOTATION_FIELDS if f in records.column_names]
        annotations = zip(*(records[f] for f in fields)) if fields else itertools.repeat(())
        for i, (record_id, text, spans, annotation) in enumerate(zip(records["id"], records["text"], records["spans"],
                                                                     annotations)):
            annotation = dict(zip(fields, annotation))
            # No spans field is no annotation, not a record free of PII: kept only where it says it labelled nothing.
            problem = "no_spans_field" if spans is None and annotation.get("labelled_types") != [] else None
            spans = [] if spans is None else spans
            problem = problem or span_problem(text, spans, label_types) or annotation_problem(
                text, annotation, label_types)
            if problem:
                self.rejected.setdefault(problem, []).append(str(record_id))
                continue
            keep.append(i)
            unsorted = unsorted or any(b["start"] < a["start"] for a, b in zip(spans, spans[1:]))
        if len(keep) < len(records):
            records = records.select(keep)
        if unsorted:
            records = records.map(lambda row: {"spans": sorted(row["spans"] or [], key=lambda x: x["start"])},
                                  desc=f"sort {self.name} spans")
        return records

    def describe(self, total):
        if not self.rejected:
            return f"{self.name}: all {total} records kept"
        reasons = "; ".join(f"{reason} {len(ids)} (e.g. {', '.join(ids[:3])})"
                            for reason, ids in sorted(self.rejected.items()))
        return f"{self.name}: {sum(map(len, self.rejected.values()))} of {total} records rejected: {reasons}"


def _encode_batch(batch, indices, tokenizer, config, max_length, stride, split_paragraphs):
    # Training windows each record whole, blank lines and all (paragraphs apart cost out of source); a scored set is
    # windowed as the pipeline windows a text, paragraph by paragraph.
    encoding = encode_texts(tokenizer, batch["text"], config, max_length=max_length, stride=stride, return_tensors=None,
                            split_paragraphs=split_paragraphs)
    samples = encoding["overflow_to_sample_mapping"]
    features = {name: encoding[name] for name in ("input_ids", "attention_mask", "token_type_ids") if name in encoding}
    features["char_ids"] = encoding["char_ids"]
    features["offset_mapping"] = [[list(pair) for pair in offsets] for offsets in encoding["offset_mapping"]]
    features["example_index"] = [indices[s] for s in samples]
    features["labels"] = []
    features["unannotated_labels"] = []
    features["not_pii_mask"] = []
    features["unjudged_mask"] = []
    features["unreachable_spans"] = []
    first_window = {}
    labelled_types = batch.get("labelled_types") or [None] * len(batch["text"])
    not_pii = batch.get("not_pii_spans") or [None] * len(batch["text"])
    unjudged = batch.get("unjudged_spans") or [None] * len(batch["text"])
    for w, (sample, offsets) in enumerate(zip(samples, encoding["offset_mapping"])):
        spans = batch["spans"][sample] or []
        try:
            labels = align_labels(offsets, spans, config.label2id)
        except ValueError as err:
            raise ValueError(f"record {batch['id'][sample]!r}: {err}") from None
        # A token with no characters (a line-break marker) is outside the CRF chain: no label.
        features["labels"].append([label if any(chars) else IGNORE_INDEX
                                   for label, chars in zip(labels, encoding["char_ids"][w])])
        features["unannotated_labels"].append(unannotated_label_ids(labelled_types[sample], config.label2id))
        features["not_pii_mask"].append(stretch_mask(offsets, not_pii[sample] or []))
        features["unjudged_mask"].append(stretch_mask(offsets, unjudged[sample] or []))
        first_window.setdefault(sample, w)
    for w, sample in enumerate(samples):
        # Counted once per record, on its first window, so the column sums to a count of spans.
        if first_window[sample] == w:
            windows = [encoding["offset_mapping"][k] for k, s in enumerate(samples) if s == sample]
            features["unreachable_spans"].append(unreachable_spans(windows, batch["spans"][sample] or []))
        else:
            features["unreachable_spans"].append(0)
    return features


def _code_digest():
    # Part of the cache fingerprint: a cached feature file must not outlive a change to the code that made it.
    source = inspect.getsource(encoding_piiner) + inspect.getsource(_encode_batch) + inspect.getsource(align_labels)
    source += inspect.getsource(stretch_mask)
    return hashlib.sha256(source.encode()).hexdigest()


def _tokenizer_digest(tokenizer):
    # What the windows depend on: the tokenizer's definition, without the truncation and padding settings each call
    # leaves on it (a used tokenizer would miss the cache a fresh one wrote), and the library's version (0.23.1 and
    # 0.23.2 cut overflow short, huggingface/tokenizers#2091).
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    state.pop("truncation", None)
    state.pop("padding", None)
    return hashlib.sha256(json.dumps(state).encode()).hexdigest(), tokenizers.__version__


def build_features(records, tokenizer, config, max_length, stride, desc="tokenize", split_paragraphs=False):
    """Tokenize one split of unified records into windows with labels and char ids.

    Args:
        records (`datasets.Dataset`): columns id, text, spans, optionally labelled_types, not_pii_spans and
            unjudged_spans (any others are dropped).
        tokenizer: a fast tokenizer (offsets are required).
        config: the model config (label2id, char vocabulary, max_word_chars).
        max_length, stride: window size and overlap in tokens (None: the pipeline's defaults).
        split_paragraphs: window each paragraph apart, as the pipeline does (for the sets a run scores).

    Returns:
        `datasets.Dataset` with one row per window: the model inputs (`labels`, `unannotated_labels`,
        `not_pii_mask`, `unjudged_mask` among them), `offset_mapping` (into the original text), `example_index`
        (row of `records`) and `unreachable_spans` (see `unreachable_spans`).
    """
    for column in ("id", "text", "spans"):
        if column not in records.column_names:
            raise ValueError(f"the records have no {column!r} column (columns: {records.column_names})")
    # The pipeline's default, resolved here: it depends on the encoder's positions, which the cache key does not hold.
    max_length = default_max_length(tokenizer, config) if max_length is None else max_length
    fingerprint = Hasher.hash(
        (
            getattr(records, "_fingerprint", None),
            _tokenizer_digest(tokenizer),
            sorted(config.label2id.items()),
            config.char_vocab_size,
            config.max_word_chars,
            max_length,
            stride,
            split_paragraphs,
            _code_digest(),
        )
    )
    ids = datasets.List(datasets.Value("int64"))
    columns = {name: ids for name in ("input_ids", "attention_mask", "labels", "unannotated_labels", "not_pii_mask",
                                         "unjudged_mask")}
    if "token_type_ids" in tokenizer.model_input_names:
        columns["token_type_ids"] = ids
    columns.update(char_ids=datasets.List(ids), offset_mapping=datasets.List(ids),
                   example_index=datasets.Value("int64"), unreachable_spans=datasets.Value("int64"))
    # The schema is given, not inferred from the first batch, where a column can be all empty lists.
    return records.map(
        _encode_batch,
        batched=True,
        with_indices=True,
        remove_columns=records.column_names,
        fn_kwargs=dict(tokenizer=tokenizer, config=config, max_length=max_length, stride=stride,
                       split_paragraphs=split_paragraphs),
        features=datasets.Features(columns),
        new_fingerprint=fingerprint,
        desc=desc,
    )


def rare_tier_rows(records, tiers):
    """Indices of the records holding at least one span of a type in `tiers`."""
    return [i for i, spans in enumerate(records["spans"]) if any(TIER_OF.get(s["label"]) in tiers for s in spans or ())]


def oversample(features, records, tiers, factor, source_repeats=None):
    """Repeat the windows of a record: `factor` times when it holds a span of `tiers`, times its source's entry in
    `source_repeats` ({source: n}; the two multiply).

    Returns:
        (features, number of records repeated). The repeats are spread by the Trainer's shuffling.
    """
    repeats = [1] * len(records)
    if factor > 1:
        for i in rare_tier_rows(records, tiers):
            repeats[i] *= factor
    if source_repeats:
        for i, source in enumerate(records["source"]):
            repeats[i] *= source_repeats.get(source, 1)
    n_repeated = sum(r > 1 for r in repeats)
    if not n_repeated:
        return features, 0
    indices = []
    for i, example in enumerate(features["example_index"]):
        indices.extend([i] * repeats[example])
    return features.select(indices), n_repeated


# What separates the texts of a joined training record: a blank line or a line break, one drawn per record.
JOINERS = ("\n\n", "\n")
# The columns a joined record keeps; any other (a split's `group`) says something of one text, not of the join.
JOINED_COLUMNS = ("id", "text", "spans", "source", "labelled_types", "not_pii_spans", "unjudged_spans")


def join_records(records, max_texts, seed):
    """Training records joined into longer texts: those of one source and one annotation (the same
    `labelled_types`, so the join's annotation is still true of every part) are shuffled with `seed` and taken 1 to
    `max_texts` at a time, uniformly, joined by a blank line or a line break. A user's document is many short texts
    one after another; a model that learned each alone reads the next text's first words as part of the last's.

    Spans and stretches move with their text; the ids are joined by "+"; columns other than `JOINED_COLUMNS` are
    dropped. Every record is in exactly one joined record. `max_texts` 1 returns `records` as they are. Training
    windows a joined record whole, whichever the joiner (`build_features`); inference encodes paragraphs apart.
    """
    if max_texts < 1:
        raise ValueError(f"join_texts must be >= 1, got {max_texts}")
    if max_texts == 1 or not len(records):
        return records
    kept = records.select_columns([c for c in JOINED_COLUMNS if c in records.column_names])
    columns, rows = kept.column_names, kept.to_dict()
    n = len(records)
    sources = rows.get("source") or [None] * n
    labelled = rows.get("labelled_types") or [None] * n
    kinds = {}
    for i, (source, types) in enumerate(zip(sources, labelled)):
        kinds.setdefault((source, None if types is None else tuple(sorted(types))), []).append(i)
    rng = random.Random(seed)
    joined = {c: [] for c in columns}
    for key in sorted(kinds, key=repr):
        order = kinds[key]
        rng.shuffle(order)
        k = 0
        while k < len(order):
            parts = order[k:k + rng.randint(1, max_texts)]
            k += len(parts)
            _join(rows, parts, rng.choice(JOINERS), joined)
    return datasets.Dataset.from_dict(joined, features=kept.features)


def _join(rows, parts, joiner, out):
    """Append the record joining rows `parts` (indices) by `joiner` to the column lists of `out`."""
    texts, moved = [], {"spans": [], "not_pii_spans": [], "unjudged_spans": []}
    offset = 0
    for i in parts:
        for name, items in moved.items():
            if name in rows:
                items.extend({**item, "start": item["start"] + offset, "end": item["end"] + offset}
                             for item in rows[name][i] or ())
        texts.append(rows["text"][i])
        offset += len(rows["text"][i]) + len(joiner)
    first = parts[0]
    for name in out:
        if name == "id":
            out[name].append("+".join(str(rows["id"][i]) for i in parts))
        elif name == "text":
            out[name].append(joiner.join(texts))
        elif name in moved:
            out[name].append(moved[name])
        else:  # source and labelled_types: the same for every part
            out[name].append(rows[name][first])
