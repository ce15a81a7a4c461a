"""Running a saved piiner model over texts, through the same pipeline a user calls."""

import numbers
import os

from piiner.snapshot import load_pipeline

from .metrics import to_span


def _as_int(value):
    return int(value) if isinstance(value, numbers.Integral) else value


def predict_spans(model, texts, batch_size=16, device=None):
    """Entities the piiner pipeline finds in each text.

    Args:
        model: a saved model folder or Hub id, or an already built token-classification pipeline (anything
            callable on a list of texts that returns one list of entity dicts per text).
        texts: list of strings.
        batch_size: the pipeline's batch size.

    Returns:
        One list per text of ``{"start", "end", "label", "score"}`` dicts (label = piiner type), sorted by start.
    """
    pipe = load_pipeline(model, device) if isinstance(model, (str, os.PathLike)) else model
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    out = [[] for _ in texts]
    # Whitespace-only texts have no tokens to tag; they get no entities without a model call.
    todo = [i for i, t in enumerate(texts) if t.strip()]
    # One call: the pipeline batches the texts itself (piiner's, texts of similar length together).
    results = pipe([texts[i] for i in todo], batch_size=batch_size) if todo else []
    if len(todo) == 1 and results and isinstance(results[0], dict):
        results = [results]  # some pipelines unwrap a one-element batch
    if len(results) != len(todo):
        raise RuntimeError(f"the pipeline returned {len(results)} results for {len(todo)} texts")
    for i, entities in zip(todo, results):
        spans = []
        for e in entities:
            # Offsets may come back as numpy integers; to_span wants Python ints.
            e = dict(e, start=_as_int(e.get("start")), end=_as_int(e.get("end")))
            start, end, span_type = to_span(e, f"pipeline output for text {i}")
            spans.append({"start": start, "end": end, "label": span_type, "score": float(e.get("score", 1.0))})
        out[i] = sorted(spans, key=lambda s: (s["start"], s["end"]))
    return out


__all__ = ["predict_spans"]
