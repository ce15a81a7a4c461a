"""Render templates into labeled records, deterministically for a seed.

Each record gets its own ``random.Random`` seeded from ``(seed, type, index)`` and reseeds the shared Faker
instance from it, so record k is the same whatever was generated before it and whatever ``per_type`` is.
The split is drawn first (80/10/10) and every template in the record comes from that split's templates, so
validation and test texts never reuse a training template (``group`` lists the template ids used).

What real text varies, records vary: a record may join two or three templates, or repeat one (a log, a form
letter), and joined templates may run on as one sentence ("...; SSN on file ..."); its letter case may be all upper
(forms, clinical notes) or all lower (chat); its words may carry typos and OCR confusions (the values keep their
layout, so labels stay exact). Real texts carry generated PII too: some records are set into a human-labelled
text, and each training text that names a person, place or organization comes once more with those names replaced.
``formats_records`` writes the formats test set: the held-out layouts of each
identifier (``values.py``) in frames no other record uses; ``dense_records`` the dense test set: four to seven
test-split templates in one text.
"""

import random
import re

import faker

from piiner.hub.pii_schema import PII_TYPES

from ..records import NOT_PII
from ..sources.conll import NER_LABELLED_TYPES
from .templates import FORMAT_TEMPLATES, NEGATIVE_TEMPLATES, TEMPLATES, template_split
from .values import COORDINATED, GENERATORS, NEGATIVES, coordinated, takes_article

SOURCE = "synthetic"
FORMATS_SOURCE = "formats"
DENSE_SOURCE = "dense"
SPLIT_WEIGHTS = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
_SLOT = re.compile(r"<([A-Z_]+|neg:[a-z]+)>")
# Punctuation glued to a value, as people write it: "(john@x.com)", "\"4111...\"", "[Jane Doe]".
_WRAPPERS = (("(", ")"), ('"', '"'), ("[", "]"), ("'", "'"), ("<", ">"), ("*", "*"))
_JOINERS = (" ", " ", "\n", "\n\n", "\t", " | ", " - ", "\r\n")
# Two statements made one sentence: "Her card ... was declined; SSN on file ...".
_CLAUSE_JOINERS = ("; ", ", ", " and ", " - ", ": ")
# A lower-case word and a space before a slot ("a nurse at ", "fined by "): where "the" goes before a name that takes
# one, unless the word already is a determiner.
_WORD_BEFORE = re.compile(r"(?:^|\s)([a-z]+) $")
_DETERMINERS = frozenset(("the", "a", "an", "my", "our", "your", "his", "her", "their", "its", "this", "that"))
# Characters OCR confuses and the keys typists hit instead.
_OCR = {"l": "1", "1": "l", "O": "0", "0": "O", "o": "0", "e": "c", "m": "rn", "S": "5", "B": "8", "I": "l", "g": "q"}


