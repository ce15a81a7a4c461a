"""nvidia/Nemotron-PII: ``text`` + ``spans``, a Python-repr STRING of [{start, end, text, label}] (single quotes,
so ``ast.literal_eval``, not json). English only (locale "us"/"intl" are both English)."""

from .labels import SNAKE, normalize_snake
from .loading import english_rows, offset_spans, row_id

HUB_IDS = {"nemotron": "nvidia/Nemotron-PII"}


def records(source, rows_by_split, audit):
    for split, i, row in english_rows(source, rows_by_split, audit):
        spans = offset_spans(source, row.get("spans"), SNAKE, normalize_snake, audit, "text")
        if spans is None:
            continue
        uid = row_id(row, split, i)
        yield {"id": f"{source}-{uid}", "source": source, "text": row.get("text"), "spans": spans,
               "group": f"{source}/{split}/{uid}", "source_split": split}
