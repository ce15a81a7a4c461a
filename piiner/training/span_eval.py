"""Evaluation during training: window predictions -> character spans of the original texts -> strict span scores.

The Trainer hands over per-window emissions and tags (whose -100 marks the positions outside the CRF); each text's
windows are decoded and become entities by ``decoding_piiner.entities_from_windows``, the function the pipeline and
the ONNX runtime use (recognizers and type checks included), and are scored against the records' gold spans with
``evaluation.metrics.span_metrics`` (predictions inside a record's unjudged
spans set aside, and, in a record that labels some types only, predictions of the types it does not label: they
are neither right nor wrong there): the same path the pipeline takes.
"""

import numpy as np
import torch

from piiner.evaluation.metrics import set_aside_unjudged, span_metrics
from piiner.hub.decoding_piiner import entities_from_windows
from piiner.hub.recognizers_piiner import config_evidence


def keep_emissions_and_tags(outputs, labels):
    """``preprocess_logits_for_metrics``: each window's log-softmax emissions, which the pipeline's postprocess
    decodes, and the model's tags, whose -100 marks the positions outside the CRF (padding too, once the Trainer
    joins batches of other lengths).

    `PiiNerTrainer.prediction_step` asks the model to decode, so its outputs (after the loss) are (logits,
    decoded_tags, tag_scores, ...)."""
    if isinstance(outputs, torch.Tensor) or len(outputs) < 3:
        raise ValueError("the model returned no decoded_tags/tag_scores; is it a piiner model run by PiiNerTrainer?")
    logits, decoded_tags = outputs[0], outputs[1]
    if decoded_tags.is_floating_point():
        raise ValueError("expected (logits, decoded_tags, tag_scores, ...) as the eval outputs of the model")
    return torch.log_softmax(logits.float(), dim=-1), decoded_tags


class SpanEvaluator:
    """``compute_metrics`` for the Trainer: strict span P/R/F1/F2 overall, per type and per-tier recall.

    Args:
        records (`datasets.Dataset`): the evaluated split as unified records (text, spans).
        features (`datasets.Dataset`): its windows from `build_features`, in the order given to the Trainer.
        model: the model being trained: its config (labels, tiers, recognizers) and, at each evaluation, its
            current CRF transition scores.

    After each call, `last_report` holds the full `span_metrics` result and `last_predictions` the entities.
    """

    def __init__(self, records, features, model):
        self.model, config = model, model.config
        self.texts = records["text"]
        self.gold = [[(s["start"], s["end"], s["label"]) for s in spans or ()] for spans in records["spans"]]
        self.unjudged = records["unjudged_spans"] if "unjudged_spans" in records.column_names else None
        self.labelled = records["labelled_types"] if "labelled_types" in records.column_names else None
        self.offsets = features["offset_mapping"]
        self.example_index = features["example_index"]
        self.evidence = config_evidence(config)
        self.last_report = None
        self.last_predictions = None

    def predict_spans(self, emissions, decoded_tags):
        """Entities per text from per-window emissions and tags (rows aligned with `features`)."""
        if len(decoded_tags) != len(self.offsets):
            raise ValueError(f"got predictions for {len(decoded_tags)} windows, the eval set has {len(self.offsets)}")
        windows = [[] for _ in self.texts]
        for row, (example, offsets) in enumerate(zip(self.example_index, self.offsets)):
            n = len(offsets)
            windows[example].append((offsets, emissions[row][:n], decoded_tags[row][:n] >= 0))
        crf = tuple(t.detach().cpu().numpy() for t in self.model._transition_scores())  # once for every text
        config = self.model.config
        return [entities_from_windows(text, text_windows, config, crf, self.evidence)
                for text, text_windows in zip(self.texts, windows)]

    def __call__(self, eval_prediction):
        emissions, decoded_tags = eval_prediction.predictions
        predictions = self.predict_spans(np.asarray(emissions), np.asarray(decoded_tags))
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
