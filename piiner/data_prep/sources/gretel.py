"""The two Gretel sets.

- gretelai/synthetic_pii_finance_multilingual: ``generated_text`` + ``pii_spans``, a JSON STRING of
  [{label, start, end}] with no value; ``language`` holds full names ("English").
- gretelai/gretel-pii-masking-en-v1: ``text`` + ``entities``, a Python-repr STRING of
  [{'entity': surface, 'types': [label, ...]}] with NO offsets. Every word-bounded occurrence of each entity
  is labeled (the reference labeled only the first); an entity not found in its text is counted.
"""

import re

from .labels import SNAKE, normalize_snake
from .loading import english_rows, map_span, offset_spans, parse_list, row_id

HUB_IDS = {
    "gretel_finance": "gretelai/synthetic_pii_finance_multilingual",
    "gretel_masking": "gretelai/gretel-pii-masking-en-v1",
}
ID_KEYS = ("uid", "id", "document_id")


def finance_records(source, rows_by_split, audit):
    for split, i, row in english_rows(source, rows_by_split, audit):
        spans = offset_spans(source, row.get("pii_spans"), SNAKE, normalize_snake, audit)
        if spans is None:
            continue
        uid = row_id(row, split, i, ID_KEYS)
        yield {"id": f"{source}-{uid}", "source": source, "text": row.get("generated_text"), "spans": spans,
               "group": f"{source}/{split}/{uid}", "source_split": split}


def find_occurrences(text, value):
    """Start offsets of every occurrence of ``value`` in ``text`` not glued to a letter or digit on either side."""
    if not value:
        return []
    pattern = re.compile(r"(?<![^\W_])" + re.escape(value) + r"(?![^\W_])")
    return [m.start() for m in pattern.finditer(text)]


def masking_records(source, rows_by_split, audit):
    for split, i, row in english_rows(source, rows_by_split, audit):
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
        uid = row_id(row, split, i, ID_KEYS)
        yield {"id": f"{source}-{uid}", "source": source, "text": text, "spans": spans,
               "group": f"{source}/{split}/{uid}", "source_split": split}
