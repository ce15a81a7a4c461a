"""ai4privacy/pii-masking-400k, -300k and open-pii-masking-500k: ``source_text`` + ``privacy_mask`` spans.

``privacy_mask`` is a list of {value, start, end, label} (a JSON or repr string in some exports). The three
sets differ in label names (GIVENNAME1 vs GIVENNAME, ...) and in how ``language`` is written ("en" or "English");
one adapter reads all three.
"""

from .labels import AI4PRIVACY, normalize_ai4privacy
from .loading import is_english, map_span, parse_list

HUB_IDS = {
    "ai4privacy": "ai4privacy/pii-masking-400k",
    "ai4privacy_300k": "ai4privacy/pii-masking-300k",
    "ai4privacy_500k": "ai4privacy/open-pii-masking-500k-ai4privacy",
}


def records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            if not is_english(row):
                audit.note(source, "skipped_non_english_row")
                continue
            try:
                raw_spans = parse_list(row.get("privacy_mask"))
            except ValueError:
                audit.reject_record(source, "unparseable_spans")
                continue
            spans = []
            for span in raw_spans:
                label = map_span(source, span.get("label"), AI4PRIVACY, audit, normalize_ai4privacy)
                if label is not None:
                    spans.append({"start": span.get("start"), "end": span.get("end"), "label": label,
                                  "value": span.get("value")})
            uid = row.get("uid", row.get("id", f"{split}-{i}"))
            yield {"id": f"{source}-{uid}", "source": source, "text": row.get("source_text"), "spans": spans,
                   "group": f"{source}/{uid}", "source_split": row.get("split") or row.get("set") or split}
