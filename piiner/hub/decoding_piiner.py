"""Model outputs -> entities for piiner: the windows of a text merged into one prediction per token, and BIO tags
turned into whole entities with exact character offsets into the original text.

Ships with the weights: imports only torch, NumPy, the standard library and its siblings.
"""

import bisect
import functools
import re

import numpy as np
import torch

from .checksums import fold_width
from .crf_numba import marginals_cpu, viterbi_cpu
from .encoding_piiner import _as_offset_pairs, _strip_span, paragraphs
from .pii_schema import TYPE_RULES, split_label
from .recognizers_piiner import PHONE_START, VALIDATORS, date_numbers_valid, ip_valid, phone_valid


def merge_windows(windows):
    """Merge the predictions of overlapping windows of one text into one prediction per token.

    Args:
        windows: iterable of `(offsets, tag_ids, tag_scores)`, one per window, offsets as in `token_char_ids`
            (special and padding tokens have `start == end` and are ignored).

    Returns:
        `(offsets, tag_ids, tag_scores)` over the text's tokens in text order. Each token keeps the prediction of
        the window where it is farthest from a window edge, where the model saw the most context on both sides.
        Tokens are matched across windows by their offsets (plus their rank among tokens sharing those offsets).
    """
    best = {}
    for offsets, tag_ids, tag_scores in windows:
        offsets, tag_ids, tag_scores = _check_lengths(offsets, tag_ids, tag_scores)
        real = [i for i, (s, e) in enumerate(offsets) if e > s]
        seen = {}
        for k, i in enumerate(real):
            rank = seen[offsets[i]] = seen.get(offsets[i], -1) + 1
            key = (*offsets[i], rank)
            distance = min(k, len(real) - 1 - k)
            if key not in best or distance > best[key][0]:
                best[key] = (distance, tag_ids[i], tag_scores[i])
    keys = sorted(best)
    return (
        [(s, e) for s, e, _ in keys],
        [best[k][1] for k in keys],
        [best[k][2] for k in keys],
    )


def _check_lengths(offsets, tag_ids, tag_scores):
    offsets = _as_offset_pairs(offsets)
    tag_ids = [int(t) for t in (tag_ids.tolist() if isinstance(tag_ids, torch.Tensor) else tag_ids)]
    tag_scores = tag_scores.tolist() if isinstance(tag_scores, torch.Tensor) else list(tag_scores)
    if not len(offsets) == len(tag_ids) == len(tag_scores):
        raise ValueError(
            f"offsets, tag_ids and tag_scores differ in length: {len(offsets)}, {len(tag_ids)}, {len(tag_scores)}"
        )
    return offsets, tag_ids, tag_scores


@functools.lru_cache(maxsize=8)
def _labels_read(labels):
    """`{tag id: (prefix, type)}` for a model's `(id, label)` pairs, filled as ids are read (`_read_label`) and kept
    per model: the decode reads the tags of every window several times over."""
    return {}


def _read_label(tag_id, id2label, read):
    """`_label_of` through `read`, the model's table of `_labels_read`."""
    label = read.get(tag_id)
    if label is None:
        label = read[tag_id] = _label_of(tag_id, id2label)
    return label


def _label_of(tag_id, id2label):
    label = id2label.get(tag_id, id2label.get(str(tag_id)))
    if label is None:
        raise ValueError(f"tag id {tag_id} is not in the model's id2label ({len(id2label)} labels)")
    try:
        return split_label(label)
    except ValueError:
        raise ValueError(f"label {label!r} (id {tag_id}) is not a BIO label") from None


def _entity(text, start, end, entity_type, score, type_to_tier):
    return {
        "entity_group": entity_type,
        "type": entity_type,
        "tier": type_to_tier.get(entity_type),
        "score": float(score),
        "start": start,
        "end": end,
        "word": text[start:end],
    }


def _continues(gap, multiline):
    """Whether an I- token after `gap`, the text since the entity's last token, continues it: never after a blank
    line; after a line break or a tab only for a type that may run over lines."""
    return gap.count("\n") < 2 if multiline else "\n" not in gap and "\t" not in gap


