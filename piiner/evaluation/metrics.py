"""Strict span-level metrics: a true positive is an exact (start, end, type) match, with no partial credit.

A span is given either as a ``(start, end, type)`` tuple or as a dict with ``start``, ``end`` and one of
``label`` / ``type`` / ``entity_group`` (the unified data record uses ``label``, the piiner pipeline ``type``).
Matching is a multiset intersection per text: a prediction repeated twice matches one gold span and the copy
is a false positive, because a consumer of the output would see it twice.
"""

from collections import Counter

from piiner.hub.pii_schema import PII_TYPES, TIER_OF, TIER_RECALL_TARGETS

_TYPE_KEYS = ("label", "type", "entity_group")


def to_span(span, where="span"):
    """Normalise one span (tuple or dict) into a ``(start, end, type)`` tuple, or raise ``ValueError`` naming it."""
    if isinstance(span, dict):
        span_type = next((span[k] for k in _TYPE_KEYS if span.get(k) is not None), None)
        if span_type is None:
            raise ValueError(f"{where}: span dict {span!r} has none of the type keys {list(_TYPE_KEYS)}")
        start, end = span.get("start"), span.get("end")
    elif isinstance(span, (tuple, list)) and len(span) == 3:
        start, end, span_type = span
    else:
        raise ValueError(f"{where}: expected a (start, end, type) tuple or a span dict, got {span!r}")
    if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
        raise ValueError(f"{where}: start and end must be ints, got {span!r}")
    if not 0 <= start < end:
        raise ValueError(f"{where}: need 0 <= start < end, got {span!r}")
    if not isinstance(span_type, str) or not span_type:
        raise ValueError(f"{where}: the span type must be a non-empty string, got {span!r}")
    return start, end, span_type


def to_spans(spans, where="text"):
    """Normalise the spans of one text."""
    if spans is None:
        return []
    return [to_span(s, f"{where}, span {j}") for j, s in enumerate(spans)]


def _fbeta(precision, recall, beta):
    if precision == 0.0 and recall == 0.0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def scores(tp, fp, fn):
    """Precision, recall, F1 and F2 from counts; 0/0 is 0.0 (``support`` tells an empty class from a bad one)."""
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": _fbeta(precision, recall, 1.0),
        "f2": _fbeta(precision, recall, 2.0),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "support": tp + fn,
    }


def _type_order(span_type):
    # Schema order first (tier 1 at the top), then anything unknown alphabetically.
    return (0, PII_TYPES.index(span_type), "") if span_type in TIER_OF else (1, 0, span_type)


def _text_matches(gold_spans, pred_spans, keep, i):
    """(type, tp, fp, fn) of each distinct span of one text, strictly matched, spans of types outside ``keep``
    (a set, or None for all) ignored."""
    g = Counter(s for s in to_spans(gold_spans, f"gold text {i}") if keep is None or s[2] in keep)
    p = Counter(s for s in to_spans(pred_spans, f"pred text {i}") if keep is None or s[2] in keep)
    for span in g.keys() | p.keys():
        matched = min(g[span], p[span])
        yield span[2], matched, p[span] - matched, g[span] - matched


def set_aside_unjudged(pred, unjudged_spans, types=None):
    """Each text's predictions without those lying wholly inside one of its `unjudged_spans` (character ranges whose
    label the gold leaves open, such as GUM's bare years), and the count set aside per type. A prediction that
    reaches outside such a stretch is judged as usual.

    Args:
        pred: one list of spans per text.
        unjudged_spans: one list of ``{"start", "end"}`` per text (None for none), or None for no text.
        types: the scored types, or None for all: a prediction of another type is not judged anyway, so it stays
            (for `unscored_spans` to count).
    """
    if unjudged_spans is None:
        return pred, Counter()
    if len(unjudged_spans) != len(pred):
        raise ValueError(f"{len(unjudged_spans)} texts of unjudged spans but pred has {len(pred)}")
    kept, set_aside = [], Counter()
    for i, (spans, stretches) in enumerate(zip(pred, unjudged_spans)):
        normalised = to_spans(spans, f"pred text {i}")
        inside = [(types is None or span_type in types) and any(u["start"] <= start and end <= u["end"]
                                                                for u in stretches or ())
                  for start, end, span_type in normalised]
        kept.append([span for span, out in zip(spans, inside) if not out])
        set_aside.update(span_type for (_, _, span_type), out in zip(normalised, inside) if out)
    return kept, set_aside


