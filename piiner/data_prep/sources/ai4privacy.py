"""ai4privacy/pii-masking-400k, -300k and open-pii-masking-500k: ``source_text`` + ``privacy_mask`` spans.

``privacy_mask`` is a list of {value, start, end, label} (a JSON or repr string in some exports). The three
sets differ in label names (GIVENNAME1 vs GIVENNAME, ...) and in how ``language`` is written ("en" or "English");
one adapter reads all three.
"""

from .labels import AI4PRIVACY, normalize_ai4privacy
from .loading import english_rows, offset_spans, row_id

HUB_IDS = {
    "ai4privacy": "ai4privacy/pii-masking-400k",
    "ai4privacy_300k": "ai4privacy/pii-masking-300k",
    "ai4privacy_500k": "ai4privacy/open-pii-masking-500k-ai4privacy",
}


def records(source, rows_by_split, audit):
    for split, i, row in english_rows(source, rows_by_split, audit):
        spans = offset_spans(source, row.get("privacy_mask"), AI4PRIVACY, normalize_ai4privacy, audit, "value")
        if spans is None:
            continue
        uid = row_id(row, split, i)
        split = row.get("split") or row.get("set") or split  # the row's own column wins over the file name
        yield {"id": f"{source}-{uid}", "source": source, "text": row.get("source_text"), "spans": spans,
               "group": f"{source}/{split}/{uid}", "source_split": split}
