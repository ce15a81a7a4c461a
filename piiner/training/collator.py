"""Batches of windows -> padded tensors, char ids included."""

import torch

from piiner.hub.encoding_piiner import pad_char_ids

from .features import IGNORE_INDEX


class PiiNerCollator:
    """Pads a list of windows (as ``build_features`` makes them) to the longest one in the batch.

    input_ids get the tokenizer's pad id, attention_mask and token_type_ids 0, labels -100, char ids 0 (on a
    (B, T, C) grid whose C is the longest word, at least the widest char kernel). Columns that are not model
    inputs (offsets, example index) are left out. `not_pii_mask` (1 on tokens the annotators labelled as no PII type)
    and `unjudged_mask` (1 on tokens whose label is unknown) are padded with 0; `unjudged_mask` only goes with
    `num_labels` given (without partial annotation, an unjudged token is read as its "O").

    `unannotated_labels` (a list of label ids per window) becomes a (B, num_labels) bool tensor, and only when some
    window of the batch has one and `num_labels` is given: a batch of fully labelled windows is scored as before.

    Args:
        pad_token_id (`int`): the tokenizer's padding id.
        min_chars (`int`, defaults to 1): smallest char dimension; pass `max(config.char_kernel_sizes)`.
        pad_to_multiple_of (`int`, *optional*): round the sequence length up (8 suits tensor cores).
        num_labels (`int`, *optional*): the model's label count; without it `unannotated_labels` is left out, so
            unannotated types are read as "O" (the training argument `partial_annotation: false`).
        absent_label_ids (*optional*): labels never counted as unannotated, so that an "O" is evidence against them
            in every record (the training argument `absent_types`).
    """

    def __init__(self, pad_token_id, min_chars=1, pad_to_multiple_of=None, num_labels=None, absent_label_ids=()):
        if pad_token_id is None:
            raise ValueError("the tokenizer has no pad token: set tokenizer.pad_token before training")
        self.pad_token_id = pad_token_id
        self.min_chars = min_chars
        self.pad_to_multiple_of = pad_to_multiple_of
        self.num_labels = num_labels
        self.absent_label_ids = sorted(absent_label_ids)

    def __call__(self, features):
        if not features:
            raise ValueError("cannot collate an empty batch")
        seq_len = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            seq_len = -(-seq_len // self.pad_to_multiple_of) * self.pad_to_multiple_of
        pads = {"input_ids": self.pad_token_id, "attention_mask": 0, "token_type_ids": 0, "labels": IGNORE_INDEX,
                "not_pii_mask": 0}
        if self.num_labels and any(any(f.get("unjudged_mask") or ()) for f in features):
            pads["unjudged_mask"] = 0
        batch = {}
        for name, pad in pads.items():
            if name not in features[0]:
                continue
            rows = [list(f[name]) for f in features]
            batch[name] = torch.tensor([row + [pad] * (seq_len - len(row)) for row in rows], dtype=torch.long)
        if "char_ids" in features[0]:
            batch["char_ids"] = pad_char_ids([f["char_ids"] for f in features], seq_len=seq_len, min_chars=self.min_chars)
        unannotated = [f.get("unannotated_labels") or [] for f in features]
        if self.num_labels and any(unannotated):
            batch["unannotated_labels"] = torch.zeros(len(features), self.num_labels, dtype=torch.bool)
            for row, ids in enumerate(unannotated):
                batch["unannotated_labels"][row, ids] = True
            batch["unannotated_labels"][:, self.absent_label_ids] = False
        return batch
