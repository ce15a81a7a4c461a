"""Evaluation during training: window predictions -> character spans of the original texts -> strict span scores.

The Trainer hands over per-window Viterbi tags and confidences; windows of one text are merged
(``decoding_piiner.merge_windows``), decoded to entities with exact offsets (``decode_entities``) and scored
against the records' gold spans with ``evaluation.metrics.span_metrics`` (predictions inside a record's unjudged
spans set aside, and, in a record that labels some types only, predictions of the types it does not label: they
are neither right nor wrong there): the same path the pipeline takes.
"""

import numpy as np
import torch

from piiner.evaluation.metrics import set_aside_unjudged, span_metrics
from piiner.hub.decoding_piiner import decode_entities, merge_windows


def keep_tags_and_scores(outputs, labels):
    """``preprocess_logits_for_metrics``: keep only the decoded tags and their confidences of each window.

    `PiiNerTrainer.prediction_step` asks the model to decode, so its outputs (after the loss) are (logits,
    decoded_tags, tag_scores); keeping the (B, T, 83) logits across the whole eval set would cost memory for nothing.
    """
    if isinstance(outputs, torch.Tensor) or len(outputs) < 2:
        raise ValueError("the model returned no decoded_tags/tag_scores; is it a piiner model run by PiiNerTrainer?")
    decoded_tags, tag_scores = outputs[-2], outputs[-1]
    if decoded_tags.is_floating_point() or not tag_scores.is_floating_point():
        raise ValueError("expected (…, decoded_tags, tag_scores) as the last two eval outputs of the model")
    return decoded_tags, tag_scores.float()


class SpanEvaluator:
    """``compute_metrics`` for the Trainer: strict span P/R/F1/F2 overall, per type and per-tier recall.

    Args:
        records (`datasets.Dataset`): the evaluated split as unified records (text, spans).
        features (`datasets.Dataset`): its windows from `build_features`, in the order given to the Trainer.
        config: the model config (id2label, type_to_tier).

    After each call, `last_report` holds the full `span_metrics` result and `last_predictions` the entities.
    """

    def __init__(self, records, features, config):
        self.texts = records["text"]
        self.gold = [[(s["start"], s["end"], s["label"]) for s in spans or ()] for spans in records["spans"]]
        self.unjudged = records["unjudged_spans"] if "unjudged_spans" in records.column_names else None
        self.labelled = records["labelled_types"] if "labelled_types" in records.column_names else None
        self.offsets = features["offset_mapping"]
        self.example_index = features["example_index"]
        self.id2label = {int(k): v for k, v in config.id2label.items()}
        self.outside_id = {v: k for k, v in self.id2label.items()}["O"]
        self.type_to_tier = dict(config.type_to_tier)
        self.multiline_types = tuple(config.multiline_types)
        self.last_report = None
        self.last_predictions = None

    def predict_spans(self, decoded_tags, tag_scores):
        """Entities per text from per-window tags and scores (rows aligned with `features`)."""
        if len(decoded_tags) != len(self.offsets):
            raise ValueError(f"got predictions for {len(decoded_tags)} windows, the eval set has {len(self.offsets)}")
        windows = [[] for _ in self.texts]
        for row, (example, offsets) in enumerate(zip(self.example_index, self.offsets)):
            n = len(offsets)
            # Positions outside the CRF carry -100; only real tokens (start < end) are read, and any of them without
            # a CRF tag counts as O.
            tags = np.where(decoded_tags[row][:n] < 0, self.outside_id, decoded_tags[row][:n])
            windows[example].append((offsets, tags.tolist(), tag_scores[row][:n].tolist()))
        predictions = []
        for text, text_windows in zip(self.texts, windows):
            offsets, tags, scores = merge_windows(text_windows)
            predictions.append(decode_entities(text, offsets, tags, scores, self.id2label, self.type_to_tier,
                                               self.multiline_types))
        return predictions

    def __call__(self, eval_prediction):
        decoded_tags, tag_scores = eval_prediction.predictions
        predictions = self.predict_spans(np.asarray(decoded_tags), np.asarray(tag_scores))
        labelled = self.labelled or [None] * len(predictions)
        pred = [[(e["start"], e["end"], e["type"]) for e in entities if types is None or e["type"] in types]
                for entities, types in zip(predictions, labelled)]
        report = span_metrics(self.gold, set_aside_unjudged(pred, self.unjudged)[0])
        self.last_report, self.last_predictions = report, predictions
        return flatten_report(report)


def flatten_report(report):
    """The scalars the Trainer logs: precision, recall, f1, f2, tier{k}_recall and f1 per type seen."""
    overall = report["overall"]
    metrics = {name: overall[name] for name in ("precision", "recall", "f1", "f2")}
    for tier, row in report["per_tier"].items():
        metrics[f"tier{tier}_recall"] = row["recall"]
    for entity_type, row in report["per_type"].items():
        metrics[f"f1_{entity_type}"] = row["f1"]
    return metrics