def decode_entities(text, offsets, tag_ids, tag_scores, id2label, type_to_tier, multiline_types=()):
    """BIO tags over tokens -> whole entities with exact character offsets into `text`.

    An entity runs from the start of its B- token (or of a stray I- token, which starts a new entity rather than
    being dropped) to the end of the last following I- token of the same type; `word == text[start:end]`. An I-
    token after a line break or a tab (a form's field separator: "Sex/Gender\tF") continues the entity only for a
    type in `multiline_types` (`config.multiline_types`: an address), and after a blank line (two line breaks) for
    no type: otherwise it starts a new entity, as a stray I- does. The encoder's tokenizer reads both as a space.
    Special and padding tokens (`start == end`) and tokens outside the CRF chain (tag id < 0, e.g. -100) are
    skipped. The entity's `score` is the *minimum* of its tokens'
    confidences: an entity is no more certain than its least certain token, and for CRF marginals the minimum
    bounds the probability that the whole span is right.

    Returns:
        list of dicts `{entity_group, type, tier, score, start, end, word}` in text order (`entity_group` repeats
        `type` for code written against the stock token-classification pipeline).
    """
    offsets, tag_ids, tag_scores = _check_lengths(offsets, tag_ids, tag_scores)
    return [_entity(text, start, end, entity_type, score, type_to_tier)
            for entity_type, start, end, score in _entity_spans(text, offsets, tag_ids, id2label, multiline_types,
                                                                  tag_scores)]


def _entity_spans(text, pairs, tag_ids, id2label, multiline_types=(), tag_scores=None):
    """`decode_entities`' reading of the tags, as `(type, start, end, score)` tuples: the lowest of the entity's
    token scores, None without `tag_scores` (the check rounds of `checked_window` read spans and types only, every
    round). `pairs`: the offsets as `(start, end)` tuples; `tag_ids`: ints."""
    found = []
    current = None  # [type, start, end, score]
    read = _labels_read(tuple(id2label.items()))
    for k, ((start, end), tag_id) in enumerate(zip(pairs, tag_ids)):
        if end <= start or tag_id < 0:
            continue
        prefix, entity_type = read[tag_id] if tag_id in read else _read_label(tag_id, id2label, read)
        score = None if tag_scores is None else tag_scores[k]
        if (prefix == "I" and current is not None and current[0] == entity_type
                and _continues(text[current[2]:start], entity_type in multiline_types)):
            current[2] = end
            if score is not None and score < current[3]:  # min()'s comparison, token by token
                current[3] = score
            continue
        if current is not None:
            found.append(current)
        current = None if prefix == "O" else [entity_type, start, end, score]
    if current is not None:
        found.append(current)
    spans = []
    for entity_type, start, end, score in found:
        # Some tokenizers (SentencePiece) count the preceding space as part of a token: an entity never starts or
        # ends with whitespace.
        start, end = _strip_span(text, start, end)
        if start < end:
            spans.append((entity_type, start, end, score))
    return spans


def decode_tokens(text, offsets, tag_ids, tag_scores, id2label, type_to_tier):
    """Per-token predictions, without grouping: one dict `{entity, type, tier, score, index, start, end, word}` per
    token tagged other than "O" (`entity` is the BIO label, `index` the token's position in `offsets`)."""
    offsets, tag_ids, tag_scores = _check_lengths(offsets, tag_ids, tag_scores)
    tokens = []
    for index, ((start, end), tag_id, score) in enumerate(zip(offsets, tag_ids, tag_scores)):
        if end <= start or tag_id < 0:
            continue
        prefix, entity_type = _label_of(tag_id, id2label)
        if prefix == "O":
            continue
        tokens.append({
            "entity": f"{prefix}-{entity_type}",
            "type": entity_type,
            "tier": type_to_tier.get(entity_type),
            "score": float(score),
            "index": index,
            "start": start,
            "end": end,
            "word": text[start:end],
        })
    return tokens


# An entity that fails its type's check cannot be of its type ("745.25.1139" as IP_ADDRESS, "podiobooks.com" as
# EMAIL, "612-40-8813" as PHONE, "the southern city of Tyre" as STREET_ADDRESS); the validators are
# `recognizers_piiner`'s, the project's one statement of each.
# An IP address written with its port or in brackets ("10.0.0.5:443", "[2001:db8::1]:8080", "[::1]"): the address is
# the entity, the brackets and the port lie outside it.
_ADDRESS_AND_PORT = re.compile(r"\[(?P<v6>[^\]]+)\](?::\d{1,5})?|(?P<v4>[\d.]+):\d{1,5}")


