"""What the token-labelled NER corpora share: CoNLL parsing, BIO and IO tags to character spans, text rebuilt from
tokens, the strict patterns that label the handles, URLs and emails their annotators left O, and the sentence
chunks that make records.

Labels a corpus gives are PER/LOC/ORG in one spelling or another (``NER_TYPES``); MISC and the rest are not PII.
"""

import re

from piiner.baselines.regex import url_without_punctuation

from ..records import NOT_PII

NER_TYPES = {"PER": "PERSON", "PERSON": "PERSON", "LOC": "LOCATION", "LOCATION": "LOCATION", "ORG": "ORGANIZATION",
             "ORGANIZATION": "ORGANIZATION", "MISC": None}
# What these corpora's people annotated: everything else in them is unlabelled, not a negative.
NER_LABELLED_TYPES = ("PERSON", "LOCATION", "ORGANIZATION")

HANDLE_NAME = re.compile(r"[A-Za-z0-9_]{1,30}")  # what follows the "@" of a handle
HANDLE = re.compile(rf"@({HANDLE_NAME.pattern}):?")  # "RT @name:" keeps its colon outside the span
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
        if len(columns) < 2 or not re.fullmatch(r"O|[BI]-\w[\w-]*", tag):
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
_CLOSING, _OPENING = ",.;:!?)]}%\u201d\u2019", "([{$\u201c\u2018"
# What follows the apostrophe of a word cut in three ("he ' s", "I ' m", "Is n ' t", "you ' re").
_CLITIC_TAILS = {"s", "m", "t", "re", "ve", "ll", "d"}


def _glued_before(token):
    """A clitic, or punctuation that closes ("," "." ")." ".," "%)" "\u201d"): no space before it."""
    return token in _NO_SPACE_BEFORE or (token[:1] in _CLOSING and not any(c.isalnum() for c in token))


def _glued_after(token):
    """Punctuation that opens ("(" "($" "[" "\u201c"): no space after it."""
    return token in _NO_SPACE_AFTER or (token[-1:] in _OPENING and not any(c.isalnum() for c in token))


def _inner_apostrophe(tokens, i):
    """tokens[i] is an apostrophe a tokenizer cut out of a word: a clitic ("he ' s") or a name ("O ' Brien")."""
    if tokens[i] not in ("'", "\u2019") or not 0 < i < len(tokens) - 1:
        return False
    before, after = tokens[i - 1], tokens[i + 1]
    name = before in ("O", "D") and after[:1].isupper()
    return before[-1:].isalpha() and (after.lower() in _CLITIC_TAILS or name)


def _quote_roles(tokens):
    """{index: True for an opening quote, False for a closing one} for the straight quotes (" and an apostrophe that
    is no part of a word). Context decides first: a quote before punctuation, another quote or the end closes, one
    after the start, another quote or an opening bracket opens; between two words, one opens when it is not inside
    a quote already and a later quote of its kind can close it (else it closes: "the Cats ' first game")."""
    roles = {}
    for quote in ('"', "'"):
        at = [i for i, token in enumerate(tokens) if token == quote and not _inner_apostrophe(tokens, i)]
        inside = False
        for k, i in enumerate(at):
            before, after = tokens[i - 1] if i else None, tokens[i + 1] if i + 1 < len(tokens) else None
            if after is None or after == quote or _glued_before(after):
                roles[i] = False
            elif before is None or before == quote or _glued_after(before):
                roles[i] = True
            else:
                roles[i] = not inside and k + 1 < len(at)
            inside = roles[i]
    return roles


_LETTER = re.compile(r"[A-Z]\.?")
# A mark between two numbers that a tokenizer spaced out: (number before, the mark, number after) -> one number.
_NUMBER_MARKS = {",": (r"\d{1,3}", r"\d{3}"), ".": (r"\d+", r"\d+"), ":": (r"\d{1,2}", r"\d{2}(?:[ap]m)?")}
_DOMAINS = {"com", "org", "net", "edu", "gov", "co", "uk", "io", "ly", "me", "tv", "us"}


