"""The eval-mode CRF decode of `crf_piiner` in numpy, for graphs exported with `crf="host"`.

onnxruntime steps through a `Scan` body node by node; at batch 1 that per-node cost, not arithmetic, is most of the
in-graph decode, and the same loop over numpy arrays costs a third of it. The recurrences are those of
`crf_piiner` (`viterbi_decode`, `crf_log_partition`, `crf_backward`, `crf_marginals`: same masking, same `started`
flag, same back-tracking rule) and the per-step sums use the tables of `crf_piiner._TransitionSums`: matrix
products for the labels every label may move to, exact gathered log-sum-exps for the constrained "I-" labels.
"""

import numpy as np
import torch

from piiner.crf_piiner import _TransitionSums


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    peak = x.max(axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return (np.log(np.exp(x - peak).sum(axis=axis, keepdims=True)) + peak).squeeze(axis)


def _shifted_log_matmul(log_vectors: np.ndarray, factors: np.ndarray) -> np.ndarray:
    row_max = log_vectors.max(axis=-1, keepdims=True)
    summed = np.exp(log_vectors - row_max) @ factors
    return np.log(np.maximum(summed, np.finfo(np.float32).tiny)) + row_max


class NumpyTransitionSums:
    """`crf_piiner._TransitionSums` over numpy arrays: the same tables, the same three steps."""

    def __init__(self, transitions: np.ndarray):
        tables = _TransitionSums(torch.from_numpy(np.asarray(transitions, dtype=np.float32)))
        for name, value in vars(tables).items():
            setattr(self, name, value.numpy() if isinstance(value, torch.Tensor) else value)

    def forward_step(self, alpha):
        dense = _shifted_log_matmul(alpha, self.forward_factors) + self.row_shift
        sparse = _logsumexp(alpha[:, self.predecessors] + self.predecessor_scores, axis=-1)
        return np.concatenate([dense, sparse], axis=-1)[:, self.order]

    def max_step(self, score):
        dense = (score[:, None, :] + self.dense_scores[None]).max(axis=-1)
        sparse = (score[:, self.predecessors] + self.predecessor_scores).max(axis=-1)
        return np.concatenate([dense, sparse], axis=-1)[:, self.order]

    def backward_step(self, incoming):
        dense = _shifted_log_matmul(incoming[:, self.dense_rows], self.backward_factors) + self.column_shift
        sparse = _logsumexp(incoming[:, self.successors] + self.successor_scores, axis=-1)
        return np.logaddexp(dense, sparse)


def numpy_decode(emissions, mask, start, transitions, end, sums: NumpyTransitionSums | None = None):
    """
    Viterbi tags and their CRF marginal probabilities, as `PiiNerForTokenClassification` gives them in eval mode.

    Args:
        emissions (`np.ndarray` (batch, seq_len, num_labels)): log-softmax emission scores.
        mask (`np.ndarray` of bool (batch, seq_len)): the CRF positions.
        start, transitions, end: the constrained CRF scores, `transitions[to, from]`.
        sums: `NumpyTransitionSums(transitions)`, built once and reused across calls (built here otherwise).

    Returns:
        `(decoded_tags, tag_scores)` (batch, seq_len): int64 tags, -100 off the mask; float32 scores, 0 off it.
    """
    emissions = np.asarray(emissions, dtype=np.float32)
    mask = np.asarray(mask, dtype=bool)
    if sums is None:
        sums = NumpyTransitionSums(transitions)
    batch, seq_len, num_labels = emissions.shape
    score = np.zeros((batch, num_labels), np.float32)
    alpha = np.zeros((batch, num_labels), np.float32)
    started = np.zeros(batch, bool)
    previous_scores = np.empty((seq_len, batch, num_labels), np.float32)
    alphas = np.empty((seq_len, batch, num_labels), np.float32)
    follows = np.empty((seq_len, batch), bool)
    for t in range(seq_len):
        real, begun = mask[:, t, None], started[:, None]
        previous_scores[t], follows[t] = score, mask[:, t] & started
        score = np.where(real, np.where(begun, sums.max_step(score), start) + emissions[:, t], score)
        alpha = np.where(real, np.where(begun, sums.forward_step(alpha), start) + emissions[:, t], alpha)
        alphas[t] = alpha
        started |= mask[:, t]
    log_z = np.where(started, _logsumexp(alpha + end, axis=-1), 0.0)

    current = (score + end).argmax(axis=-1)
    tags = np.empty((batch, seq_len), np.int64)
    betas = np.empty((seq_len, batch, num_labels), np.float32)
    incoming = np.zeros((batch, num_labels), np.float32)
    beta = np.broadcast_to(end, (batch, num_labels)).astype(np.float32)
    has_next = np.zeros(batch, bool)
    for t in range(seq_len - 1, -1, -1):
        real = mask[:, t, None]
        tags[:, t] = current
        best_from = (previous_scores[t] + transitions[current]).argmax(axis=-1)
        current = np.where(follows[t], best_from, current)
        beta = np.where(real, np.where(has_next[:, None], sums.backward_step(incoming), end), beta)
        incoming = np.where(real, beta + emissions[:, t], incoming)
        has_next |= mask[:, t]
        betas[t] = beta
    tags = np.where(mask, tags, -100)
    log_marginals = np.minimum(alphas.transpose(1, 0, 2) + betas.transpose(1, 0, 2) - log_z[:, None, None], 0.0)
    picked = np.take_along_axis(log_marginals, np.maximum(tags, 0)[..., None], axis=-1)[..., 0]
    return tags, np.where(mask, np.exp(picked), 0.0).astype(np.float32)