def _ip_address_part(word):
    """`(start, end)` of the IP address within `word` where the word is one written with a port or in brackets."""
    match = _ADDRESS_AND_PORT.fullmatch(word)
    group = match and ("v6" if match.group("v6") is not None else "v4")
    return match.span(group) if match and ip_valid(match.group(group)) else None


def _date_part(word):
    """`(start, end)` of the words of `word` left when those at its ends holding no date are taken off ("8/22" of a
    lab value run on into it, "16.0 8/22"); None when nothing is left."""
    words = [m.span() for m in re.finditer(r"\S+", word)]
    while words and not date_numbers_valid(word[slice(*words[0])]):
        words.pop(0)
    while words and not date_numbers_valid(word[slice(*words[-1])]):
        words.pop()
    return (words[0][0], words[-1][1]) if words and date_numbers_valid(word[words[0][0]:words[-1][1]]) else None


def _phone_number_part(word):
    """`(start, end)` of the phone number within `word` where punctuation stands before its first digit, "+" or "("
    ("301 944-5032" of "---301 944-5032"); None when there is none."""
    first = PHONE_START.search(word)
    return (first.start(), len(word)) if first and phone_valid(word[first.start():]) else None


def _phone_word(word):
    return any(c.isdigit() for c in word) or word.strip(".,:;()[]").lower() in {"ext", "x", "extn", "extension"}


# The functions behind the names of `pii_schema.TYPE_RULES`, which says which type has which rule.
CHECKS = {**VALIDATORS, "has_digit": lambda word: re.search(r"\d", word) is not None}
PARTS = {"address_and_port": _ip_address_part, "dates": _date_part, "number": _phone_number_part}
# A token holding a letter lies outside an entity of a type written in digits ("exp" of a card run on into "exp
# 09/27", whose 19 digits may pass Luhn by chance; a field label "SSN" before the number; the "or" between two phone
# numbers), unless the whitespace-delimited word it is in passes the type's letters rule: a phone number keeps an
# extension marker ("ext. 22", "x304") and letters written into its digits ("1-800-FLOWERS").
LETTERS = {"none": lambda word: False, "extension": _phone_word}

# The rules by type, as the decode reads them: an entity must pass its type's check; failing it, the part that passes
# stays (TYPE_PARTS); a type written in digits holds no word of letters its rule refuses (DIGIT_TYPES); a type that
# never holds whitespace ends before it, the word after the space getting whatever the model ranks next there
# ("http://t.co/x MileyCyrus" is one URL and a name).
TYPE_CHECKS = {t: CHECKS[rules["check"]] for t, rules in TYPE_RULES.items() if "check" in rules}
TYPE_PARTS = {t: PARTS[rules["part"]] for t, rules in TYPE_RULES.items() if "part" in rules}
DIGIT_TYPES = {t: LETTERS[rules["letters"]] for t, rules in TYPE_RULES.items() if "letters" in rules}
UNBROKEN_TYPES = frozenset(t for t, rules in TYPE_RULES.items() if rules.get("unbroken"))

_NOT_SPACE = re.compile(r"\S*")


def _mixed_case(text):
    return any(c.isupper() for c in text) and any(c.islower() for c in text)


@functools.lru_cache(maxsize=1)
def _cased_paragraphs(text):
    """Where each paragraph of `text` begins, and whether it mixes upper and lower case: read once per text (the
    last one is kept), since the checks ask it of every entity in every window of the text."""
    bounds = paragraphs(text)
    return [start for start, _ in bounds], [_mixed_case(text[start:end]) for start, end in bounds]


def _in_cased_paragraph(text, position):
    starts, mixed = _cased_paragraphs(text)
    return mixed[bisect.bisect_right(starts, position) - 1]


def _lower_case_only(word):
    return any(c.islower() for c in word) and not any(c.isupper() for c in word)


def fails_check(text, entity, capitalised_types=()):
    """Whether `entity` (of `decode_entities` on `text`) cannot be of its type: its word fails the type's
    `TYPE_CHECKS`, or its type is one of `capitalised_types` (`config.capitalised_types`) and it has no capital
    letter where its paragraph mixes upper and lower case (an organization or a place "basketball" in "We watched
    basketball"; in "we watched basketball" or in upper-case text it stands)."""
    return _type_fails(entity["type"], entity["word"], capitalised_types, lambda: _lacks_capital(text, entity))


