"""Gold data, predictions and label maps for evaluation.

Gold comes from a ``datasets`` folder written by ``save_to_disk`` (a DatasetDict, one split chosen, or a
Dataset), a Hub dataset id, or a JSONL file of ``{"id"?, "text", "spans": [{"start", "end", "label"}]}``.
Predictions made elsewhere come as JSONL in the same format, matched to gold by ``id`` when every prediction
line has one, else line by line against the rows of the chosen split (before ``--source`` or ``--limit``).

Spans whose type is not a piiner type after the label map are dropped and counted by reason, never silently.
"""

import hashlib
import json
import os
from collections import Counter

from piiner.data_prep.records import ANNOTATION_FIELDS, annotation_problem
from piiner.data_prep.sources.conll import NER_LABELLED_TYPES
from piiner.options import comma_pairs, load_json_object
from piiner.hub.pii_schema import TIER_OF

# Label-map targets that mean "not PII for us": the span is dropped (and counted).
DROP_TARGETS = ("", "O", "NONE")

# The two fixed halves of a corpus's documents (`--half`): recipe changes are judged on the first, and the figures
# quoted for a recipe are taken on the second, which no decision has looked at.
HALVES = ("development", "report")


def parse_label_map(spec):
    """``A=B,C=D`` or a JSON file ``{"A": "B"}`` -> dict. A target of ``O`` (or empty) drops that type."""
    if not spec:
        return {}
    if os.path.isfile(spec):
        mapping = load_json_object(spec, "label map")
        if not isinstance(mapping, dict):
            raise ValueError(f"label map file {spec} must hold a JSON object {{source_type: piiner_type}}")
    elif spec.endswith(".json"):
        raise FileNotFoundError(f"label map file not found: {spec}")
    else:
        mapping = comma_pairs(spec, "label map", "SOURCE=TARGET", allow_empty=True)
    bad = {k: v for k, v in mapping.items() if not isinstance(v, str) or (v not in TIER_OF and v not in DROP_TARGETS)}
    if bad:
        raise ValueError(f"label map targets must be piiner types (or O to drop): {bad}")
    return {k: (None if v in DROP_TARGETS else v) for k, v in mapping.items()}


def read_jsonl(path):
    rows = []
    with open(path, encoding="utf-8-sig") as f:  # -sig: a byte order mark before the first line is not JSON
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: each line must be a JSON object")
            row.setdefault("_where", f"{path}:{lineno}")
            rows.append(row)
    return rows


def _load_dataset_rows(data, split):
    import datasets

    if os.path.isdir(data):
        loaded = datasets.load_from_disk(data)
    else:
        try:
            loaded = datasets.load_dataset(data)
        except Exception as err:  # noqa: BLE001 - re-raised with the path named
            raise FileNotFoundError(
                f"{data} is neither a local JSONL file or dataset folder nor a loadable Hub dataset ({err})"
            ) from err
    # Several splits joined by commas are read one after the other (a source no model trained on, scored whole).
    names = split.split(",")
    if isinstance(loaded, datasets.DatasetDict):
        unknown = [name for name in names if name not in loaded]
        if unknown:
            raise ValueError(f"{data} has no split {', '.join(map(repr, unknown))}; it has {sorted(loaded)}")
        parts = [(name, loaded[name]) for name in names]
    else:
        parts = [(split, loaded)]
    rows = []
    for name, part in parts:
        missing = {"text", "spans"} - set(part.column_names)
        if missing:
            raise ValueError(f"{data} lacks the columns {sorted(missing)} (has {part.column_names})")
        rows += [dict(row, _where=f"{data}[{name}] row {i}") for i, row in enumerate(part)]
    return rows


def load_gold(data, split="test", source=None, limit=None):
    """Rows ``{"id", "text", "spans", "source"?, "_row", "_where"}`` of the gold data, filtered and limited.

    ``_row`` is the row's index in the split before filtering, which line-aligned predictions refer to.
    """
    return select_rows(load_split(data, split), source, limit)


