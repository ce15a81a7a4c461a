"""The two Gretel sets.

- gretelai/synthetic_pii_finance_multilingual: ``generated_text`` + ``pii_spans``, a JSON STRING of
  [{label, start, end}] with no value; ``language`` holds full names ("English").
- gretelai/gretel-pii-masking-en-v1: ``text`` + ``entities``, a Python-repr STRING of
  [{'entity': surface, 'types': [label, ...]}] with NO offsets. Every word-bounded occurrence of each entity
  is labeled (the reference labeled only the first); an entity not found in its text is counted.
"""

import re

from .labels import SNAKE, normalize_snake
from .loading import is_english, map_span, parse_list

HUB_IDS = {
    "gretel_finance": "gretelai/synthetic_pii_finance_multilingual",
    "gretel_masking": "gretelai/gretel-pii-masking-en-v1",
}


def _row_id(row, split, i):
    for key in ("uid", "id", "document_id"):
        if row.get(key) not in (None, ""):
            return row[key]
    return f"{split}-{i}"


def finance_records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            if not is_english(row):
                audit.note(source, "skipped_non_english_row")
                continue
            try:
                raw_spans = parse_list(row.get("pii_spans"))
            except ValueError:
                audit.reject_record(source, "unparseable_spans")
                continue
            spans = []
            for span in raw_spans:
                label = map_span(source, span.get("label"), SNAKE, audit, normalize_snake)
                if label is not None:
                    spans.append({"start": span.get("start"), "end": span.get("end"), "label": label})
            uid = _row_id(row, split, i)
            yield {"id": f"{source}-{uid}", "source": source, "text": row.get("generated_text"), "spans": spans,
                   "group": f"{source}/{uid}", "source_split": split}


def find_occurrences(text, value):
    """Start offsets of every occurrence of ``value`` in ``text`` not glued to a letter or digit on either side."""
    if not value:
        return []
    pattern = re.compile(r"(?<![^\W_])" + re.escape(value) + r"(?![^\W_])")
    return [m.start() for m in pattern.finditer(text)]


def masking_records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            if not is_english(row):
                audit.note(source, "skipped_non_english_row")
                continue
            text = row.get("text")
            try:
                entities = parse_list(row.get("entities"))
            except ValueError:
                audit.reject_record(source, "unparseable_spans")
                continue
            spans = []
            for entity in entities:
                value = entity.get("entity")
                types = entity.get("types") or []
                if isinstance(types, str):
                    types = [types]
                labels = [map_span(source, t, SNAKE, audit, normalize_snake) for t in types]
                labels = [label for label in labels if label is not None]
                if not labels:
                    continue
                if len(set(labels)) > 1:
                    audit.note(source, "entity_with_several_types_first_kept")
                value = value.strip() if isinstance(value, str) else value
                starts = find_occurrences(text, value) if isinstance(text, str) and isinstance(value, str) else []
                if not starts:
                    audit.reject(source, "entity_not_found_in_text")
                    continue
                if len(starts) > 1:
                    audit.note(source, "extra_occurrences_labeled", len(starts) - 1)
                spans += [{"start": s, "end": s + len(value), "label": labels[0]} for s in starts]
            uid = _row_id(row, split, i)
            yield {"id": f"{source}-{uid}", "source": source, "text": text, "spans": spans,
                   "group": f"{source}/{uid}", "source_split": split}
