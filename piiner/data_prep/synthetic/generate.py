"""Render templates into labeled records, deterministically for a seed.

Each record gets its own ``random.Random`` seeded from ``(seed, type, index)`` and reseeds the shared Faker
instance from it, so record k is the same whatever was generated before it and whatever ``per_type`` is.
The split is drawn first (80/10/10) and every template in the record comes from that split's templates, so
validation and test texts never reuse a training template (``group`` lists the template ids used).
"""

import random
import re

import faker

from piiner.pii_schema import PII_TYPES

from .templates import NEGATIVE_TEMPLATES, TEMPLATES, template_split
from .values import GENERATORS, NEGATIVES

SOURCE = "synthetic"
SPLIT_WEIGHTS = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
_SLOT = re.compile(r"<([A-Z_]+|neg:[a-z]+)>")
# Punctuation glued to a value, as people write it: "(john@x.com)", "\"4111...\"", "[Jane Doe]".
_WRAPPERS = (("(", ")"), ('"', '"'), ("[", "]"), ("'", "'"), ("<", ">"), ("*", "*"))
_JOINERS = (" ", " ", "\n", "\n\n", "\t", " | ", " - ", "\r\n")


def _parse(template):
    pieces, pos = [], 0
    for m in _SLOT.finditer(template):
        if m.start() > pos:
            pieces.append((None, template[pos:m.start()]))
        slot = m.group(1)
        if not slot.startswith("neg:") and slot not in GENERATORS:
            raise ValueError(f"template {template!r} names unknown type {slot!r}")
        if slot.startswith("neg:") and slot[4:] not in NEGATIVES:
            raise ValueError(f"template {template!r} names unknown negative {slot!r}")
        pieces.append((slot, None))
        pos = m.end()
    if pos < len(template):
        pieces.append((None, template[pos:]))
    return pieces


class Template:
    __slots__ = ("template_id", "split", "pieces", "text")

    def __init__(self, template_id, split, text):
        self.template_id, self.split, self.text = template_id, split, text
        self.pieces = _parse(text)


def all_templates():
    """{type or "negative": [Template, ...]} with split assignments (see ``templates.template_split``)."""
    out = {}
    for pii_type in PII_TYPES:
        texts = TEMPLATES[pii_type]
        out[pii_type] = [Template(f"{pii_type}/{i}", template_split(i, len(texts)), t) for i, t in enumerate(texts)]
    out["negative"] = [Template(f"negative/{i}", template_split(i, len(NEGATIVE_TEMPLATES)), t)
                       for i, t in enumerate(NEGATIVE_TEMPLATES)]
    return out


class SyntheticGenerator:
    """``SyntheticGenerator(seed).records(per_type)`` yields raw records for all 41 types plus hard negatives."""

    def __init__(self, seed=0, compose_probability=0.35, max_templates=3, negative_fraction=0.1,
                 wrap_probability=0.08, case_probability=0.06):
        self.seed = seed
        self.compose_probability = compose_probability
        self.max_templates = max_templates
        self.negative_fraction = negative_fraction
        self.wrap_probability = wrap_probability
        self.case_probability = case_probability
        self.templates = all_templates()
        self.by_split = {s: [t for pii_type in PII_TYPES for t in self.templates[pii_type] if t.split == s]
                         for s, _ in SPLIT_WEIGHTS}
        self.fake = faker.Faker("en_US")

    def _draw_split(self, rng):
        r = rng.random()
        for split, weight in SPLIT_WEIGHTS:
            if r < weight:
                return split
            r -= weight
        return SPLIT_WEIGHTS[-1][0]

    def _render(self, template, rng, parts, spans, offset):
        for slot, literal in template.pieces:
            if literal is not None:
                parts.append(literal)
                offset += len(literal)
                continue
            if slot.startswith("neg:"):
                value = NEGATIVES[slot[4:]](rng, self.fake)
                parts.append(value)
                offset += len(value)
                continue
            value = GENERATORS[slot](rng, self.fake)
            if rng.random() < self.wrap_probability:
                left, right = rng.choice(_WRAPPERS)
            else:
                left = right = ""
            parts.append(left + value + right)
            start = offset + len(left)
            spans.append({"start": start, "end": start + len(value), "label": slot, "value": value})
            offset += len(left) + len(value) + len(right)
        return offset

    def make_record(self, kind, index):
        """One record: ``kind`` is a PII type (the template's main subject) or "negative"."""
        rng = random.Random(f"{self.seed}/{kind}/{index}")
        self.fake.seed_instance(rng.getrandbits(64))
        split = self._draw_split(rng)
        first = rng.choice([t for t in self.templates[kind] if t.split == split])
        used = [first]
        parts, spans = [], []
        offset = self._render(first, rng, parts, spans, 0)
        # Each further template with compose_probability, up to max_templates: texts with several entities.
        while kind != "negative" and len(used) < self.max_templates and rng.random() < self.compose_probability:
            following = rng.choice(self.by_split[split])
            if following in used:
                following = rng.choice(self.by_split[split])
            used.append(following)
            joiner = rng.choice(_JOINERS)
            parts.append(joiner)
            offset = self._render(following, rng, parts, spans, offset + len(joiner))
        text = "".join(parts)
        r = rng.random()
        if r < self.case_probability:
            changed = text.lower() if r < self.case_probability * 0.7 else text.upper()
            if len(changed) == len(text):  # some code points change length under case mapping
                text = changed
                for span in spans:
                    span["value"] = text[span["start"]:span["end"]]
        return {
            "id": f"{SOURCE}-{kind}-{index}",
            "source": SOURCE,
            "text": text,
            "spans": spans,
            "group": "+".join(t.template_id for t in used),
            "split": split,
        }

    def records(self, per_type):
        for pii_type in PII_TYPES:
            for i in range(per_type):
                yield self.make_record(pii_type, i)
        for i in range(round(per_type * len(PII_TYPES) * self.negative_fraction)):
            yield self.make_record("negative", i)