def load_split(data, split="test"):
    """Every row of the gold data's split, each checked and numbered (``_row``); see `load_gold`."""
    if os.path.isfile(data):
        rows = read_jsonl(data)
    elif data.endswith(".jsonl"):
        raise FileNotFoundError(f"gold data not found: {data}")
    else:
        rows = _load_dataset_rows(data, split)
    for i, row in enumerate(rows):
        if not isinstance(row.get("text"), str):
            raise ValueError(f"{row['_where']}: needs a string 'text'")
        if row.get("spans") is None and row.get("labelled_types") != []:
            raise ValueError(f"{row['_where']}: no 'spans' field: a gold row lists its spans ([] for a text without "
                             "PII), or says it labelled nothing (\"labelled_types\": [])")
        if not isinstance(row.get("spans") if row.get("spans") is not None else [], list):
            raise ValueError(f"{row['_where']}: 'spans' must be a list")
        problem = annotation_problem(row["text"], row, types=None)
        if problem:
            given = ", ".join(f"{f}={row[f]!r}" for f in ANNOTATION_FIELDS if row.get(f) is not None)
            raise ValueError(f"{row['_where']}: {problem} ({given})")
        row["_row"] = i
        row.setdefault("id", str(i))
    return rows


def select_rows(rows, source=None, limit=None, half=None):
    """The rows of one source (``--source``), of one half of its documents (`document_half`), the first ``limit``
    of them."""
    if source is not None:
        sources = Counter(r.get("source") for r in rows)
        if set(sources) == {None}:
            raise ValueError(f"--source {source!r} given but the data has no 'source' column")
        rows = [r for r in rows if r.get("source") == source]
        if not rows:
            raise ValueError(f"no row has source {source!r}; sources present: {dict(sources)}")
    if half is not None:
        rows = document_half(rows, half)
    return rows[:limit] if limit is not None else rows


def document_of(row):
    """The document a row belongs to: its ``group`` (a tweet, an article, a filing), else the row alone."""
    return str(row.get("group") or row["id"])