def noisy(rng, literal, rate):
    """`literal` with typos and OCR confusions at about `rate` per letter: swapped, dropped, doubled or misread."""
    out, i = [], 0
    while i < len(literal):
        ch = literal[i]
        r = rng.random()
        if not ch.isalpha() or r >= rate:
            out.append(ch)
        elif r < rate * 0.3 and i + 1 < len(literal) and literal[i + 1].isalpha():
            out.append(literal[i + 1] + ch)
            i += 1
        elif r < rate * 0.5:
            pass  # dropped
        elif r < rate * 0.65:
            out.append(ch + ch)
        else:
            out.append(_OCR.get(ch, ch))
        i += 1
    return "".join(out)


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


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def set_into(record, carrier, rng):
    """`record`'s text set into a real text between two of its sentences (or before or after it): real prose around
    the PII. The carrier's annotation covers only some types, so the record's ``labelled_types`` are the carrier's
    plus the types placed in it; the group names both, so neither crosses a split. The carrier's not-PII and
    unjudged spans move with it (as an adapter gives them: spans labelled ``NOT_PII``, the latter ``unjudged``)."""
    text = carrier["text"]
    carried = _carried_spans(carrier)
    cut = rng.choice([0, len(text)] + [m.end() for m in _SENTENCE_END.finditer(text)])
    if any(s["start"] < cut < s["end"] for s in carried):
        cut = len(text)
    before, after = text[:cut].rstrip(), text[cut:].lstrip()
    left = before + rng.choice((" ", "\n")) if before else ""
    right = rng.choice((" ", "\n")) + after if after else ""
    # Carrier spans after the cut move by the inserted text (and the whitespace the join replaced).
    moved = len(left) + len(record["text"]) + len(right) - len(after) - (cut + len(text[cut:]) - len(after))
    spans = [dict(s) if s["end"] <= cut else {**s, "start": s["start"] + moved, "end": s["end"] + moved}
             for s in carried]
    spans += [{**s, "start": s["start"] + len(left), "end": s["end"] + len(left)} for s in record["spans"]]
    types = {s["label"] for s in record["spans"]} | set(carrier["labelled_types"])
    return {**record, "text": left + record["text"] + right, "spans": sorted(spans, key=lambda s: s["start"]),
            "group": f"{record['group']}+{carrier['group']}", "labelled_types": sorted(types)}


def _carried_spans(carrier):
    """A real record's spans, its not-PII spans (label ``NOT_PII``) and its unjudged ones (also marked unjudged)."""
    carried = carrier["spans"] + [{**s, "label": NOT_PII} for s in carrier.get("not_pii_spans") or ()]
    return carried + [{**s, "label": NOT_PII, "unjudged": True} for s in carrier.get("unjudged_spans") or ()]


def _in_case_of(value, mention):
    """`value` written in `mention`'s letter case where that is all lower or all upper ("london", "LONDON")."""
    if mention.islower():
        return value.lower()
    return value.upper() if mention.isupper() and len(mention) > 1 else value