def _type_fails(kind, word, capitalised_types, lacks_capital):
    """`fails_check` of `word` as a `kind`; `lacks_capital()` says whether the words lack a capital that their
    paragraph's case calls for."""
    if kind in TYPE_CHECKS:
        return not TYPE_CHECKS[kind](word)
    return kind in capitalised_types and lacks_capital()


def _lacks_capital(text, entity):
    return not any(c.isupper() for c in entity["word"]) and _in_cased_paragraph(text, entity["start"])


def lower_case_ends(text, entity, capitalised_types=()):
    """The words at either end of `entity` written in lower case only, as `(start, end)` ranges of `text`, where
    the entity is a name of `capitalised_types` that holds a capital letter, in a paragraph that mixes upper and
    lower case: such a name begins and ends with a capitalised word, so "central" and "docks" of "central Arizona"
    and "Weehawken docks" lie outside it ("University of Ohio" keeps its "of"). Empty for any other entity."""
    if entity["type"] not in capitalised_types or not any(c.isupper() for c in entity["word"]):
        return []
    words = [(m.start() + entity["start"], m.end() + entity["start"]) for m in re.finditer(r"\S+", entity["word"])]
    cased = [i for i, (s, e) in enumerate(words) if not _lower_case_only(text[s:e])]  # one holds the capital
    ends = words[:cased[0]] + words[cased[-1] + 1:]
    return ends if ends and _in_cased_paragraph(text, entity["start"]) else []


def _words_around(text, pairs, tokens):
    """`(start, end)` of the whitespace-delimited word of `text` around each of `tokens` (indices into the offset
    `pairs`, in text order), read outward from the token's characters. Tokens of one word share its ends, so the
    text is read once however many tokens a long word holds, not once per token."""
    starts, ends = [], []
    for k, i in enumerate(tokens):
        start = pairs[i][0]
        previous = pairs[tokens[k - 1]][0] if k else None
        if previous is not None and not any(c.isspace() for c in text[previous:start]):
            starts.append(starts[-1])  # no space since the previous token's start: the same word
            continue
        first = start
        while first > 0 and not text[first - 1].isspace():
            first -= 1
        starts.append(first)
    for k in reversed(range(len(tokens))):
        end = pairs[tokens[k]][1]
        following = pairs[tokens[k + 1]][1] if k + 1 < len(tokens) else None
        if following is not None and not any(c.isspace() for c in text[end:following]):
            ends.append(ends[-1])
            continue
        ends.append(_NOT_SPACE.match(text, end).end())
    return list(zip(starts, reversed(ends)))


def _lettered(tokens, word, allowed):
    """Which `tokens` (texts) of `word` lie outside an entity of a `DIGIT_TYPES` type whose test is `allowed`: those
    that hold a letter, or all where the word holds letters and no digit (the parentheses of "(H)"); none where the
    type allows the word or it holds no letter."""
    if allowed(word) or not any(c.isalpha() for c in word):
        return [False] * len(tokens)
    if not any(c.isdigit() for c in word):
        return [True] * len(tokens)
    return [any(c.isalpha() for c in token) for token in tokens]


def _tokens_over(spans, ranges):
    """The tokens (with characters) of `spans`, a window's `(T, 2)` offsets as an array, that overlap any `(start,
    end)` of `ranges`. Vectorised: a model whose emissions break the rules everywhere (a random head) asks this of
    hundreds of entities per window."""
    starts, ends = spans[:, 0], spans[:, 1]
    hit = np.zeros(len(spans), dtype=bool)
    for start, end in ranges:
        hit |= (starts < end) & (ends > start)
    return np.flatnonzero(hit & (ends > starts)).tolist()


@functools.lru_cache(maxsize=8)
def _ids_by_type(labels):
    """`{type: [its B- and I- label ids]}` of a model's `(label, id)` pairs, read once per model: the checks ask it of
    every failing entity, hundreds per window where the emissions are poor."""
    by_type = {}
    for label, i in labels:
        kind = split_label(label)[1]
        if kind is not None:
            by_type.setdefault(kind, []).append(int(i))
    return by_type


def _label_ids(label2id, types):
    """The sorted ids of the B- and I- labels of `types` (`pii_schema.label_ids_of_types`), from the cached table."""
    by_type = _ids_by_type(tuple(label2id.items()))
    return sorted(i for t in set(types) for i in by_type.get(t, ()))


