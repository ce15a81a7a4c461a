"""The unified record and the rules every span passes before it reaches a split.

A record is ``{"id", "source", "text", "spans": [{"start", "end", "label"}], "group", "labelled_types",
"not_pii_spans": [{"start", "end"}], "unjudged_spans": [{"start", "end"}]}``: character offsets into ``text``,
end-exclusive, canonical type names from ``piiner.hub.pii_schema``, spans sorted and non-overlapping.
``labelled_types`` lists the types the record's annotators labelled (a NER corpus: persons, places,
organizations); any other type may be present unlabelled. None means every type was labelled. ``not_pii_spans``
are stretches the annotators labelled as entities of no PII type (WNUT-17's products and creative works): what they
cover is known to be no type at all, even where ``labelled_types`` leaves the rest of the record open. An adapter
gives them as spans labelled ``NOT_PII`` ("O"). ``unjudged_spans`` are stretches whose label is unknown: the
annotators marked a mention there that the schema may or may not count as PII (GUM's time mentions that are not
calendar dates: "2005", "this morning"). Training leaves every label open on them and scoring sets aside a
prediction inside one, so the record neither teaches nor judges what they hold. An adapter gives them as spans with
``"unjudged": True``. ``group`` names the template or source document a record came from; splits are drawn by
group so no template or document is on both sides of a split.

``clean_record`` applies, in this order (each step counted in the audit under the record's source); a record with a
span that steps 1-2 cannot place is dropped whole (``span_out_of_range`` etc.), because its text still holds the
value, which kept unlabelled would be taught as not PII:

1. Range: a span must satisfy ``0 <= start < end <= len(text)`` with integer offsets, else it is rejected.
2. Value: when the source gives the span's surface value and ``text[start:end]`` differs, the span moves to the
   value's occurrence if the value occurs exactly once in the text ("repaired_offset"); otherwise it is rejected
   ("value_mismatch"). Guessing between several occurrences would label the wrong one.
3. Whitespace: leading and trailing whitespace inside a span is trimmed ("trimmed_whitespace"); a span that is
   all whitespace is rejected.
   A PERSON, LOCATION or ORGANIZATION span also loses the sentence punctuation a corpus's tokens glued to its
   last word ("Ireland." or "Ireland ." in a tweet, "#Gaza,", "Dortmund)"): trailing ",;:" (not the ";" of an
   HTML entity such as "&quot;"), a closing bracket or quote with no opening one in the span, and a final "."
   unless it ends an abbreviation or initial ("U.S.", "Inc.", "Jr.", "Calif.", "George W."); counted as
   "trimmed_punctuation", and a span of punctuation alone is rejected ("punctuation_span"). Conversely, a name
   whose last word is an abbreviation or initial takes the "." right after it ("Acme Inc" + "."), where a
   tokenizer split it off and the corpus left it out ("abbreviation_period_joined").
4. Overlap: spans are visited by start; a span overlapping an already kept one loses if it is shorter, or, at
   equal length, if its type is less sensitive (higher tier number); identical spans count as "duplicate_span".
   The longer span usually carries the whole entity ("John Smith" over "Smith").
5. Titles: a title right before a PERSON span ("Dr. ", "Mrs. ", "DR ", "dr. ") joins the span.
6. Merge: PERSON spans separated only by spaces (or nothing) become one PERSON span: first+last name parts.
   Address parts become one STREET_ADDRESS: a chain of STREET_ADDRESS and LOCATION spans joined by gaps of at
   most four characters of spaces, commas, tabs or line breaks is one postal address when the chain has
   at least one STREET_ADDRESS span ("12 Main St" + ", " + "Springfield" + ", " + "IL" + " " + "62704"). A city,
   state or country that is not next to a street part stays LOCATION.
7. Word parts: only where the source says it labels word by word (`piiner-data import --join-words`), spans of one
   type apart by spaces or one hyphen become one ("Holy" + "Cross"). Elsewhere two places side by side are two
   entities ("Miramar California" in UNER).
"""

import re

from piiner.hub.pii_schema import PII_TYPES, TIER_OF

_PII_TYPE_SET = frozenset(PII_TYPES)
# The label an adapter gives a span its source labelled as an entity of no PII type (a title, a product).
NOT_PII = "O"
_ADDRESS_GAP = re.compile(r"[ \t\n,]{0,4}")
_NAME_GAP = re.compile(r" *")


