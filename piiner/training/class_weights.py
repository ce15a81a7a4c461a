"""Per-token loss weights: tier weights by the gold type's sensitivity, optionally times class weights.

A token's weight is ``tier_weight[tier of its gold type] * class_weight[its gold label]`` (O tokens:
``outside_weight * class_weight["O"]``). The model multiplies its CRF NLL by these weights (``label_weights``).
"""

import math
from collections import Counter

import torch

from .features import IGNORE_INDEX


def label_counts(label_rows, num_labels):
    """Tokens per label id over rows of label ids; -100 (special tokens, padding) is not counted."""
    counts = Counter()
    for row in label_rows:
        counts.update(label for label in row if label != IGNORE_INDEX)
    bad = sorted(label for label in counts if not 0 <= label < num_labels)
    if bad:
        raise ValueError(f"label ids {bad} are outside the model's {num_labels} labels")
    return [counts.get(i, 0) for i in range(num_labels)]


def inverse_sqrt_class_weights(counts, outside_id=0):
    """Class weights by inverse square root of frequency (the scheme of seed 003).

    Entity labels get 1/sqrt(count), scaled so their mean over the labels present in training is 1; O gets its
    own weight on the same scale, capped at 1 (O is the most frequent label by far and must not outweigh the
    entities). Labels never seen in training get 1.0: they carry no gold token, so it only matters if they appear
    later in a resumed run with other data.
    """
    raw = [1.0 / math.sqrt(c) if c else None for c in counts]
    entity = [w for i, w in enumerate(raw) if i != outside_id and w is not None]
    if not entity:
        raise ValueError("class_weighting=inverse_sqrt needs entity tokens in the training split; it has none")
    scale = len(entity) / sum(entity)
    weights = [1.0 if w is None else w * scale for w in raw]
    weights[outside_id] = min(1.0, weights[outside_id]) if raw[outside_id] is not None else 1.0
    return weights


def label_weight_table(id2label, type_to_tier, tier_weights, outside_weight=1.0, class_weights=None):
    """A (num_labels,) float tensor: the loss weight of a token by its gold label id."""
    num_labels = len(id2label)
    table = torch.empty(num_labels, dtype=torch.float32)
    for i in range(num_labels):
        label = id2label[i] if i in id2label else id2label[str(i)]
        if label == "O":
            table[i] = outside_weight
        else:
            entity_type = label.split("-", 1)[1]
            table[i] = tier_weights[int(type_to_tier[entity_type])]
    if class_weights is not None:
        table *= torch.tensor(class_weights, dtype=torch.float32)
    return table


def token_weights(labels, table):
    """Per-token weights (B, T) for gold `labels` (B, T); positions labelled -100 get 0."""
    table = table.to(labels.device)
    weights = table[labels.clamp(min=0)]
    return weights.masked_fill(labels == IGNORE_INDEX, 0.0)