def _forbidden(text, pairs, spans, entity, label2id, capitalised_types):
    """`(tokens, label ids)` the window's next decode must not give, for an entity that cannot stand as it is; None
    for one that can. An entity of `UNBROKEN_TYPES` over whitespace: its I- label on the tokens after a space. One
    that holds a letter in a type of `DIGIT_TYPES`: every label of its type on the tokens holding one and on the
    whole of a word of letters without a digit, but not on a word the type allows (a phone number's "ext."). One
    that fails its check (`fails_check`): every label of its type on all its tokens, or on those around a part
    that passes (`TYPE_PARTS`: the port of "10.0.0.5:443"). A name ending in lower-case
    words (`lower_case_ends`): every label of its type on those words' tokens. `spans`: `pairs` as an array."""
    kind = entity["type"]
    if kind in UNBROKEN_TYPES and any(c.isspace() for c in entity["word"]):
        inside = _tokens_over(spans, [(entity["start"], entity["end"])])
        # whitespace between the previous token and this one, or opening it (SentencePiece tokens hold their space)
        tokens = [i for before, i in zip(inside, inside[1:])
                  if any(c.isspace() for c in text[pairs[before][1]:pairs[i][0] + 1])]
        return tokens, [i for label, i in label2id.items() if label == f"I-{kind}"]
    if kind in DIGIT_TYPES and any(c.isalpha() for c in entity["word"]):
        inside = _tokens_over(spans, [(entity["start"], entity["end"])])
        by_word = {}  # each word's test once, whatever its length and number of tokens
        for i, word in zip(inside, _words_around(text, pairs, inside)):
            by_word.setdefault(word, []).append(i)
        lettered = []
        for (start, end), tokens in by_word.items():
            verdicts = _lettered([text[s:e] for s, e in (pairs[i] for i in tokens)], text[start:end], DIGIT_TYPES[kind])
            lettered += [i for i, out in zip(tokens, verdicts) if out]
        if lettered:
            return sorted(lettered), _label_ids(label2id, [kind])
    if not fails_check(text, entity, capitalised_types):
        outside = lower_case_ends(text, entity, capitalised_types)
        return (_tokens_over(spans, outside), _label_ids(label2id, [kind])) if outside else None
    whole = [(entity["start"], entity["end"])]
    part = TYPE_PARTS[kind](entity["word"]) if kind in TYPE_PARTS else None
    # the tokens around the part that passes ("10.0.0.5" of "10.0.0.5:443"); all of them where none does, or where
    # no token lies outside it
    tokens = part and _tokens_over(spans, [(entity["start"], entity["start"] + part[0]),
                                           (entity["start"] + part[1], entity["end"])])
    if tokens:
        return tokens, _label_ids(label2id, [kind])
    # Every type the same words would fail, not only this one: the next decode cannot move the span to another type
    # it cannot be, so a span takes one more decode, not one per type the model ranks before the one that passes.
    # Only a type with a check or a capital rule can fail.
    return _tokens_over(spans, whole), _label_ids(label2id, [kind] + _failing_types(text, entity, capitalised_types))


def _failing_types(text, entity, capitalised_types):
    """The types other than the entity's own whose check its words fail (`fails_check` of each), in name order; the
    capital letter, the same question for every capitalised type, is read once."""
    lacks = _lacks_capital(text, entity)
    return [t for t in _types_that_can_fail(tuple(capitalised_types))
            if t != entity["type"] and _type_fails(t, entity["word"], capitalised_types, lambda: lacks)]


@functools.lru_cache(maxsize=8)
def _types_that_can_fail(capitalised_types):
    """The types whose check can fail a span whole (a validator, or a capital letter), in name order; fewer than
    `checked_window`'s types with a rule, which add the unbroken and digit types' partial rules."""
    return sorted(set(TYPE_CHECKS) | set(capitalised_types))


@functools.lru_cache(maxsize=2)
def _folded(text):
    # `fold_width(text)` once per text, not once per window: a text's windows are checked one after the other, and
    # each fold of a text holding a full-width form copies all of it.
    return fold_width(text)