def renamed(carrier, rng, fake):
    """`carrier`, a real text, with each person, place and organization it names replaced by a generated one of the
    same type in the mention's letter case: real sentences around names its corpus never held. Every other span
    moves with the text; the record is None when the carrier names none of them."""
    text, pieces, spans, pos, length = carrier["text"], [], [], 0, 0
    mentions = sorted(_carried_spans(carrier), key=lambda s: s["start"])
    if not any(s["label"] in NER_LABELLED_TYPES for s in mentions):
        return None
    for span in mentions:
        mention = text[span["start"]:span["end"]]
        new = span["label"] in NER_LABELLED_TYPES
        value = _in_case_of(GENERATORS[span["label"]](rng, fake), mention) if new else mention
        pieces += [text[pos:span["start"]], value]
        start = length + span["start"] - pos
        spans.append({**span, "start": start, "end": start + len(value), **({"value": value} if new else {})})
        pos, length = span["end"], start + len(value)
    pieces.append(text[pos:])
    return {"id": f"{SOURCE}-renamed-{carrier['id']}", "source": SOURCE, "text": "".join(pieces), "spans": spans,
            "group": f"renamed+{carrier['group']}", "split": carrier["split"],
            "labelled_types": list(carrier["labelled_types"])}


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
                 wrap_probability=0.08, case_probability=0.15, noise_probability=0.08, noise_rate=0.04,
                 repeat_probability=0.04, carrier_probability=0.15, clause_probability=0.4, dense_templates=(4, 7),
                 coordinate_probability=0.12):
        self.seed = seed
        self.compose_probability = compose_probability
        self.max_templates = max_templates
        self.negative_fraction = negative_fraction
        self.wrap_probability = wrap_probability
        self.case_probability = case_probability
        self.noise_probability = noise_probability
        self.noise_rate = noise_rate
        self.repeat_probability = repeat_probability
        self.carrier_probability = carrier_probability
        self.clause_probability = clause_probability
        self.dense_templates = dense_templates
        self.coordinate_probability = coordinate_probability
        self.templates = all_templates()
        self.by_split = {s: [t for pii_type in PII_TYPES for t in self.templates[pii_type] if t.split == s]
                         for s, _ in SPLIT_WEIGHTS}
        self.fake = faker.Faker("en_US")

    def _record_rng(self, key):
        """The random source of one record, seeded from (seed, key), with Faker reseeded from it: a record is the
        same whatever was generated before it."""
        rng = random.Random(f"{self.seed}/{key}")
        self.fake.seed_instance(rng.getrandbits(64))
        return rng

    def _draw_split(self, rng):
        r = rng.random()
        for split, weight in SPLIT_WEIGHTS:
            if r < weight:
                return split
            r -= weight
        return SPLIT_WEIGHTS[-1][0]

    def _render(self, template, rng, parts, spans, offset, noise=0.0, held_out=False):
        for slot, literal in template.pieces:
            if literal is not None:
                literal = noisy(rng, literal, noise) if noise else literal
                parts.append(literal)
                offset += len(literal)
                continue
            if slot.startswith("neg:"):
                value = NEGATIVES[slot[4:]](rng, self.fake)
                parts.append(value)
                offset += len(value)
                continue
            value = GENERATORS[slot](rng, self.fake, held_out=held_out)
            left, right = rng.choice(_WRAPPERS) if rng.random() < self.wrap_probability else ("", "")
            pieces = self._coordinated(slot, rng, held_out) or [value]
            before = _WORD_BEFORE.search(parts[-1]) if parts else None
            if before and before.group(1) not in _DETERMINERS and takes_article(slot, pieces[0]):
                # outside the span, as the human-labelled corpora mark it, and never inside quotes or brackets;
                # decided without a random draw, so the rest of the record is drawn as without it
                parts.append("the ")
                offset += 4
                left = right = ""
            parts.append(left + "".join(pieces) + right)
            offset += len(left)
            for i, piece in enumerate(pieces):
                if i % 2 == 0:
                    spans.append({"start": offset, "end": offset + len(piece), "label": slot, "value": piece})
                offset += len(piece)
            offset += len(right)
        return offset

    def _coordinated(self, slot, rng, held_out):
        """With coordinate_probability, several names of the slot's type in place of its value (or None; never in
        a held-out layout, which the formats set keeps as it is). Decided and drawn from a random source of its own,
        seeded from `rng`'s state, and Faker's state is put back after: the record draws every other value as it
        would without this, so the rest of the corpus does not move."""
        if held_out or slot not in COORDINATED:
            return None
        side = random.Random(f"coordinated/{rng.getstate()}")
        if side.random() >= self.coordinate_probability:
            return None
        state = self.fake.random.getstate()
        try:
            return coordinated(slot, side, self.fake)
        finally:
            self.fake.random.setstate(state)

    def make_record(self, kind, index, carriers=None):
        """One record: ``kind`` is a PII type (the template's main subject) or "negative". With `carriers` ({split:
        human-labelled real records}), some records set their PII into a real text of their split."""
        rng = self._record_rng(f"{kind}/{index}")
        split = self._draw_split(rng)
        first = rng.choice([t for t in self.templates[kind] if t.split == split])
        used = [first]
        parts, spans = [], []
        noise = self.noise_rate if rng.random() < self.noise_probability else 0.0
        offset = self._render(first, rng, parts, spans, 0, noise)
        if rng.random() < self.repeat_probability:
            # The same frame again and again with new values (a log, a roster, boilerplate): repeated text must
            # not read as an entity by itself.
            joiner = rng.choice(("\n", "\n", " "))
            for _ in range(rng.randint(2, 7)):
                parts.append(joiner)
                offset = self._render(first, rng, parts, spans, offset + len(joiner), noise)
        if kind != "negative":
            # Each further template with compose_probability, up to max_templates: texts with several entities.
            self._compose(rng, split, used, parts, spans, offset, noise,
                          lambda: len(used) < self.max_templates and rng.random() < self.compose_probability)
        record = self._record(f"{SOURCE}-{kind}-{index}", SOURCE, parts, spans, used, split, rng)
        pool = (carriers or {}).get(split)
        if pool and kind != "negative" and rng.random() < self.carrier_probability:
            record = set_into(record, pool[rng.randrange(len(pool))], rng)
        return record

    def _compose(self, rng, split, used, parts, spans, offset, noise, more):
        """Templates of `split` after the ones `used`, one more while `more()` says so, each joined by whitespace or
        a separator, or run on as one sentence."""
        while more():
            following = rng.choice(self.by_split[split])
            if following in used:
                following = rng.choice(self.by_split[split])
            used.append(following)
            joiner = rng.choice(_JOINERS)
            if rng.random() < self.clause_probability:
                joiner = rng.choice(_CLAUSE_JOINERS)
                if parts[-1].endswith(".") and not (spans and spans[-1]["end"] == offset):
                    parts[-1], offset = parts[-1][:-1], offset - 1  # the sentence goes on; a value keeps its dot
            parts.append(joiner)
            offset = self._render(following, rng, parts, spans, offset + len(joiner), noise)

    def _record(self, record_id, source, parts, spans, used, split, rng):
        text = "".join(parts)
        r = rng.random()
        if r < self.case_probability:
            changed = text.lower() if r < self.case_probability * 0.5 else text.upper()
            if len(changed) == len(text):  # some code points change length under case mapping
                text = changed
                for span in spans:
                    span["value"] = text[span["start"]:span["end"]]
        return {
            "id": record_id,
            "source": source,
            "text": text,
            "spans": spans,
            "group": "+".join(t.template_id for t in used),
            "split": split,
        }

    def formats_records(self, per_type):
        """The formats test set: per type, `per_type` records of its held-out layouts in its held-out frames."""
        for pii_type, frames in FORMAT_TEMPLATES.items():
            templates = [Template(f"formats/{pii_type}/{i}", "test", t) for i, t in enumerate(frames)]
            for index in range(per_type):
                rng = self._record_rng(f"formats/{pii_type}/{index}")
                template = rng.choice(templates)
                parts, spans = [], []
                self._render(template, rng, parts, spans, 0, held_out=True)
                yield self._record(f"{FORMATS_SOURCE}-{pii_type}-{index}", FORMATS_SOURCE, parts, spans, [template],
                                   "test", rng)

    def dense_records(self, count):
        """The dense test set: `count` records of four to seven test-split templates each (no training template)."""
        for index in range(count):
            rng = self._record_rng(f"dense/{index}")
            used = [rng.choice(self.by_split["test"])]
            parts, spans = [], []
            noise = self.noise_rate if rng.random() < self.noise_probability else 0.0
            offset = self._render(used[0], rng, parts, spans, 0, noise)
            total = rng.randint(*self.dense_templates)
            self._compose(rng, "test", used, parts, spans, offset, noise, lambda: len(used) < total)
            yield self._record(f"{DENSE_SOURCE}-{index}", DENSE_SOURCE, parts, spans, used, "test", rng)

    def records(self, per_type, carriers=None):
        """Records of every type and the hard negatives; with `carriers`, also each real training text that names a
        person, place or organization once more with those names replaced (`renamed`)."""
        for pii_type in PII_TYPES:
            for i in range(per_type):
                yield self.make_record(pii_type, i, carriers)
        for i in range(round(per_type * len(PII_TYPES) * self.negative_fraction)):
            yield self.make_record("negative", i)
        for carrier in (carriers or {}).get("train", ()):
            record = renamed(carrier, self._record_rng(f"renamed/{carrier['id']}"), self.fake)
            if record is not None:
                yield record