class SpanError(ValueError):
    """A span that cannot be placed on its text."""


def _as_offset(value):
    if isinstance(value, bool):
        raise SpanError("offset is a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise SpanError(f"offset {value!r} is not an integer")


# Rejections that leave a labelled value somewhere in the text unplaced: the whole record goes.
LOST_VALUE = ("bad_offset_type", "out_of_range", "value_mismatch")


def place_span(text, start, end, value, audit, source):
    """Validated (start, end) for one span; None for a span that covers no character (empty or all whitespace);
    the reason, one of `LOST_VALUE`, for a span that cannot be placed. Rejections are counted."""
    try:
        start, end = _as_offset(start), _as_offset(end)
    except SpanError:
        audit.reject(source, "bad_offset_type")
        return "bad_offset_type"
    if start == end and 0 <= start <= len(text):
        audit.reject(source, "empty_span")
        return None
    if not (0 <= start < end <= len(text)):
        audit.reject(source, "out_of_range")
        return "out_of_range"
    if value is not None and text[start:end] != value:
        if value and text.count(value) == 1:
            start = text.index(value)
            end = start + len(value)
            audit.note(source, "repaired_offset")
        else:
            audit.reject(source, "value_mismatch")
            return "value_mismatch"
    stripped_start, stripped_end = start, end
    while stripped_start < stripped_end and text[stripped_start].isspace():
        stripped_start += 1
    while stripped_end > stripped_start and text[stripped_end - 1].isspace():
        stripped_end -= 1
    if stripped_start == stripped_end:
        audit.reject(source, "whitespace_span")
        return None
    if (stripped_start, stripped_end) != (start, end):
        audit.note(source, "trimmed_whitespace")
    return stripped_start, stripped_end


# Types whose values are names: written in running text, they never end in sentence punctuation.
_NAME_TYPES = frozenset({"PERSON", "LOCATION", "ORGANIZATION"})
_CLOSERS = {")": "(", "]": "[", '"': '"', "\u201d": "\u201c", "\u2019": "\u2018", "'": "'"}
# Abbreviated titles: one written before a name joins the PERSON span (`join_titles`), and its "." is its own.
_TITLES = ("Dr", "Drs", "Mr", "Mrs", "Ms", "Mx", "Prof", "Rev", "Fr", "Sr", "Jr", "Capt", "Sgt", "Lt", "Gen", "Hon")
# Words whose final "." belongs to them (abbreviations that end company, street and person names).
_ABBREVIATIONS = frozenset({t.lower() for t in _TITLES} | {
                            "inc", "ltd", "co", "corp", "st", "rd", "ave", "mt", "bros", "plc", "llc", "univ", "dept",
                            "gov", "assn", "intl", "no", "ft", "pty", "vs", "col",
                            # US states as the AP and newspapers abbreviate them
                            "ala", "ariz", "ark", "calif", "cal", "colo", "conn", "del", "fla", "fl", "ga", "ill",
                            "ind", "kan", "ky", "la", "md", "mass", "mich", "minn", "miss", "mo", "mont", "neb",
                            "nev", "okla", "ore", "pa", "penn", "tenn", "tex", "va", "vt", "wash", "wis", "wyo"})


def trim_punctuation(text, start, end):
    """(start, end) of a name span without the sentence punctuation glued after it (the rule in the docstring);
    start == end when the span was punctuation only."""
    while end > start:
        last, before = text[end - 1], text[start:end - 1]
        word = before.split()[-1] if before.strip() else ""  # what a final "." ends ("Rd ." is "Rd." tokenized)
        if last.isspace() or last in ",:" or (last == ";" and not re.search(r"&#?\w+$", before)):  # not "&quot;"
            end -= 1
        elif last in _CLOSERS and _CLOSERS[last] not in before:
            end -= 1
        elif last == "." and not (word and word[-1] != "." and (
                word.lower() in _ABBREVIATIONS or "." in word or (len(word) == 1 and word.isalpha()))):
            end -= 1
        else:
            break
    return start, end


# Abbreviations that are also words or names ("Sean Penn.", "Cal.", "Miss."): a "." after one may only end the
# sentence, so `join_abbreviation_period` adds none (a period already in the span stays, as for any abbreviation).
_ALSO_WORDS = frozenset({"penn", "cal", "tex", "del", "miss", "wash", "ill", "ind", "mont", "ore", "la", "no"})
_JOINS_ITS_PERIOD = _ABBREVIATIONS - _ALSO_WORDS


def join_abbreviation_period(text, start, end):
    """(start, end) of a name span with the "." right after it when its last word is an abbreviation or an initial
    ("Acme Inc" + "." -> "Acme Inc."): a tokenizer split the period off and the corpus left it outside the name.
    The mirror of `trim_punctuation`'s rule, so every source writes "Inc." and "D." the same way."""
    word = text[start:end].split()[-1]
    if text[end:end + 1] == "." and (word.lower() in _JOINS_ITS_PERIOD or (len(word) == 1 and word.isupper())):
        end += 1
    return start, end


def _sensitivity(label):
    return -TIER_OF[label]


def resolve_overlaps(spans, audit, source):
    """Keep a non-overlapping subset of ``spans`` (dicts), by the rule in the module docstring."""
    ordered = sorted(spans, key=lambda s: (s["start"], -(s["end"] - s["start"]), TIER_OF[s["label"]]))
    kept = []
    for span in ordered:
        if kept and span["start"] < kept[-1]["end"]:
            previous = kept[-1]
            if (span["start"], span["end"]) == (previous["start"], previous["end"]):
                audit.reject(source, "duplicate_span" if span["label"] == previous["label"] else "overlap_dropped")
                continue
            span_key = (span["end"] - span["start"], _sensitivity(span["label"]))
            previous_key = (previous["end"] - previous["start"], _sensitivity(previous["label"]))
            audit.reject(source, "overlap_dropped")
            if span_key > previous_key:
                # Safe: every kept span before ``previous`` ends at or before ``previous`` starts.
                kept[-1] = span
            continue
        kept.append(span)
    return kept


# A title written just before a name belongs to the PERSON span ("Dr. Alan Turing"), as GUM and the synthetic
# data write it; presidio-research tags it apart (TITLE, not PII here). Upper-case text writes "DR RUSSO", and
# notes and chat "dr. lindquist": each joins too, or one corpus follows two conventions. In lower case only the
# titles that are no other word ("miss Anna" is a verb, "fr" is "for real").
_WORD_TITLES = ("Miss", "Sir", "Dame", "Lord", "Lady")
_LOWER_CASE_TITLES = ("dr", "drs", "mr", "mrs", "ms", "mx", "prof")


def _either_case(words):
    return "|".join(sorted({form for w in words for form in (w, w.upper())}, key=len, reverse=True))


# A title's "." may run on into the name ("dr.ayoub"); without a "." a space stands between them.
_TITLE_BEFORE = re.compile(rf"\b(?:(?:{_either_case(_TITLES)}|{'|'.join(_LOWER_CASE_TITLES)})(?:\.|\.? )"
                           rf"|(?:{_either_case(_WORD_TITLES)}) )$")


def join_titles(text, spans, audit, source):
    """PERSON spans extended over a title just before them (counted, ``title_joined_to_PERSON``)."""
    out = []
    for span in spans:
        title = _TITLE_BEFORE.search(text, max(0, span["start"] - 8), span["start"])
        if span["label"] == "PERSON" and title and (not out or out[-1]["end"] <= title.start()):
            span = {**span, "start": title.start()}
            audit.note(source, "title_joined_to_PERSON")
        out.append(span)
    return out


def _join_neighbours(text, spans, types, gap):
    """`spans` (sorted, non-overlapping) with each span of a type in `types` joined to the one before it where that
    has the same type and only `gap` (a compiled pattern, matched whole) stands between them."""
    out = []
    for span in spans:
        previous = out[-1] if out else None
        if (previous and span["label"] in types and previous["label"] == span["label"]
                and gap.fullmatch(text[previous["end"]:span["start"]])):
            out[-1] = {**previous, "end": span["end"]}
        else:
            out.append(dict(span))
    return out


def merge_parts(text, spans):
    """Merge name parts into PERSON and address parts into STREET_ADDRESS (sorted, non-overlapping input)."""
    merged = _join_neighbours(text, spans, {"PERSON"}, _NAME_GAP)

    out = []
    i = 0
    while i < len(merged):
        j = i
        if merged[i]["label"] in ("STREET_ADDRESS", "LOCATION"):
            while (
                j + 1 < len(merged)
                and merged[j + 1]["label"] in ("STREET_ADDRESS", "LOCATION")
                and _ADDRESS_GAP.fullmatch(text[merged[j]["end"]:merged[j + 1]["start"]])
            ):
                j += 1
        chain = merged[i:j + 1]
        if j > i and any(s["label"] == "STREET_ADDRESS" for s in chain):
            out.append({"start": chain[0]["start"], "end": chain[-1]["end"], "label": "STREET_ADDRESS"})
        else:
            out.extend(chain)
        i = j + 1
    return out


# Tools where a labeller clicks word by word export "Holy Cross" as two places and "July 29th" as two dates. Such
# parts, of one type and apart by spaces, nothing or one hyphen ("Kessler-Adventist"), are one entity as every other
# corpus writes it; never across a line break or other punctuation ("10/29. 10/30" stays two dates).
_WORD_GAP = re.compile(r" *|-")


def word_parts(text, spans):
    """Pairs of neighbouring spans (sorted, non-overlapping) of one type that only a word gap parts."""
    return [(a, b) for a, b in zip(spans, spans[1:])
            if a["label"] == b["label"] and _WORD_GAP.fullmatch(text[a["end"]:b["start"]])]


def join_word_parts(text, spans, types):
    """Spans of a type in `types` joined with their neighbour of the same type across a word gap (`word_parts`)."""
    return _join_neighbours(text, spans, types, _WORD_GAP)


def clean_record(record, audit):
    """Validate one raw record from an adapter; return the unified record or None (the reason is counted).

    ``record`` holds id, source, text, group, split and ``spans``: dicts with start, end, label (canonical type)
    and optionally ``value`` (the surface string the source claims is at start:end).
    """
    source = record["source"]
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        audit.reject_record(source, "missing_or_empty_text")
        return None
    spans, not_pii, unjudged = [], [], []
    for raw in record.get("spans") or ():
        label = raw.get("label")
        if label == NOT_PII or raw.get("unjudged"):
            # Unplaceable, it is left out: the text then holds nothing the record would teach wrongly.
            placed = place_span(text, raw.get("start"), raw.get("end"), raw.get("value"), audit, source)
            if placed is not None and placed not in LOST_VALUE:
                (unjudged if raw.get("unjudged") else not_pii).append({"start": placed[0], "end": placed[1]})
            continue
        if label not in _PII_TYPE_SET:
            raise ValueError(f"adapter for {source!r} produced non-canonical label {label!r}")
        placed = place_span(text, raw.get("start"), raw.get("end"), raw.get("value"), audit, source)
        if placed in LOST_VALUE:
            # The value is somewhere in the text: kept without its span, the record would teach that it is not PII.
            audit.reject_record(source, f"span_{placed}")
            return None
        if placed is not None and label in _NAME_TYPES:
            trimmed = trim_punctuation(text, *placed)
            if trimmed[0] == trimmed[1]:
                audit.reject(source, "punctuation_span")
                trimmed = None
            elif trimmed != placed:
                audit.note(source, "trimmed_punctuation")
            elif (joined := join_abbreviation_period(text, *placed)) != placed:
                audit.note(source, "abbreviation_period_joined")
                trimmed = joined
            placed = trimmed
        if placed is not None:
            spans.append({"start": placed[0], "end": placed[1], "label": label})
    spans = merge_parts(text, join_titles(text, resolve_overlaps(spans, audit, source), audit, source))
    kept = [s for s in not_pii if not any(s["start"] < p["end"] and p["start"] < s["end"] for p in spans)]
    for _ in range(len(not_pii) - len(kept)):
        audit.reject(source, "not_pii_span_over_pii")
    judged = spans + kept
    open_spans = [s for s in unjudged if not any(s["start"] < p["end"] and p["start"] < s["end"] for p in judged)]
    if len(open_spans) < len(unjudged):  # a calendar date holding a year: the date is judged, and wins
        audit.note(source, "unjudged_span_inside_judged", len(unjudged) - len(open_spans))
    out = {
        "id": str(record["id"]),
        "source": source,
        "text": text,
        "spans": spans,
        "group": str(record.get("group") or record["id"]),
        "split": record["split"],
        "labelled_types": _labelled_types(record.get("labelled_types")),
        "not_pii_spans": sorted(kept, key=lambda s: s["start"]),
        "unjudged_spans": union_of(open_spans),
    }
    return out


def union_of(stretches):
    """Overlapping or touching character ranges joined into one, sorted: nested mentions ("the morning of that
    day" around "that day") give one stretch."""
    out = []
    for s in sorted(stretches, key=lambda s: (s["start"], s["end"])):
        if out and s["start"] <= out[-1]["end"]:
            out[-1]["end"] = max(out[-1]["end"], s["end"])
        else:
            out.append({"start": s["start"], "end": s["end"]})
    return out


def _range_problem(text, start, end):
    """Why `start`, `end` are not the offsets of a character range of `text`, or None."""
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
        return "offset_not_an_integer"
    if not 0 <= start < end <= len(text):
        return "span_out_of_range"
    return None


def span_problem(text, spans, types=_PII_TYPE_SET):
    """Why `spans` cannot label `text`, or None: each span a dict with integer `start < end` inside the text and a
    `label` in `types` (None: any non-empty name), and no two overlapping (in any order; sort by start before use)."""
    if not isinstance(text, str):
        return "text_not_a_string"
    if not isinstance(spans, (list, tuple)):
        return "spans_not_a_list"
    placed = []
    for span in spans:
        if not isinstance(span, dict):
            return "span_not_an_object"
        start, end, label = span.get("start"), span.get("end"), span.get("label")
        problem = _range_problem(text, start, end)
        if problem:
            return problem
        if not (label in types if types is not None else isinstance(label, str) and label):
            return "unknown_label"
        placed.append((start, end))
    placed.sort()
    if any(nxt[0] < prev[1] for prev, nxt in zip(placed, placed[1:])):
        return "overlapping_spans"
    return None


ANNOTATION_FIELDS = ("labelled_types", "not_pii_spans", "unjudged_spans")


def annotation_problem(text, record, types=_PII_TYPE_SET):
    """Why a record's optional annotation fields cannot be read, or None: ``labelled_types`` null or a list of names
    in `types` (None: any name; a bare string would be read letter by letter), ``not_pii_spans`` and
    ``unjudged_spans`` null or lists of ``{"start", "end"}`` with integer ``0 <= start < end <= len(text)``."""
    labelled = record.get("labelled_types")
    if labelled is not None and (not isinstance(labelled, (list, tuple))
                                 or not all(isinstance(t, str) and (types is None or t in types) for t in labelled)):
        return "labelled_types_not_a_list_of_types"
    for field in ANNOTATION_FIELDS[1:]:
        stretches = record.get(field)
        if stretches is None:
            continue
        if not isinstance(stretches, (list, tuple)) or not all(
                isinstance(s, dict) and _range_problem(text, s.get("start"), s.get("end")) is None for s in stretches):
            return f"{field}_not_character_ranges_of_the_text"
    return None


def _labelled_types(types):
    """The types a record's annotation covers, sorted (None: every type, as in the synthetic data)."""
    if types is None:
        return None
    unknown = set(types) - _PII_TYPE_SET
    if unknown:
        raise ValueError(f"labelled_types names non-canonical types {sorted(unknown)}")
    return sorted(set(types))


def check_record(record):
    """Raise ValueError when a unified record breaks an invariant (used by tests and the builder's final pass):
    `span_problem` (over the spans, the not-PII spans and the unjudged spans together: none overlaps another), plus
    spans sorted and without surrounding whitespace."""
    marked = [{**span, "label": NOT_PII} for span in record.get("not_pii_spans") or ()]
    marked += [{**span, "label": NOT_PII} for span in record.get("unjudged_spans") or ()]
    problem = span_problem(record["text"], record["spans"] + marked, _PII_TYPE_SET | {NOT_PII})
    if problem:
        raise ValueError(f"{record['id']}: {problem} in {record['spans'] + marked}")
    text = record["text"]
    previous_end = 0
    for span in record["spans"]:
        start, end = span["start"], span["end"]
        if start < previous_end:
            raise ValueError(f"{record['id']}: span {span} out of order")
        if text[start].isspace() or text[end - 1].isspace():
            raise ValueError(f"{record['id']}: span {span} has surrounding whitespace")
        previous_end = end