def _evidence_masks(pairs, crf_mask, matches, label2id):
    """The labels recognizer matches fix on a window's tokens: `(forced, no_continue)`, `forced` a dict token ->
    the one label it may take (B- on a match's first token in the window, I- on the rest; O for a type the model has
    no label for, whose entity is added after decoding), `no_continue` the `(token, label)` pairs that would run an
    entity on past a match's end. A match reaching past the window's edge is fixed on the part inside it."""
    forced, no_continue = {}, []
    chain = [i for i, (s, e) in enumerate(pairs) if e > s and crf_mask[i]]
    starts = [pairs[i][0] for i in chain]
    outside = label2id["O"]
    for match in matches:
        first = bisect.bisect_left(starts, match.start) - 1
        first = first if first >= 0 and pairs[chain[first]][1] > match.start else first + 1
        tokens = []
        for k in range(max(first, 0), len(chain)):
            if pairs[chain[k]][0] >= match.end:
                break
            tokens.append(chain[k])
        if not tokens:
            continue
        begin, inside = label2id.get(f"B-{match.type}"), label2id.get(f"I-{match.type}")
        if begin is None or inside is None:
            forced.update(dict.fromkeys(tokens, outside))
            continue
        forced[tokens[0]] = begin
        forced.update(dict.fromkeys(tokens[1:], inside))
        after = chain.index(tokens[-1]) + 1
        if after < len(chain):
            no_continue.append((chain[after], inside))
    return forced, no_continue


# Rounds of check and decode again a window may take; after them an entity that still fails is dropped, so a model
# whose emissions break the rules everywhere (a random head) costs a bounded number of Viterbi passes per window.
MAX_CHECK_ROUNDS = 3


def checked_window(text, offsets, emissions, crf_mask, crf, id2label, multiline_types=(), capitalised_types=(),
                   matches=()):
    """One window's tags and scores: its CRF decode under the recognizers' evidence, with no entity that fails its
    type's check (`fails_check`: `TYPE_CHECKS`, and a capital letter for `capitalised_types` in mixed-case text), or,
    for those types, ends in a word written in lower case (`lower_case_ends`), or runs over whitespace in a type that
    never holds any (`UNBROKEN_TYPES`), or holds a letter in a type written in digits where the type does not allow
    it (`DIGIT_TYPES`). The window's only decode: the model's emissions in, one Viterbi pass a round, the marginals
    once, of the last chain.

    Recognizer `matches` (`recognizers_piiner.Evidence.find`) come first: their tokens may take only the match's
    labels (`_evidence_masks`), so a valid SSN the model scored as a phone number is decoded as an SSN, whole, and
    the path around it is the best one that agrees. Then, where the best path holds an entity that fails a check,
    labels of its type are forbidden (`_forbidden`: on its tokens; on the tokens of its lower-case end words only,
    for the second kind; its I- label after the space, for the third; on the lettered tokens, for the fourth) and the
    window is decoded again (`viterbi_cpu`): "745.25.1139" tagged IP_ADDRESS becomes what the model ranks next there;
    "Weehawken docks" tagged LOCATION becomes "Weehawken". At most `MAX_CHECK_ROUNDS` such rounds; an entity failing
    after them is dropped (its tokens set to O), so the work per window is bounded whatever the emissions. Entities
    on recognizer matches are not checked again. Scores are the marginals of the chain decoded last.

    Args:
        offsets: the window's tokens' character offsets, as `merge_windows` takes them.
        emissions (`(seq_len, num_labels)`): the window's log-softmax emission scores.
        crf_mask (`(seq_len,)`): the CRF positions (`crf_piiner.crf_positions`). crf: the constrained
            `(start, transitions, end)`.
        matches: the text's recognizer matches (character offsets into `text`).

    Returns:
        `(tag_ids, tag_scores)` per token (-100 and 0 off the CRF), a path on which every entity passes its check.

    The checks read the text as the model does (`fold_width`, once per text): "１０．０．０．１" is an IP address.
    """
    mask = np.asarray(crf_mask, dtype=bool)
    pairs = _as_offset_pairs(offsets)
    spans = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    label2id = {label: int(i) for i, label in id2label.items()}
    window = (min((s for s, e in pairs if e > s), default=0), max((e for s, e in pairs if e > s), default=0))
    matches = [m for m in matches if m.start < window[1] and m.end > window[0]]
    forced, no_continue = _evidence_masks(pairs, mask, matches, label2id) if matches else ({}, [])
    emissions = np.array(emissions, dtype=np.float32)  # a copy: the evidence and the checks write into it
    for token, label in forced.items():
        kept = emissions[token, label]
        emissions[token] = FORBIDDEN_EMISSION
        emissions[token, label] = kept
    for token, label in no_continue:
        emissions[token, label] = FORBIDDEN_EMISSION
    tag_ids = viterbi_cpu(emissions[None], mask[None], *crf)[0][0]
    checked = set(TYPE_CHECKS) | set(capitalised_types) | UNBROKEN_TYPES | set(DIGIT_TYPES)
    read = _labels_read(tuple(id2label.items()))
    if any(_read_label(tag_id, id2label, read)[1] in checked for tag_id in set(tag_ids[mask].tolist())):
        tag_ids = _passing_checks(_folded(text), pairs, spans, tag_ids, emissions, mask, crf, id2label, label2id,
                                  checked, multiline_types, capitalised_types, matches)
    marginals = marginals_cpu(emissions[None], mask[None], *crf)[0]
    return tag_ids, np.take_along_axis(marginals, np.maximum(tag_ids, 0)[:, None], axis=-1)[:, 0] * mask


