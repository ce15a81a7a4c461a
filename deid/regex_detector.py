"""A few regular expressions with the detector interface, for smoke tests and for benchmarking the streaming
machinery without a model (``redact.py --detector regex``). Not a PII detector: it finds only well-formed
emails, SSNs, card numbers, IPv4 addresses and US-style phone numbers."""

import re

from pii_schema import TIER_OF

PATTERNS = (
    ("EMAIL", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("SSN", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    ("CREDIT_CARD", re.compile(r"\b(?:\d{4}[ -]?){3}\d{1,4}\b")),
    ("IP_ADDRESS", re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")),
    ("PHONE", re.compile(r"(?:\+1[ -]?)?\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b")),
)


class RegexDetector:
    """Callable: list of texts -> list of entity dicts per text (first pattern wins where matches overlap)."""

    def __call__(self, texts):
        return [self.find(text) for text in texts]

    @staticmethod
    def find(text):
        taken, entities = [], []
        for pii_type, pattern in PATTERNS:
            for m in pattern.finditer(text):
                if any(m.start() < end and start < m.end() for start, end in taken):
                    continue
                taken.append(m.span())
                entities.append({"type": pii_type, "tier": TIER_OF[pii_type], "score": 1.0, "start": m.start(),
                                 "end": m.end(), "word": m.group()})
        return sorted(entities, key=lambda e: e["start"])
