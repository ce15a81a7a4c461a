"""Deny lists drawn from a user's own labels: `piiner-data lists DATA --out lists.yaml`.

One institution's documents name the same wards, hospitals and staff again and again ("GH", "Quartermain",
"Dr. Murphy"); a model that missed them once misses them everywhere. Presidio's answer is a deny list. This writes
one from the labels: a string is listed for a type when the labels give it that type often enough, in enough
groups (patients, customers), and in nearly every place it occurs in the labelled texts, so the list holds what the
labellers always marked and not a word that is sometimes a name ("Harbor" in "Harbor Hospital" and in "harbor
seal" fails the last test). Only names (people, places, organizations) by default: dates and identifiers change
from one document to the next.

The file is for the user to read before use: it holds strings of their labelled documents, so it is written beside
them and never into a model. `piiner-evaluate --recognizers lists.yaml`, `piiner-redact --recognizers lists.yaml`,
`piiner-serve` and `piiner-corpus` read it, as `tagger(text, deny_list=...)` does.
"""

import json
import os
from collections import Counter, defaultdict

from piiner.data_prep.records import span_problem
from piiner.hub.recognizers_piiner import deny_list_recognizers

NAME_TYPES = ("PERSON", "LOCATION", "ORGANIZATION")


def read_records(path, split="train"):
    """The records of a JSONL file, or of `split`.jsonl in a dataset folder written by `piiner-data import`."""
    if os.path.isdir(path):
        path = os.path.join(path, f"{split}.jsonl")
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file (give a JSONL file or a folder from piiner-data import)")
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            problem = (span_problem(record.get("text"), record.get("spans"), types=None)
                       if isinstance(record, dict) else "not_an_object")
            if problem:
                raise ValueError(f"{path}:{number}: not a record with text and spans of start, end and label "
                                 f"({problem})")
            records.append(record)
    return records


def deny_lists(records, types=NAME_TYPES, min_count=2, min_groups=2, min_precision=0.9, min_length=2):
    """``({type: [string, ...]}, rows)``: each string the labels give type T at least `min_count` times, in at least
    `min_groups` groups, and in at least `min_precision` of its whole-word occurrences (any case) in the texts that
    label T. `rows` give, per listed string, ``(string, type, labelled, occurrences, groups)``. Twice in two groups
    is enough: a ward named in two patients' notes is the institution's, and the share of occurrences labelled
    keeps out common words."""
    labelled, groups = defaultdict(Counter), defaultdict(set)
    for record in records:
        for span in record["spans"]:
            string = record["text"][span["start"]:span["end"]].lower()
            if span["label"] in types and len(string.strip()) >= min_length:
                labelled[string][span["label"]] += 1
                groups[string, span["label"]].add(record.get("group", record.get("id")))
    lists, rows = defaultdict(list), []
    for string, counts in sorted(labelled.items()):
        type_, count = counts.most_common(1)[0]
        if count < min_count or len(groups[string, type_]) < min_groups:
            continue
        # Counted as the pipeline's deny list would match the entry: a whole word, any case.
        recognizer = deny_list_recognizers({type_: [string]})[0]
        occurrences = sum(sum(1 for _ in recognizer.matches(r["text"])) for r in records
                          if type_ in (r.get("labelled_types") or (type_,)))
        if count >= min_precision * occurrences:
            lists[type_].append(string)
            rows.append((string, type_, count, occurrences, len(groups[string, type_])))
    return dict(lists), rows


def write_lists(path, lists, rows, settings):
    """A YAML file `--recognizers` reads (``deny_list:``), each entry's evidence in a comment above the list."""
    import yaml

    lines = [f"# piiner-data lists: {settings}", "# string: type, labelled / occurrences, groups"]
    lines += [f"#   {s!r}: {t}, {n} / {o}, {g}" for s, t, n, o, g in rows]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n" + yaml.safe_dump({"deny_list": lists}, allow_unicode=True, sort_keys=True))