def document_half(rows, half):
    """The rows of one of two fixed halves of their documents: the documents ordered by the SHA-256 of their key
    and dealt alternately, the first to ``development`` and the second to ``report`` (`HALVES`), so the halves
    differ by one document at most (4 and 4 of a corpus of 8 filings) and the same rows always give the same
    halves. Dealt among the documents given: a test split's halves are not those of the whole corpus."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, not {half!r}")
    order = sorted({document_of(r) for r in rows}, key=lambda d: hashlib.sha256(d.encode("utf-8")).hexdigest())
    kept = set(order[HALVES.index(half)::2])
    return [r for r in rows if document_of(r) in kept]


def check_and_map_spans(row, label_map, dropped, who):
    """Validated ``(start, end, type)`` spans of one row, renamed by ``label_map``.

    Offsets outside the text raise (the data is wrong, scoring it would mislead); spans whose type maps to
    nothing or to no piiner type, and repeated gold spans, are dropped and counted in ``dropped["who: reason"]``.
    """
    text, out = row["text"], []
    for j, span in enumerate(row.get("spans") or []):
        if not isinstance(span, dict):
            raise ValueError(f"{row['_where']}: span {j} must be an object {{start, end, label}}, got {span!r}")
        start, end = span.get("start"), span.get("end")
        span_type = next((span[k] for k in ("label", "type", "entity_group") if span.get(k) is not None), None)
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            raise ValueError(f"{row['_where']}: span {j} {span!r} is not 0 <= start < end <= len(text)={len(text)}")
        if span_type is None:
            raise ValueError(f"{row['_where']}: span {j} {span!r} has no label")
        if span_type in label_map:
            span_type = label_map[span_type]
            if span_type is None:
                dropped[f"{who}: mapped to O ({span.get('label') or span.get('type')})"] += 1
                continue
        if span_type not in TIER_OF:
            dropped[f"{who}: not a piiner type ({span_type})"] += 1
            continue
        if who == "gold" and (start, end, span_type) in out:
            # A gold span listed twice would demand two identical predictions; predictions listed twice stay,
            # and score as false positives.
            dropped["gold: duplicate span"] += 1
            continue
        out.append((start, end, span_type))
    return out


def prediction_spans(row):
    """The predicted spans of one prediction row: ``entities`` (what the pipeline and ``piiner-redact
    --detect-only`` write) or ``spans`` (``--save-predictions``). A row with ``entities`` is scored on them even when
    it also carries gold ``spans`` copied through from the input; a row with neither (a failed record, say) is an
    error, never scored as "found nothing"."""
    for key in ("entities", "spans"):
        if isinstance(row.get(key), list):
            return row[key]
    reason = f" (it reports an error: {row['error']!r})" if "error" in row else ""
    raise ValueError(f"{row['_where']}: a prediction row needs an 'entities' or 'spans' list{reason}")


def align_predictions(gold_rows, pred_rows, pred_path, known_ids=None):
    """The prediction row for each gold row: by ``id`` when every prediction has one, else by line. A prediction
    that matches no row of the gold split is an error, never passed over: an id not in ``known_ids`` (every id of
    the split, before any --source or --limit; the gold rows' ids when not given), or a line past the split's last
    row. Predictions made on other data must not be scored."""
    if pred_rows and all("id" in p for p in pred_rows):
        by_id = {}
        for p in pred_rows:
            if str(p["id"]) in by_id:
                raise ValueError(f"{p['_where']}: duplicate prediction id {p['id']!r}")
            by_id[str(p["id"])] = p
        missing = [g["id"] for g in gold_rows if str(g["id"]) not in by_id]
        if missing:
            raise ValueError(f"{pred_path} has no prediction for {len(missing)} gold ids, e.g. {missing[:5]}")
        known = {str(k) for k in (known_ids if known_ids is not None else [g["id"] for g in gold_rows])}
        unknown = [i for i in by_id if i not in known]
        if unknown:
            raise ValueError(f"{pred_path} has predictions for {len(unknown)} ids that are not in the gold data, "
                             f"e.g. {unknown[:5]}: were they made on another file?")
        aligned = [by_id[str(g["id"])] for g in gold_rows]
    else:
        n_split = max((g["_row"] for g in gold_rows), default=-1) + 1
        if len(pred_rows) < n_split:
            raise ValueError(
                f"{pred_path} has {len(pred_rows)} lines without ids but the gold split needs {n_split}: "
                "give every prediction the 'id' of its gold row, or one line per gold row in order"
            )
        split_size = len(known_ids) if known_ids is not None else n_split
        if len(pred_rows) > split_size:
            raise ValueError(f"{pred_path} has {len(pred_rows)} lines without ids but the gold split has {split_size} "
                             f"rows: {len(pred_rows) - split_size} lines match no gold row (made on another file?)")
        aligned = [pred_rows[g["_row"]] for g in gold_rows]
    for g, p in zip(gold_rows, aligned):
        if "text" in p and p["text"] != g["text"]:
            raise ValueError(f"{p['_where']}: its text differs from the gold text of {g['_where']}")
        p.setdefault("text", g["text"])
    return aligned


__all__ = ["HALVES", "parse_label_map", "load_gold", "load_split", "select_rows", "document_of", "document_half",
           "check_and_map_spans", "align_predictions", "prediction_spans", "read_jsonl"]


# The types each human-labelled corpus labels: only these are scored on it (the rest of its text is unlabelled).
SCORED_TYPES = {name: NER_LABELLED_TYPES for name in ("wnut17", "btc", "wikigold", "sec_filings", "uner_ewt")}
SCORED_TYPES["gum"] = NER_LABELLED_TYPES + ("DATE",)