def _cut_word(tokens, i):
    """tokens[i] continues a word the tokenizer cut: at an apostrophe ("he ' s", "O ' Brien", "Is n ' t"), inside a
    number, a time or a domain ("50 , 000", "4 . 4", "10 : 39", "bit . ly") or between letters written with periods
    ("U . S ." and "U. S." are "U.S.")."""
    token, before = tokens[i], tokens[i - 1]
    if _inner_apostrophe(tokens, i) or _inner_apostrophe(tokens, i - 1):
        return True
    if i >= 2 and before in _NUMBER_MARKS:
        number_before, number_after = _NUMBER_MARKS[before]
        if re.fullmatch(number_before, tokens[i - 2]) and re.fullmatch(number_after, token, re.IGNORECASE):
            return True
    if i >= 2 and before == "." and token in _DOMAINS and tokens[i - 2][-1:].isalnum():
        return True
    if token in ("n", "N") and i + 2 < len(tokens) and _inner_apostrophe(tokens, i + 1):
        return tokens[i + 2] in ("t", "T")
    if not _LETTER.fullmatch(token):
        return False
    if token.endswith("."):
        return before.endswith(".") and _LETTER.fullmatch(before) is not None
    return before == "." and i >= 2 and len(tokens[i - 2]) == 1 and _LETTER.fullmatch(tokens[i - 2]) is not None \
        and tokens[i + 1:i + 2] == ["."]


def _glued(tokens, i, quotes):
    """No space between tokens[i - 1] and tokens[i] in written text."""
    if i in quotes:  # an opening quote keeps the space before it unless a bracket opens there: ("Lechu"
        return not quotes[i] or _glued_after(tokens[i - 1])
    return _cut_word(tokens, i) or quotes.get(i - 1) is True or _glued_before(tokens[i]) \
        or _glued_after(tokens[i - 1])


def join_tokens(tokens):
    """(text, start offset of each token): tokens joined the way prose is written ("Smith , a" -> "Smith, a";
    "( 1999 )" -> "(1999)"; "INC .," -> "INC.,"; "Is n ' t" -> "Isn't"; "$ 50 , 000" -> "$50,000";
    'said " hi "' -> 'said "hi"')."""
    text, starts = "", []
    quotes = _quote_roles(tokens)
    for i, token in enumerate(tokens):
        if i and not _glued(tokens, i, quotes):
            text += " "
        starts.append(len(text))
        text += token
    return text, starts


def tag_spans(tags, starts, tokens, source, audit, types=NER_TYPES):
    """Character spans from BIO or IO tags, `types` mapping the upper-cased tag type to a piiner type (``NOT_PII``:
    labelled and of no PII type, kept so for ``records.clean_record``; None: not PII, left out; absent: unknown,
    counted). A run of I-X (IO tagging cannot separate two adjacent entities of one type, so a run is one entity)
    or a B-X with its I-X continuation; an I-X after another type opens an entity."""
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
            continue
        label = types[kind.upper()]
        if label in (None, NOT_PII):
            audit.note(source, f"not_pii_label:{kind}")
        if label is not None:
            out.append({**span, "label": label})
    return out


def join_emails(tokens, tags, source, audit):
    """(tokens, tags) with each email address a tokenizer cut into pieces ("DFischer", "@", "goldhillcapital", ".",
    "com") made one token again, tagged O: its pieces are no name or place, whatever the corpus tagged them
    (SEC filings tag the local part a person and the domain an organization or place). ``pattern_spans`` then
    labels it EMAIL (counted, ``email_joined``)."""
    tokens, tags = list(tokens), list(tags)
    i = 1
    while i < len(tokens) - 1:
        if tokens[i] != "@":
            i += 1
            continue
        end = i + 2  # the domain's labels: a word, then "." and a word, as often as they come
        while end + 1 < len(tokens) and tokens[end] == "." and re.fullmatch(r"[A-Za-z0-9-]+", tokens[end + 1]):
            end += 2
        candidate = "".join(tokens[i - 1:end])
        if end > i + 2 and EMAIL.fullmatch(candidate):
            tokens[i - 1:end], tags[i - 1:end] = [candidate], ["O"]
            audit.note(source, "email_joined")
        i += 1
    return tokens, tags


def pattern_spans(tokens, starts, tags, source, audit):
    """USERNAME (without "@"), URL and EMAIL spans for O-tagged tokens that wholly match a strict pattern: social
    media annotators tag handles and links O, though they are PII here (counted as decisions)."""
    spans = []
    for token, start, tag in zip(tokens, starts, tags):
        if tag != "O":
            continue
        if handle := HANDLE.fullmatch(token):
            spans.append({"start": start + 1, "end": start + 1 + len(handle.group(1)), "label": "USERNAME"})
        elif URL.fullmatch(token):  # a tweet's tokenizer leaves a sentence's period on its last link
            spans.append({"start": start, "end": start + len(url_without_punctuation(token)), "label": "URL"})
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
