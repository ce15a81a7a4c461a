"""Exact and normalized-text deduplication across all sources and splits.

Normalized text = Unicode NFKC, case-folded, whitespace runs collapsed to one space, trimmed. Digits are kept:
synthetic texts that differ only in their numbers teach different values, and real corpora rarely repeat a
sentence with other numbers. Of each set of duplicates the copy in the most held-out split is kept (test, then
validation, then train), so a sentence seen in test never also sits in train. Every dropped record is counted.
"""

import unicodedata

_PRECEDENCE = {"test": 0, "validation": 1, "train": 2}


def normalize_text(text):
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def deduplicate(records, audit):
    """Return the records (unified, with ``split``) without duplicates; counts go to ``audit`` per source."""
    order = sorted(range(len(records)), key=lambda i: _PRECEDENCE[records[i]["split"]])
    exact, normalized = {}, {}
    keep = [False] * len(records)
    for i in order:
        record = records[i]
        text = record["text"]
        if text in exact:
            kept = records[exact[text]]
            where = "same_split" if kept["split"] == record["split"] else "across_splits"
            audit.note(record["source"], f"dropped_exact_duplicate_{where}")
            continue
        key = normalize_text(text)
        if key in normalized:
            kept = records[normalized[key]]
            where = "same_split" if kept["split"] == record["split"] else "across_splits"
            audit.note(record["source"], f"dropped_normalized_duplicate_{where}")
            continue
        exact[text] = i
        normalized[key] = i
        keep[i] = True
    return [r for r, k in zip(records, keep) if k]
