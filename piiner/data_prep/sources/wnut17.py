"""WNUT-17 emerging entities (CoNLL files, CC-BY 4.0): user-generated text labeled by people.

Each sentence's text is rebuilt from its tokens the way people write it ("Is n ' t" -> "Isn't", "Knicks !" ->
"Knicks!": ``conll.join_tokens``), with exact character offsets. person,
location, corporation and group map to PERSON, LOCATION, ORGANIZATION; product and creative-work are not PII.
The annotators tagged @handles and URLs O although they are USERNAME and URL for us; left O, the model would
learn to miss them, so a token tagged O that fully matches a strict pattern is labeled (counted in the audit):
``@name`` -> USERNAME over the name without the "@" (as the synthetic data does), ``http(s)://...`` or
``www....`` -> URL, ``a@b.c`` -> EMAIL. train -> train/validation, emerging.dev.conll -> test (the WNUT test file is
not here). Everything else (dates, numbers) is unlabelled: ``LABELLED_TYPES`` says what the annotation covers.
"""

import os

from .conll import NER_LABELLED_TYPES, join_tokens, parse_conll, pattern_spans, tag_spans
from .labels import WNUT17

FILES = {"wnut17train.conll": "train", "emerging.dev.conll": "test"}
URLS = {name: f"https://github.com/leondz/emerging_entities_17/raw/HEAD/{name}" for name in FILES}
LABELLED_TYPES = NER_LABELLED_TYPES + ("USERNAME", "URL", "EMAIL")
_TYPES = {kind.upper(): label for kind, label in WNUT17.items()}


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
            sentences = [s for s in parse_conll(f, file, problems) if s]
        out[split] = [{"tokens": s, "_file": os.path.basename(file), "_index": i} for i, s in enumerate(sentences)]
    return out


def sentence_record(source, tokens, audit):
    """(text, spans) for one CoNLL sentence."""
    words, tags = [t for t, _ in tokens], [tag for _, tag in tokens]
    text, starts = join_tokens(words)
    spans = tag_spans(tags, starts, words, source, audit, _TYPES) + pattern_spans(words, starts, tags, source, audit)
    return text, sorted(spans, key=lambda s: s["start"])


def records(source, rows_by_split, audit):
    for split, rows in rows_by_split.items():
        for i, row in enumerate(rows):
            audit.read(source)
            text, spans = sentence_record(source, row["tokens"], audit)
            name = row.get("_file", split).rsplit(".", 1)[0]
            index = row.get("_index", i)
            yield {"id": f"{source}-{name}-{index}", "source": source, "text": text, "spans": spans,
                   "group": f"{source}/{name}/{index}", "source_split": split, "labelled_types": LABELLED_TYPES}
