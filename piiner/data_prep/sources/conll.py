"""What the token-labelled NER corpora share: CoNLL parsing, BIO and IO tags to character spans, text rebuilt from
tokens, the strict patterns that label the handles, URLs and emails their annotators left O, and the sentence
chunks that make records.

Labels a corpus gives are PER/LOC/ORG in one spelling or another (``NER_TYPES``); MISC and the rest are not PII.
"""

import re

NER_TYPES = {"PER": "PERSON", "PERSON": "PERSON", "LOC": "LOCATION", "LOCATION": "LOCATION", "ORG": "ORGANIZATION",
             "ORGANIZATION": "ORGANIZATION", "MISC": None}
# What these corpora's people annotated: everything else in them is unlabelled, not a negative.
NER_LABELLED_TYPES = ("PERSON", "LOCATION", "ORGANIZATION")

HANDLE = re.compile(r"@([A-Za-z0-9_]{1,30}):?")  # "RT @name:" keeps its colon outside the span
URL = re.compile(r"(?:https?://|www\.)[^\s<>\"]+", re.IGNORECASE)
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
DOCSTART = "-DOCSTART-"


def parse_conll(lines, where="", problems=None):
    """Sentences of `[(token, tag), ...]` from CoNLL lines (the token first, the tag last, separated by tabs or
    spaces); blank lines end a sentence, a "-DOCSTART-" line ends a document too (the sentence list gets a None).
    A line with a token but no tag column is a problem (its file and line), read as tag O."""
    sentences, current = [], []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        columns = line.split("\t") if "\t" in line else line.split()
        if columns[0] == DOCSTART:
            if current:
                sentences.append(current)
                current = []
            sentences.append(None)
            continue
        token, tag = columns[0], columns[-1].strip()
        if len(columns) < 2 or not re.fullmatch(r"O|[BI]-\w+", tag):
            if problems is not None:
                problems.append(f"{where}:{number}: no tag for token {token!r}; read as O")
            tag = "O"
        current.append((token, tag))
    if current:
        sentences.append(current)
    return sentences


def documents(sentences):
    """Split a sentence list at its None markers ("-DOCSTART-") into documents; empty documents are left out."""
    docs, current = [], []
    for sentence in sentences:
        if sentence is None:
            if current:
                docs.append(current)
            current = []
        else:
            current.append(sentence)
    if current:
        docs.append(current)
    return docs


_NO_SPACE_BEFORE = {"'s", "'S", "n't", "N'T", "'re", "'ve", "'ll", "'d", "'m", "''", "'"}
_NO_SPACE_AFTER = {"``", "#"}
_CLOSING, _OPENING = ",.;:!?)]}%", "([{$"


def _glued_before(token):
    """A clitic, or punctuation that closes ("," "." ")." ".," "%)"): no space before it."""
    return token in _NO_SPACE_BEFORE or (token[0] in _CLOSING and not any(c.isalnum() for c in token))


def _glued_after(token):
    """Punctuation that opens ("(" "($" "["): no space after it."""
    return token in _NO_SPACE_AFTER or (token[-1] in _OPENING and not any(c.isalnum() for c in token))


def join_tokens(tokens, detokenize=False):
    """(text, start offset of each token): tokens joined by single spaces or, with `detokenize`, the way prose is
    written ("Smith , a" -> "Smith, a"; "( 1999 )" -> "(1999)"; "INC .," -> "INC.,")."""
    text, starts = "", []
    for i, token in enumerate(tokens):
        if i and (not detokenize or not (_glued_before(token) or _glued_after(tokens[i - 1]))):
            text += " "
        starts.append(len(text))
        text += token
    return text, starts


def tag_spans(tags, starts, tokens, source, audit, types=NER_TYPES):
    """Character spans from BIO or IO tags, `types` mapping the upper-cased tag type to a piiner type (None: not
    PII; absent: unknown, counted). A run of I-X (IO tagging cannot separate two adjacent entities of one
    type, so a run is one entity) or a B-X with its I-X continuation; an I-X after another type opens an entity."""
    tags = list(tags)
    for i in range(1, len(tags) - 1):
        # "James P . Walker": the tokenizer split an initial's period off and the annotators ended the person
        # there, leaving the surname O. A name does not end at a middle initial: the capitalized word after it
        # joins (counted); the period joins it when the record is cleaned (``records.join_abbreviation_period``).
        if tokens[i] == "." and tags[i] == tags[i + 1] == "O" and types.get(tags[i - 1][2:].upper()) == "PERSON" \
                and re.fullmatch(r"[A-Z]", tokens[i - 1]) and re.fullmatch(r"[A-Z][a-z]+", tokens[i + 1]):
            tags[i + 1] = tags[i - 1]
            audit.note(source, "surname_after_initial")
    spans, current = [], None
    for tag, start, token in zip(tags, starts, tokens):
        prefix, _, kind = tag.partition("-")
        if prefix not in ("B", "I") or not kind:
            current = None
            continue
        if prefix == "I" and current is not None and current["kind"] == kind:
            current["end"] = start + len(token)
            continue
        current = {"start": start, "end": start + len(token), "kind": kind}
        spans.append(current)
    out = []
    for span in spans:
        kind = span.pop("kind")
        if kind.upper() not in types:
            audit.note(source, f"unknown_label:{kind}")
        elif types[kind.upper()] is None:
            audit.note(source, f"not_pii_label:{kind}")
        else:
            out.append({**span, "label": types[kind.upper()]})
    return out


def pattern_spans(tokens, starts, tags, source, audit):
    """USERNAME (without "@"), URL and EMAIL spans for O-tagged tokens that wholly match a strict pattern: social
    media annotators tag handles and links O, though they are PII here (counted as decisions)."""
    spans = []
    for token, start, tag in zip(tokens, starts, tags):
        if tag != "O":
            continue
        if handle := HANDLE.fullmatch(token):
            spans.append({"start": start + 1, "end": start + 1 + len(handle.group(1)), "label": "USERNAME"})
        elif URL.fullmatch(token):
            spans.append({"start": start, "end": start + len(token), "label": "URL"})
        elif EMAIL.fullmatch(token):
            spans.append({"start": start, "end": start + len(token), "label": "EMAIL"})
        else:
            continue
        audit.note(source, f"regex_labeled_{spans[-1]['label']}")
    return spans


def chunks(sentences, max_chars=600):
    """Consecutive (text, spans) sentences of one document grouped into records of up to `max_chars` (a longer
    sentence stays whole): several sentences of real prose per record, not one. A sentence follows a space, or a
    line break after one that ends without punctuation (a heading), so two names never touch across the join."""
    out, text, spans = [], "", []
    for sentence_text, sentence_spans in sentences:
        if text and len(text) + 1 + len(sentence_text) > max_chars:
            out.append((text, spans))
            text, spans = "", []
        joiner = "" if not text else " " if text.rstrip()[-1:] in ".!?:;\"')]" else "\n"
        spans += [{**s, "start": s["start"] + len(text) + len(joiner), "end": s["end"] + len(text) + len(joiner)}
                  for s in sentence_spans]
        text = text + joiner + sentence_text
    if text:
        out.append((text, spans))
    return out
