"""nvidia/Nemotron-PII: ``text`` + ``spans``, a Python-repr STRING of [{start, end, text, label}] (single quotes,
so ``ast.literal_eval``, not json). English only (locale "us"/"intl" are both English)."""

from .labels import SNAKE, normalize_snake
from .loading import is_english, map_span, parse_list

HUB_IDS = {"nemotron": "nvidia/Nemotron-PII"}


def records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            if not is_english(row):
                audit.note(source, "skipped_non_english_row")
                continue
            try:
                raw_spans = parse_list(row.get("spans"))
            except ValueError:
                audit.reject_record(source, "unparseable_spans")
                continue
            spans = []
            for span in raw_spans:
                label = map_span(source, span.get("label"), SNAKE, audit, normalize_snake)
                if label is not None:
                    spans.append({"start": span.get("start"), "end": span.get("end"), "label": label,
                                  "value": span.get("text")})
            uid = row.get("uid", f"{split}-{i}")
            yield {"id": f"{source}-{uid}", "source": source, "text": row.get("text"), "spans": spans,
                   "group": f"{source}/{uid}", "source_split": split}
