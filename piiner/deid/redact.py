"""Redaction API: detect PII with any detector, then replace each kept entity by a placeholder, a mask, a keyed
hash or a format-preserving surrogate, with the offsets of every entity in the original and in the new text.

    >>> from deid import Redactor
    >>> redactor = Redactor.from_pretrained("runs/quickstart", mode="surrogate", key=b"a secret")
    >>> result = redactor("Call John Smith at 555-0100.")
    >>> result.redacted_text, result.entities[0]["new_start"], result.entities[0]["replacement"]

A detector is any callable mapping a list of texts to one list of entity dicts per text, each with ``type``,
``tier``, ``score``, ``start``, ``end`` (character offsets, end-exclusive); the piiner token-classification
pipeline is one. The detector's offsets are the truth; its ``word`` is recomputed from the text.

Filters, applied in this order, each counted in ``RedactionResult.dropped`` under its reason:

- ``types``: keep only these PII types.
- ``min_tier=N``: keep entities of tier 1..N. Tier 1 is the MOST sensitive (SSN, cards), tier 4 the least, so
  ``min_tier=1`` keeps only tier 1 and ``min_tier=4`` (or None) keeps everything. An entity whose tier is unknown is
  kept: for redaction, over-covering is the safe error.
- ``tier_thresholds={tier: score}``: keep an entity only if its score is at least its tier's threshold.

Entities that overlap after filtering (a detector should not produce them; this defends against one that does)
are merged into one entity covering their union, typed after the most sensitive member (then highest score,
longest, earliest, type name), so no character a detector flagged is left in clear.
"""

import dataclasses
import numbers
import operator
import re
import secrets
from collections import Counter

from piiner.hub.pii_schema import PII_TYPES, TIER_OF

from .surrogates import SurrogateGenerator, keyed_digest

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
MODES = ("placeholder", "mask", "surrogate", "hash")
KEYED_MODES = ("surrogate", "hash")  # the modes whose replacements depend on the key
HASH_HEX_CHARS = 8


@dataclasses.dataclass
class RedactionResult:
    """One text's outcome. ``entities`` are dicts with ``type, tier, score, start, end, word`` (offsets into
    ``text``) and, after redaction, ``replacement, new_start, new_end`` (offsets into ``redacted_text``).
    ``redacted_text`` is None for detection only. ``dropped`` counts entities not redacted, by reason."""

    text: str
    redacted_text: "str | None"
    entities: list
    dropped: Counter = dataclasses.field(default_factory=Counter)


def validate_texts(texts):
    """``(list_of_texts, was_single)``; a TypeError naming the offending item for anything but str or a flat list
    (or tuple) of str."""
    if isinstance(texts, str):
        return [texts], True
    if isinstance(texts, (list, tuple)):
        for i, item in enumerate(texts):
            if not isinstance(item, str):
                raise TypeError(f"texts[{i}] must be a str, got {_describe(item)}")
        return list(texts), False
    raise TypeError(f"texts must be a str or a list of str, got {_describe(texts)}")


def _describe(value):
    if value is None:
        return "None"
    if isinstance(value, (bytes, bytearray)):
        return f"{type(value).__name__} (decode it to str first, e.g. value.decode('utf-8'))"
    if isinstance(value, (list, tuple)):
        return f"a nested {type(value).__name__} (pass a flat list of str)"
    return type(value).__name__


def detection_view(text):
    """The text the detector sees: lone surrogates (which no UTF-8 tokenizer accepts) become U+FFFD, one code
    point for one, so every offset is the same in the original text."""
    return LONE_SURROGATE.sub("\ufffd", text)