def _passing_checks(text, pairs, spans, tag_ids, emissions, mask, crf, id2label, label2id, checked, multiline_types,
                    capitalised_types, matches):
    """`checked_window`'s rounds: the tags of a path on which every entity passes its check, `emissions` written with
    the labels each round forbade. `checked`: the types that have a rule; an entity of another type always stands."""
    evidence = [(m.start, m.end) for m in matches]
    known = {}  # (start, end, type) -> verdict: a span that a decode again leaves as it was is not checked again

    def verdict(key):
        if key not in known:
            start, end, kind = key
            entity = {"type": kind, "start": start, "end": end, "word": text[start:end]}
            known[key] = _forbidden(text, pairs, spans, entity, label2id, capitalised_types) if kind in checked else None
        return known[key]

    for round_ in range(MAX_CHECK_ROUNDS + 1):
        found = _entity_spans(text, pairs, tag_ids.tolist(), id2label, multiline_types)
        entities = [(start, end, kind) for kind, start, end, _ in found
                    if not (evidence and any(start < e and end > s for s, e in evidence))]
        verdicts = [(key, verdict(key)) for key in entities]
        forbidden = [f for _, f in verdicts if f and f[0]]
        if not forbidden:
            break
        if round_ == MAX_CHECK_ROUNDS:  # still failing: drop those entities whole
            tag_ids = np.array(tag_ids, copy=True)
            for (start, end, _), failed in verdicts:
                if failed:
                    tag_ids[_tokens_over(spans, [(start, end)])] = label2id["O"]
            break
        for tokens, labels in forbidden:
            emissions[np.ix_(tokens, labels)] = FORBIDDEN_EMISSION
        tag_ids = viterbi_cpu(emissions[None], mask[None], *crf)[0][0]
    return tag_ids


def entities_from_windows(text, windows, config, crf, evidence=None, aggregation_strategy="simple"):
    """The one path from a text's model outputs to its entities, for the pipeline, the ONNX runtime and training
    evaluation alike.

    Args:
        text (`str`): the text the windows' offsets point into.
        windows: per window `(offsets, emissions, crf_mask)`: its tokens' offsets, the log-softmax emissions and
            the CRF positions.
        config: the model config (`id2label`, `type_to_tier`, `multiline_types`, `capitalised_types`).
        crf: the constrained `(start, transitions, end)` of the CRF.
        evidence (`recognizers_piiner.Evidence`, *optional*): recognizers and the allow list.
        aggregation_strategy: `"simple"` (entities) or `"none"` (tagged tokens).

    Each window is decoded under the evidence and the type checks (`checked_window`), the windows merged
    (`merge_windows`) and the tags read as entities (`decode_entities`). An entity on a recognizer match takes the
    match's exact offsets and score; a match of a type the model has no label for becomes an entity of its own; an
    entity whose text is on the allow list is dropped.
    """
    type_to_tier = getattr(config, "type_to_tier", None) or {}
    multiline_types = getattr(config, "multiline_types", None) or ()
    capitalised_types = getattr(config, "capitalised_types", None) or ()
    matches = evidence.find(text) if evidence else ()
    # As arrays once per text, not once per decode: a window is decoded up to MAX_CHECK_ROUNDS + 1 times.
    crf = tuple(x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x) for x in crf)
    checked = []
    for offsets, emissions, crf_mask in windows:
        checked.append((offsets, *checked_window(text, offsets, emissions, crf_mask, crf, config.id2label,
                                                 multiline_types, capitalised_types, matches)))
    offsets, tags, scores = merge_windows(checked)
    if aggregation_strategy != "simple":
        return decode_tokens(text, offsets, tags, scores, config.id2label, type_to_tier)
    entities = decode_entities(text, offsets, tags, scores, config.id2label, type_to_tier, multiline_types)
    return apply_evidence(text, entities, matches, type_to_tier, evidence.allow_list if evidence else ())