def span_metrics(gold, pred, types=None):
    """Score predicted spans against gold spans, strictly.

    Args:
        gold, pred: lists with one entry per text, each a list of spans (tuples or dicts, see the module doc).
        types: optional collection of type names; when given, gold and predicted spans of other types are ignored
            (e.g. ``{"PERSON", "LOCATION", "ORGANIZATION"}`` on WNUT-17) and every listed type gets a row.

    Returns:
        ``{"overall": {...}, "per_type": {TYPE: {...}}, "per_tier": {tier: {...}}}`` where each ``{...}`` holds
        precision, recall, f1, f2, tp, fp, fn and support (micro-averaged), and each tier row also its recall
        ``target`` and ``meets_target`` (None when the tier has no gold span). Types outside the piiner schema
        count in overall and per_type but in no tier.
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} texts but pred has {len(pred)}: they must be aligned one to one")
    keep = None if types is None else set(types)
    counts = {}  # type -> [tp, fp, fn]
    for i, (gold_spans, pred_spans) in enumerate(zip(gold, pred)):
        for span_type, tp, fp, fn in _text_matches(gold_spans, pred_spans, keep, i):
            row = counts.setdefault(span_type, [0, 0, 0])
            row[0] += tp
            row[1] += fp
            row[2] += fn

    for span_type in keep or ():
        counts.setdefault(span_type, [0, 0, 0])

    def total(rows):
        return [sum(col) for col in zip(*rows)] if rows else [0, 0, 0]

    per_type = {t: scores(*counts[t]) for t in sorted(counts, key=_type_order)}
    per_tier = {}
    for tier, target in sorted(TIER_RECALL_TARGETS.items()):
        row = scores(*total([c for t, c in counts.items() if TIER_OF.get(t) == tier]))
        row["target"] = target
        row["meets_target"] = row["recall"] >= target if row["support"] else None
        per_tier[tier] = row
    return {"overall": scores(*total(list(counts.values()))), "per_type": per_type, "per_tier": per_tier}


def bootstrap_f1(gold, preds, groups=None, types=None, resamples=1000, level=0.95, seed=0):
    """How far the strict F1 of each system would move on other documents like these: percentile intervals over
    documents drawn with replacement (all texts of a document together, since they share names and conventions).

    Args:
        gold: one list of spans per text.
        preds: one or more systems' predictions on the same texts (each as `gold`). All are scored on the same
            draws, so the interval of a difference between two systems is paired.
        groups: the document of each text (any hashable); None makes each text its own document.

    Returns:
        ``{"level", "resamples", "documents", "f1": [[low, high] per system], "f1_minus_first": [None, then [low,
        high] of each later system's F1 minus the first's]}``; every interval None when there are fewer than two
        documents, where resampling says nothing.
    """
    import numpy as np

    groups = list(range(len(gold))) if groups is None else list(groups)
    if any(len(p) != len(gold) for p in preds) or len(groups) != len(gold):
        raise ValueError(f"gold has {len(gold)} texts: every system's predictions and the groups must have as many")
    keep = None if types is None else set(types)
    document = {g: j for j, g in enumerate(dict.fromkeys(groups))}
    counts = np.zeros((len(preds), len(document), 3))  # system, document, (tp, fp, fn)
    for s, pred in enumerate(preds):
        for i, (gold_spans, pred_spans) in enumerate(zip(gold, pred)):
            for _, *tp_fp_fn in _text_matches(gold_spans, pred_spans, keep, i):
                counts[s, document[groups[i]]] += tp_fp_fn
    result = {"level": level, "resamples": resamples, "documents": len(document),
              "f1": [None] * len(preds), "f1_minus_first": [None] * len(preds)}
    if len(document) < 2:
        return result
    per_document = counts.transpose(1, 0, 2).reshape(len(document), -1)  # document, (system, count)
    rng, totals = np.random.default_rng(seed), np.empty((resamples, per_document.shape[1]))
    for r in range(resamples):  # one draw at a time: memory stays that of one draw on a corpus of any size
        times_drawn = np.bincount(rng.integers(0, len(document), len(document)), minlength=len(document))
        totals[r] = times_drawn @ per_document
    tp, fp, fn = totals.reshape(resamples, len(preds), 3).transpose(2, 1, 0)  # each: system, draw
    denominator = 2 * tp + fp + fn
    f1 = np.divide(2 * tp, denominator, out=np.zeros_like(tp), where=denominator > 0)
    tails = [(1 - level) / 2, (1 + level) / 2]

    def interval(values):
        return [float(x) for x in np.quantile(values, tails)]

    result["f1"] = [interval(f1[s]) for s in range(len(preds))]
    result["f1_minus_first"] = [None] + [interval(f1[s] - f1[0]) for s in range(1, len(preds))]
    return result


RELAXED_SCHEMES = {
    "ent_type": "right type, any overlap",
    "exact": "right boundaries, any type",
    "partial": "exact boundaries count whole, overlapping ones half; type ignored",
    "strict": "right boundaries and type",
}
# What `relaxed_matches` gives for each scheme (nervaluate's counts and scores).
RELAXED_FIELDS = ("precision", "recall", "f1", "correct", "incorrect", "partial", "missed", "spurious")


def relaxed_matches(gold, pred, types=None):
    """Where the strict misses go, by the four matching schemes of SemEval-2013 task 9.1 (nervaluate): a span with the
    right type but other boundaries counts under ``ent_type``, one with the right boundaries but another type under
    ``exact``. Corpora disagree on boundaries ("Union Bank" + "California" against "Union Bank of California"),
    which strict matching cannot tell from a miss.

    Returns:
        ``{scheme: {precision, recall, f1, correct, incorrect, partial, missed, spurious}}`` for RELAXED_SCHEMES;
        an empty dict when neither side has a span.
    """
    from nervaluate import Evaluator

    keep = None if types is None else set(types)

    def as_dicts(spans_per_text, side):
        # nervaluate reads offsets as inclusive, so a span ending where the next starts must end one before.
        return [[{"label": t, "start": a, "end": b - 1} for a, b, t in to_spans(spans, f"{side} text {i}")
                 if keep is None or t in keep] for i, spans in enumerate(spans_per_text)]

    true, found = as_dicts(gold, "gold"), as_dicts(pred, "pred")
    labels = sorted({s["label"] for text in true + found for s in text})
    if not labels:
        return {}
    overall = Evaluator(true, found, tags=labels, loader="dict").evaluate()["overall"]
    return {scheme: {f: getattr(overall[scheme], f) for f in RELAXED_FIELDS} for scheme in RELAXED_SCHEMES}


def judged_types(types, labelled_types=None):
    """The types a text's gold says yes or no to: those a score is restricted to, and those its annotation labels
    (`labelled_types`: BTC labels handles, links and e-mail addresses); a span of any other type is unscored there."""
    return set(types) | set(labelled_types or ())


def unscored_spans(texts, pred, types, labelled_types=None, not_pii_spans=None, gold=None):
    """What a system emits that a score restricted to `types` cannot judge: a corpus labelled for persons, places
    and organizations says neither yes nor no to a date or a password predicted in it. A span counts when its type
    is not scored and not among its text's `labelled_types` (one list per text, None for a text whose annotation
    covers every type; BTC's handles and links are labelled by pattern, so they do not count there). Spans per type
    (most first) and per 1,000 words (whitespace-separated) of the texts; `on_not_pii_spans`: how many of them
    overlap one of their text's `not_pii_spans` (stretches the corpus labelled as no PII type, such as WNUT-17's
    products and titles), which are known to be wrong; with `gold` (one list of spans per text), `gold_inside`: per
    type, the gold spans of the scored types lying wholly inside such a span: misses the score counts where the
    system gave the stretch a type the score cannot see (a street address over the city and state a corpus marks as
    places, whose convention piiner does not share; a date of birth over a date).
    """
    if len(texts) != len(pred) or (gold is not None and len(gold) != len(pred)):
        raise ValueError(f"{len(texts)} texts, pred has {len(pred)}, gold {'-' if gold is None else len(gold)}: "
                         f"they must be aligned one to one")
    labelled_types = labelled_types or [None] * len(texts)
    not_pii_spans = not_pii_spans or [None] * len(texts)
    scored, counts, on_not_pii, gold_inside = set(types), Counter(), 0, Counter()
    for i, (spans, labelled, not_pii) in enumerate(zip(pred, labelled_types, not_pii_spans)):
        judged = judged_types(scored, labelled)
        found = to_spans(spans, f"pred text {i}")
        unjudged = [span for span in found if span[2] not in judged]
        counts.update(span_type for _, _, span_type in unjudged)
        on_not_pii += sum(any(start < n["end"] and n["start"] < end for n in not_pii or ()) for start, end, _ in unjudged)
        # a gold span some prediction matches exactly is no miss, whatever else covers it
        missed = [s for s in to_spans(gold[i] if gold else (), f"gold text {i}") if s[2] in scored and s not in found]
        for start, end, _ in missed:
            outer = next((t for a, b, t in unjudged if a <= start and end <= b), None)
            gold_inside.update([outer] if outer else [])
    words = sum(len(text.split()) for text in texts)
    total = sum(counts.values())
    return {"spans": total, "words": words, "per_1k_words": 1000 * total / words if words else None,
            "per_type": _most_first(counts), "on_not_pii_spans": on_not_pii, "gold_inside": _most_first(gold_inside)}


def redaction_coverage(texts, gold, pred, types=None):
    """What redacting every predicted span hides of the gold, whatever type each was given: a place inside a street
    address, a date inside a date of birth or a city called a nationality is hidden all the same. Gold spans of
    `types` (all when None) wholly hidden, the share of their characters hidden, and the share of all the texts'
    characters redacted, which tells a system that hides much from one that hides everything. Whitespace counts on
    neither side, so "New York" found as "New" and "York" is hidden. Recall only: a corpus that labels a few types
    cannot say whether the rest of what was redacted is PII.
    """
    if not len(texts) == len(gold) == len(pred):
        raise ValueError(f"{len(texts)} texts, {len(gold)} gold and {len(pred)} predicted span lists: they must be "
                         "aligned one to one")
    import numpy as np

    keep = None if types is None else set(types)
    spans = hidden_spans = chars = hidden_chars = text_chars = redacted = 0
    for i, text in enumerate(texts):
        covered = np.zeros(len(text), dtype=bool)
        for start, end, _ in to_spans(pred[i], f"pred text {i}"):
            covered[start:end] = True
        counted = np.fromiter((not c.isspace() for c in text), dtype=bool, count=len(text))
        text_chars += int(counted.sum())
        redacted += int((covered & counted).sum())
        for start, end, span_type in to_spans(gold[i], f"gold text {i}"):
            if keep is not None and span_type not in keep:
                continue
            inside = counted[start:end]
            size, found = int(inside.sum()), int((covered[start:end] & inside).sum())
            spans += 1
            hidden_spans += found == size
            chars += size
            hidden_chars += found
    return {"gold_spans": spans, "hidden_spans": hidden_spans,
            "span_recall": hidden_spans / spans if spans else None,
            "gold_chars": chars, "hidden_chars": hidden_chars, "char_recall": hidden_chars / chars if chars else None,
            "text_chars": text_chars, "redacted_chars": redacted,
            "redacted_share": redacted / text_chars if text_chars else None}


def _most_first(counts):
    """A Counter of types as a dict, most first, ties in schema order."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], _type_order(kv[0]))))


__all__ = ["bootstrap_f1", "judged_types", "redaction_coverage", "scores", "set_aside_unjudged", "span_metrics",
           "to_span", "to_spans", "unscored_spans"]