class Redactor:
    """Detection plus redaction with fixed settings; call it on a str or a list of str.

    Args:
        detector (callable): list of texts -> list (per text) of entity dicts.
        mode (str, defaults to "placeholder"): "placeholder" ("[EMAIL]"), "mask" ("*" per character), "surrogate"
            (a realistic fake of the same format) or "hash" ("[EMAIL:1a2b3c4d]", keyed HMAC-SHA256 prefix).
        types (iterable of str, optional): PII types to redact (names from ``pii_schema.PII_TYPES``); others kept.
        min_tier (int, optional): redact tiers 1..min_tier only (tier 1 = most sensitive).
        tier_thresholds (dict, optional): {tier: minimum score}; tiers not listed have no threshold.
        key (str or bytes, optional): secret for surrogates and hashes; the same key maps the same value to the same
            replacement across documents and runs. Without one, a random key is drawn per Redactor: consistent
            within everything this Redactor processes, unlinkable afterwards.
        batch_size (int, defaults to 8): texts per detector call.
    """

    def __init__(self, detector, mode="placeholder", types=None, min_tier=None, tier_thresholds=None, key=None,
                 batch_size=8):
        if not callable(detector):
            raise TypeError(f"detector must be callable (list of texts -> lists of entities), got {_describe(detector)}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.detector = detector
        self.mode = mode
        self.types = _check_types(types)
        self.min_tier = _check_tier(min_tier, "min_tier") if min_tier is not None else None
        self.tier_thresholds = _check_thresholds(tier_thresholds)
        self.key_is_ephemeral = key is None
        self._key = secrets.token_bytes(32) if key is None else _check_key(key)
        self._surrogates = SurrogateGenerator(self._key) if mode == "surrogate" else None
        self.batch_size = batch_size

    @classmethod
    def from_pretrained(cls, model_dir, device=None, pipeline_batch_size=8, evidence=None, **kwargs):
        """Build the piiner token-classification pipeline from a local folder or Hub id (offline when
        HF_HUB_OFFLINE=1) and wrap it. Weights load from safetensors only. `evidence`: recognizers and lists added
        to the model's own (`snapshot.load_evidence`)."""
        from piiner.snapshot import load_pipeline

        detector = load_pipeline(model_dir, device=device, batch_size=pipeline_batch_size, evidence=evidence)
        return cls(detector, **kwargs)

    # -- detection ---------------------------------------------------------------------------------------------

    def detect(self, texts):
        """Filtered, overlap-free entities per text (RedactionResult with ``redacted_text=None``)."""
        batch, single = validate_texts(texts)
        results = [RedactionResult(text, None, [], Counter()) for text in batch]
        todo = [i for i, text in enumerate(batch) if text.strip()]  # empty / whitespace-only: nothing to find
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start:start + self.batch_size]
            raw = self._call_detector([detection_view(batch[i]) for i in chunk])
            for i, entities in zip(chunk, raw):
                results[i].entities = self._select(batch[i], entities, results[i].dropped)
        return results[0] if single else results

    def _call_detector(self, texts):
        raw = self.detector(texts)
        if len(texts) == 1 and isinstance(raw, list) and (not raw or isinstance(raw[0], dict)):
            raw = [raw]  # pipelines return a bare list of entities for a one-item batch in some versions
        if not isinstance(raw, (list, tuple)) or len(raw) != len(texts):
            got = f"{len(raw)} results" if isinstance(raw, (list, tuple)) else _describe(raw)
            raise ValueError(f"detector returned {got} for {len(texts)} texts; it must return one list per text")
        return raw

    def _select(self, text, raw_entities, dropped):
        if not isinstance(raw_entities, (list, tuple)):
            raise ValueError(f"detector returned {_describe(raw_entities)} for a text; expected a list of dicts")
        kept = []
        for raw in raw_entities:
            entity, reason = _normalise_entity(text, raw)
            if reason is None:
                reason = self.filter_reason(entity)
            if reason is None:
                kept.append(entity)
            else:
                dropped[reason] += 1
        merged = merge_overlaps(kept, text)
        if len(merged) < len(kept):
            dropped["merged_into_overlapping_entity"] += len(kept) - len(merged)
        return merged

    def filter_reason(self, entity):
        """Why `entity` (with `type`, `tier`, `score`) is not redacted under these settings, or None."""
        if self.types is not None and entity["type"] not in self.types:
            return "type_not_selected"
        tier = entity["tier"]
        if self.min_tier is not None and tier is not None and tier > self.min_tier:
            return "tier_not_selected"
        if tier in self.tier_thresholds and entity["score"] < self.tier_thresholds[tier]:
            return "below_tier_threshold"
        return None

    # -- redaction ---------------------------------------------------------------------------------------------

    def redact(self, texts):
        """RedactionResult per text (a single one for a str input)."""
        detected = self.detect(texts)
        for result in [detected] if isinstance(detected, RedactionResult) else detected:
            result.redacted_text = self.apply(result.text, result.entities)
        return detected

    __call__ = redact

    def replacement(self, word, pii_type, text=""):
        if self.mode == "placeholder":
            return f"[{pii_type}]"
        if self.mode == "mask":
            return "*" * len(word)
        if self.mode == "hash":
            return f"[{pii_type}:{keyed_digest(self._key, 'hash', word).hex()[:HASH_HEX_CHARS]}]"
        return self._surrogates(word, pii_type, avoid=text)

    def apply(self, text, entities):
        """`text` with each entity (sorted, non-overlapping, with `start`, `end`, `word`, `type`) replaced; each
        entity gets its `replacement`, `new_start` and `new_end`."""
        pieces, cursor, shift = [], 0, 0
        for entity in entities:  # sorted and non-overlapping (merge_overlaps)
            new = self.replacement(entity["word"], entity["type"], text)
            pieces += [text[cursor:entity["start"]], new]
            entity["replacement"] = new
            entity["new_start"] = entity["start"] + shift
            entity["new_end"] = entity["new_start"] + len(new)
            shift += len(new) - (entity["end"] - entity["start"])
            cursor = entity["end"]
        pieces.append(text[cursor:])
        return "".join(pieces)