def apply_evidence(text, entities, matches, type_to_tier, allow_list=()):
    """Entities with the recognizers' word on them: one on a match of its type takes the match's offsets and score,
    and says which recognizer found it (`source`); a match of a type outside the model's labels is added; an entity
    whose text is on `allow_list` is dropped. Sorted by start."""
    out = []
    for entity in entities:
        entity.setdefault("source", "model")
        for match in matches:
            if match.type == entity["type"] and match.start < entity["end"] and match.end > entity["start"]:
                entity.update(start=match.start, end=match.end, word=text[match.start:match.end],
                              score=float(match.score), source=match.source)
                break
        out.append(entity)
    labelled = set(type_to_tier)
    for match in matches:
        if match.type not in labelled:
            out.append({"entity_group": match.type, "type": match.type, "tier": match.tier, "score": float(match.score),
                        "start": match.start, "end": match.end, "word": text[match.start:match.end],
                        "source": match.source})
    return sorted((e for e in out if e["word"].strip() not in allow_list), key=lambda e: (e["start"], e["end"]))


# An emission score no path takes while another is open (log-probabilities are > -100 in float32).
FORBIDDEN_EMISSION = -1.0e4


def _check_score(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not 0 <= value <= 1:
        raise ValueError(f"{what} must be a score from 0 to 1, got {value!r}")  # NaN fails the comparison too
    return float(value)


def result_filters(label2id, min_score=None, ignore_labels=None, extra_types=()):
    """The two filters a caller may put on results, checked against a model's types (and `extra_types`, those of its
    recognizers): returns `(min_score, ignore_labels)` for `filter_results`. `min_score` is a score in [0, 1], or a
    dict whose keys are tiers (1 to 4, as ints) or types, each to a score; `ignore_labels` a list of types. Anything
    else is an error naming the value: a BIO label, a tier written as a string, a score outside [0, 1] or NaN."""
    types = ({split_label(label)[1] for label in label2id} - {None}) | set(extra_types)
    if isinstance(min_score, dict):
        checked = {}
        for key, value in min_score.items():
            if isinstance(key, str) and key in types:
                checked[key] = _check_score(value, f"min_score[{key!r}]")
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 1 <= key <= 4:
                checked[int(key)] = _check_score(value, f"min_score[{key}]")
            else:
                raise ValueError(f"min_score has the key {key!r}: a key is a tier, an int from 1 to 4, or a type of "
                                 f"this model (its types: {sorted(types)})")
        min_score = checked
    elif min_score is not None:
        min_score = _check_score(min_score, "min_score")
    if ignore_labels is None:
        return min_score, frozenset()
    if isinstance(ignore_labels, str) or not all(isinstance(label, str) for label in ignore_labels):
        raise TypeError(f"ignore_labels must be a list of type names, got {ignore_labels!r}")
    ignore_labels = set(ignore_labels) - {"O"}  # the stock pipeline's default: nothing to drop here
    for name in ignore_labels:
        if name not in types and name in label2id:
            raise ValueError(f"ignore_labels names the label {name!r}; it takes types, such as "
                             f"{split_label(name)[1] or 'SSN'!r}")
    unknown = sorted(set(ignore_labels) - types)
    if unknown:
        raise ValueError(f"ignore_labels names {unknown}, which are not types of this model (its types: "
                         f"{sorted(types)})")
    return min_score, frozenset(ignore_labels)


def filter_results(results, min_score=None, ignore_labels=frozenset()):
    """The results (entities or tokens) scored at least `min_score` (for a dict: its type's score, else its tier's;
    results of a type or tier it does not name are all kept) and of no type in `ignore_labels`."""
    if isinstance(min_score, dict):
        results = [r for r in results if r["score"] >= min_score.get(r["type"], min_score.get(r["tier"], 0.0))]
    elif min_score is not None:
        results = [r for r in results if r["score"] >= min_score]
    return [r for r in results if r["type"] not in ignore_labels]


__all__ = ["merge_windows", "decode_entities", "decode_tokens", "checked_window", "entities_from_windows", "apply_evidence", "fails_check", "lower_case_ends",
           "TYPE_CHECKS", "UNBROKEN_TYPES", "DIGIT_TYPES", "result_filters", "filter_results"]
