"""The pattern detector: regular expressions with the checks that make a match an identifier (Luhn for cards,
mod-97 for IBANs, the SSN issuing rules, IPv4 ranges) for the structured types; no names, places or organizations.
The regex baseline of the evaluation and the `--detector regex` of the tools both run it."""

import bisect
import operator
import re

from piiner.hub.checksums import fold_width, iban_valid
from piiner.hub.recognizers_piiner import card_issuer_valid, ssn_valid  # the one statement of each check
from piiner.hub.pii_schema import TIER_OF


# ---------------------------------------------------------------------------------------------------------------
# Checksums: a regex alone matches any 16 digits; the check digit is what makes a card number a card number.


def ipv4_valid(ip):
    return all(int(part) <= 255 and (part == "0" or not part.startswith("0")) for part in ip.split("."))


# ---------------------------------------------------------------------------------------------------------------
# Patterns, in priority order: when two matches overlap, the earlier pattern wins (a card number is not a phone
# number), then the longer match.

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_B58 = "[1-9A-HJ-NP-Za-km-z]"
_HEX4 = "[0-9A-Fa-f]{1,4}"
_IPV6 = rf"(?:{_HEX4}:){{7}}{_HEX4}|(?:{_HEX4}:){{1,7}}:(?:{_HEX4}(?::{_HEX4}){{0,6}})?"

# An SSN that failed the SSN rules is not a phone number either.
_SSN_SHAPE = re.compile(r"\d{3}([- ])\d{2}\1\d{4}")
# Words that, just before a number, say it is some identifier rather than a phone number.
_ID_CONTEXT = re.compile(
    r"(?:account|acct|iban|card|licen[cs]e|passport|student|employee|imei|serial|routing|policy|member|record"
    r"|mrn|device|tax|tin|ein|invoice|order|bank)\b[^\d\n]{0,30}$", re.IGNORECASE)
# A house number followed by a street name is an address, not a phone number.
_STREET_AFTER = re.compile(
    r" [^\n\d]{0,20}?\b(?:street|st|avenue|ave|road|rd|lane|ln|boulevard|blvd|drive|dr|way|court|ct|place|pl|rue)\b",
    re.IGNORECASE)
_BIRTH_CONTEXT = re.compile(r"(?:born|birth|dob|d\.o\.b\.?|birthday)\b[^\n]{0,15}$", re.IGNORECASE)


def _check(predicate):
    """Refiner that keeps a match when ``predicate(matched_text)`` holds."""
    return lambda text, start, end, span_type: span_type if predicate(text[start:end]) else None


def _phone(text, start, end, span_type):
    digits = sum(c.isdigit() for c in text[start:end])
    if not 7 <= digits <= 15 or _SSN_SHAPE.fullmatch(text[start:end]):
        return None
    if _ID_CONTEXT.search(text[max(0, start - 50):start]) or _STREET_AFTER.match(text, end):
        return None
    return span_type


def _date(text, start, end, span_type):
    return "DATE_OF_BIRTH" if _BIRTH_CONTEXT.search(text[max(0, start - 30):start]) else span_type


# (type, compiled pattern, refiner or None). A pattern with a group named "value" tags only that group (the
# keyword before it is context, not PII). A refiner gets (text, start, end, type) and returns the type to keep
# (possibly another one, as a date after "born" is a DATE_OF_BIRTH) or None to reject the match.
PATTERNS = [
    # Bounded repeats (RFC 5321 limits) keep a long run of word characters without "@" linear, not quadratic.
    ("EMAIL", re.compile(r"\b[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}\b"), None),
    ("URL", re.compile(r"\b(?:https?://|www\.)[^\s<>\"'*]+", re.IGNORECASE), None),
    ("CRYPTO_WALLET", re.compile(rf"\b(?:0x[0-9a-fA-F]{{40}}|bc1[02-9ac-hj-np-z]{{25,59}}|[13]{_B58}{{25,34}})\b"),
     None),
    ("IBAN", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b", re.IGNORECASE),
     _check(iban_valid)),
    ("CREDIT_CARD", re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"), _check(card_issuer_valid)),
    ("SSN", re.compile(r"(?<![\d-])\d{3}([- ])\d{2}\1\d{4}(?![\d-])"), _check(ssn_valid)),
    ("SSN", re.compile(r"(?<=SSN)[:#\s]*(?P<value>\d{9})\b", re.IGNORECASE), _check(ssn_valid)),
    ("IP_ADDRESS", re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])"), _check(ipv4_valid)),
    ("IP_ADDRESS", re.compile(rf"(?<![\w:])(?:{_IPV6})(?![\w:])"), _check(lambda m: m.count(":") >= 2)),
    ("SWIFT_CODE", re.compile(
        r"(?:SWIFT|BIC)(?: code)?[:\s#'\"<(\[]*\b(?P<value>[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?)\b", re.IGNORECASE),
     None),
    ("DATE", re.compile(
        r"(?<![\w./:-])(?:\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?"
        r"|\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})"
        rf"|{_MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? \d{{4}}|\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{_MONTH},? \d{{4}}"
        rf"|{_MONTH} \d{{4}})\b(?![-./:]\w)", re.IGNORECASE), _date),
    ("PHONE", re.compile(
        r"(?<![\w+-])(?:\+?\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,5}(?:[ .-]\d{2,8}){1,4}(?![\w-])"
        r"|(?<![\w+])\+\d{7,14}\b|\b\d{10}\b"), _phone),
]
assert all(t in TIER_OF for t, _, _ in PATTERNS)


def url_without_punctuation(url):
    """A URL without the sentence punctuation written after it ("see http://x.co/a." -> "http://x.co/a")."""
    return url.rstrip(".,;:!?)]}")


def regex_spans(text):
    """Non-overlapping PII spans found by the patterns above, sorted by start. Full-width forms are read as their
    ASCII (`fold_width`, one code point for one), as the model reads them."""
    text = fold_width(text)
    candidates = []
    for priority, (span_type, pattern, refine) in enumerate(PATTERNS):
        for m in pattern.finditer(text):
            start, end = m.span("value" if "value" in pattern.groupindex else 0)
            if span_type == "URL":
                end = start + len(url_without_punctuation(text[start:end]))
            kept = span_type if refine is None else refine(text, start, end, span_type)
            if kept:
                candidates.append((priority, -(end - start), start, end, kept))
    return non_overlapping((start, end, t) for _, _, start, end, t in sorted(candidates))


_START = operator.itemgetter(0)


def non_overlapping(spans_by_preference):
    """Greedily keep spans in the given order of preference, dropping any that overlaps a kept one (and any of no
    characters). The kept spans are held sorted: they are disjoint, so of those that start before a span ends, only
    the last can reach into it, and each span is checked by one binary search, not against every span kept."""
    kept = []
    for start, end, span_type in spans_by_preference:
        before = bisect.bisect_left(kept, end, key=_START)  # kept[:before] start before this span ends
        if start < end and not (before and kept[before - 1][1] > start):
            kept.insert(before, (start, end, span_type))
    return [{"start": s, "end": e, "label": t} for s, e, t in kept]


class RegexDetector:
    """`regex_spans` with the detector interface of the tools (texts -> entity dicts per text), score 1.0."""

    def __call__(self, texts):
        return [[{"type": s["label"], "tier": TIER_OF[s["label"]], "score": 1.0, "start": s["start"], "end": s["end"],
                  "word": text[s["start"]:s["end"]]} for s in regex_spans(text)] for text in texts]
