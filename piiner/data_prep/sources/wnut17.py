"""WNUT-17 emerging entities (local CoNLL files, CC-BY 4.0): user-generated text labeled by people.

Each sentence's tokens are joined by single spaces to rebuild a text with exact character offsets. person,
location, corporation and group map to PERSON, LOCATION, ORGANIZATION; product and creative-work are not PII.
The annotators tagged @handles and URLs O although they are USERNAME and URL for us; left O, the model would
learn to miss them, so a token tagged O that fully matches a strict pattern is labeled (counted in the audit):
``@name`` -> USERNAME over the name without the "@" (as the synthetic data does), ``http(s)://...`` or
``www....`` -> URL, ``a@b.c`` -> EMAIL. train -> train/validation, emerging.dev.conll -> test (the WNUT test file is not here).
"""

import os
import re

from .labels import WNUT17
from .loading import map_span

FILES = {"wnut17train.conll": "train", "emerging.dev.conll": "test"}
URLS = {name: f"https://github.com/leondz/emerging_entities_17/raw/HEAD/{name}" for name in FILES}
HANDLE = re.compile(r"@([A-Za-z0-9_]{1,30}):?")  # "RT @name:" keeps its colon outside the span
URL = re.compile(r"(?:https?://|www\.)[^\s<>\"]+", re.IGNORECASE)
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def parse_conll(lines):
    """[[(token, tag), ...], ...]: sentences split on blank lines (a lone tab counts as blank)."""
    sentences, current = [], []
    for line in lines:
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        token, _, tag = line.rpartition("\t")
        if not token:
            token, tag = line.split()[0], "O"
        current.append((token, tag.strip() or "O"))
    if current:
        sentences.append(current)
    return sentences


def read_rows(path, problems=None):
    """{split: sentences} from the folder holding the CoNLL files, or one file (split from its name)."""
    paths = {}
    if os.path.isdir(path):
        for name, split in FILES.items():
            if os.path.exists(os.path.join(path, name)):
                paths[split] = os.path.join(path, name)
    else:
        paths["test" if "dev" in os.path.basename(path) or "test" in os.path.basename(path) else "train"] = path
    if not paths:
        raise FileNotFoundError(f"no WNUT-17 CoNLL file ({', '.join(FILES)}) in {path!r}")
    out = {}
    for split, file in paths.items():
        with open(file, encoding="utf-8") as f:
            out[split] = [{"tokens": s, "_file": os.path.basename(file), "_index": i}
                          for i, s in enumerate(parse_conll(f))]
    return out


def sentence_record(source, tokens, audit):
    """(text, spans) for one CoNLL sentence."""
    text_parts, starts = [], []
    offset = 0
    for token, _ in tokens:
        starts.append(offset)
        text_parts.append(token)
        offset += len(token) + 1
    text = " ".join(text_parts)
    spans, current = [], None
    for (token, tag), start in zip(tokens, starts):
        prefix, _, kind = tag.partition("-")
        if prefix in ("B", "I") and kind:
            if prefix == "I" and current is not None and current["kind"] == kind:
                current["end"] = start + len(token)
                continue
            if prefix == "I":
                audit.note(source, "i_tag_without_b_started_entity")
            current = {"start": start, "end": start + len(token), "kind": kind}
            spans.append(current)
            continue
        current = None
        handle = HANDLE.fullmatch(token)
        if handle:
            spans.append({"start": start + 1, "end": start + 1 + len(handle.group(1)), "label": "USERNAME"})
            audit.note(source, "regex_labeled_USERNAME")
        elif URL.fullmatch(token):
            spans.append({"start": start, "end": start + len(token), "label": "URL"})
            audit.note(source, "regex_labeled_URL")
        elif EMAIL.fullmatch(token):
            spans.append({"start": start, "end": start + len(token), "label": "EMAIL"})
            audit.note(source, "regex_labeled_EMAIL")
    out = []
    for span in spans:
        if "kind" in span:
            label = map_span(source, span.pop("kind"), WNUT17, audit)
            if label is None:
                continue
            span["label"] = label
        out.append(span)
    return text, out


def records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            text, spans = sentence_record(source, row["tokens"], audit)
            name = row.get("_file", split).rsplit(".", 1)[0]
            index = row.get("_index", i)
            yield {"id": f"{source}-{name}-{index}", "source": source, "text": text, "spans": spans,
                   "group": f"{source}/{name}/{index}", "source_split": split}
