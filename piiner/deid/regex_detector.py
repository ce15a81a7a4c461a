"""A few regular expressions with the detector interface, for smoke tests and for benchmarking the streaming
machinery without a model (``piiner-redact --detector regex``). Not a PII detector: it finds only well-formed
emails, SSNs, card numbers, IPv4 addresses and US-style phone numbers."""

import re

from piiner.pii_schema import TIER_OF

PATTERNS = (
    ("EMAIL", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    ("SSN", r"\b\d{3}-\d{2}-\d{4}\b"),
    ("CREDIT_CARD", r"\b(?:\d{4}[ -]?){3}\d{1,4}\b"),
    ("IP_ADDRESS", r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),
    ("PHONE", r"(?:\+1[ -]?)?\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b"),
)
# One alternation, scanned once: at each position the first pattern that matches wins, so matches never overlap.
COMBINED = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in PATTERNS))


class RegexDetector:
    """Callable: list of texts -> list of entity dicts per text."""

    def __call__(self, texts):
        return [self.find(text) for text in texts]

    @staticmethod
    def find(text):
        return [{"type": m.lastgroup, "tier": TIER_OF[m.lastgroup], "score": 1.0, "start": m.start(), "end": m.end(),
                 "word": m.group()} for m in COMBINED.finditer(text)]