def redact(texts, detector, mode="placeholder", types=None, min_tier=None, tier_thresholds=None, key=None,
           batch_size=8):
    """Redact a str or a list of str in one call; see ``Redactor`` for the arguments. Returns a RedactionResult
    (for a str) or a list of them."""
    validate_texts(texts)  # bad input fails before any setup
    return Redactor(detector, mode=mode, types=types, min_tier=min_tier, tier_thresholds=tier_thresholds, key=key,
                    batch_size=batch_size).redact(texts)


def _normalise_entity(text, raw):
    """An entity dict with exact offsets into ``text`` and trimmed of surrounding whitespace, or a drop reason."""
    if not isinstance(raw, dict):
        return None, "not_a_dict"
    pii_type = raw.get("type") or raw.get("entity_group")
    start, end = _as_int(raw.get("start")), _as_int(raw.get("end"))
    if not isinstance(pii_type, str) or not pii_type:
        return None, "missing_type"
    if start is None or end is None:
        return None, "missing_offsets"
    if not 0 <= start < end <= len(text):
        return None, "offsets_out_of_range"
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        return None, "whitespace_only_span"
    tier = _as_int(raw.get("tier"))
    tier = tier if tier is not None else TIER_OF.get(pii_type)
    score = raw.get("score")
    try:  # numpy and 0-d torch scalars included; a detector without confidences gives 1.0
        score = 1.0 if score is None else float(score)
    except (TypeError, ValueError):
        return None, "invalid_score"
    return {"type": pii_type, "tier": tier, "score": score, "start": start, "end": end, "word": text[start:end]}, None


def _as_int(value):
    """``value`` as an int if it is an integer of any kind (int, numpy, 0-d tensor), else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def merge_overlaps(entities, text):
    """Sorted, non-overlapping entities: each group of (transitively) overlapping entities becomes one entity over
    their union, with type, tier and score of its most sensitive member. The input order does not matter."""
    def rank(e):
        return (e["tier"] if e["tier"] is not None else 99, -e["score"], -(e["end"] - e["start"]), e["start"],
                e["type"])

    merged, group, group_end = [], [], -1
    for entity in sorted(entities, key=lambda e: (e["start"], e["end"], rank(e))):
        if group and entity["start"] >= group_end:
            merged.append(_merge_group(group, rank, text))
            group = []
        group.append(entity)
        group_end = max(group_end, entity["end"]) if len(group) > 1 else entity["end"]
    if group:
        merged.append(_merge_group(group, rank, text))
    return merged


def _merge_group(group, rank, text):
    if len(group) == 1:
        return group[0]
    best = dict(min(group, key=rank))
    start, end = min(e["start"] for e in group), max(e["end"] for e in group)
    best.update(start=start, end=end, word=text[start:end])
    return best


def _check_types(types):
    if types is None:
        return None
    if isinstance(types, str):
        types = [t for t in types.split(",") if t.strip()]
    types = frozenset(t.strip().upper() for t in types)
    unknown = sorted(types - set(PII_TYPES))
    if unknown:
        raise ValueError(f"unknown PII type(s) {', '.join(unknown)}; known types: {', '.join(PII_TYPES)}")
    return types


def _check_tier(tier, name):
    if _as_int(tier) is None or not 1 <= _as_int(tier) <= 4:
        raise ValueError(f"{name} must be an int from 1 (most sensitive) to 4, got {tier!r}")
    return _as_int(tier)


def _check_thresholds(thresholds):
    if thresholds is None:
        return {}
    if not isinstance(thresholds, dict):
        raise TypeError(f"tier_thresholds must be a dict {{tier: min_score}}, got {_describe(thresholds)}")
    checked = {}
    for tier, score in thresholds.items():
        tier = _check_tier(int(tier) if isinstance(tier, str) and tier.isdigit() else tier, "a tier_thresholds key")
        if not isinstance(score, numbers.Real) or isinstance(score, bool) or not 0.0 <= score <= 1.0:
            raise ValueError(f"tier_thresholds[{tier}] must be a score in [0, 1], got {score!r}")
        checked[tier] = float(score)
    return checked


def _check_key(key):
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be str or bytes, got {_describe(key)}")
    if not key:
        raise ValueError("key must not be empty (leave it None for a random per-run key)")
    return bytes(key)


__all__ = ["MODES", "RedactionResult", "Redactor", "redact", "merge_overlaps", "detection_view", "validate_texts"]
