"""The eval-mode CRF decode of `crf_piiner` in numpy, for graphs exported with the CRF outside (`crf="outside"`).

onnxruntime runs a `Scan` loop step by step through its executor, with generic kernels for the (batch, labels,
labels) reductions, which makes the in-graph decode slower than this loop over numpy arrays. The recurrences are
those of `crf_piiner` (`viterbi_decode`, `crf_log_partition`, `crf_backward`: same masking, same `started` flag,
same identity back-pointers on skipped positions); the forward and backward sums are taken in probability space
as one matrix product per step, `m + log(exp(alpha - m) @ exp(transitions).T)` with `m` the row maximum, which is
the same log-sum-exp up to float rounding (forbidden moves have exp(-1e4) = 0 exactly). Tags are identical; tag
scores agree to ~1e-4.
"""

import numpy as np


def _log_matmul(messages: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """log(exp(messages) @ weights) for (batch, labels) log-messages and non-negative weights, overflow-safe."""
    peak = messages.max(axis=1, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):  # a label no allowed path reaches has log 0 = -inf, as in log space
        return np.log(np.exp(messages - peak) @ weights) + peak


def numpy_decode(emissions, mask, start, transitions, end):
    """
    Viterbi tags and their CRF marginal probabilities.

    Args:
        emissions (`np.ndarray` (batch, seq_len, num_labels)): log-softmax emission scores.
        mask (`np.ndarray` of bool (batch, seq_len)): the CRF positions.
        start, transitions, end: the constrained CRF scores, `transitions[to, from]`.

    Returns:
        `(decoded_tags, tag_scores)` (batch, seq_len): int64 tags, -100 off the mask; float32 scores, 0 off it.
    """
    emissions = np.asarray(emissions, dtype=np.float32)
    mask = np.asarray(mask, dtype=bool)
    start, transitions, end = (np.asarray(x, dtype=np.float32) for x in (start, transitions, end))
    batch, seq_len, num_labels = emissions.shape
    from_to = transitions.T  # (from, to)
    weights_forward = np.exp(from_to)  # alpha (batch, from) @ (from, to)
    weights_backward = np.exp(transitions)  # incoming (batch, to) @ (to, from)
    identity = np.broadcast_to(np.arange(num_labels), (batch, num_labels))
    rows = np.arange(batch)

    score = np.zeros((batch, num_labels), np.float32)
    alpha = np.zeros((batch, num_labels), np.float32)
    started = np.zeros(batch, bool)
    backpointers = np.empty((seq_len, batch, num_labels), np.int64)
    alphas = np.empty((seq_len, batch, num_labels), np.float32)
    for t in range(seq_len):
        real, begun = mask[:, t, None], started[:, None]
        candidates = score[:, :, None] + from_to  # (batch, from, to)
        best_from = candidates.argmax(axis=1)
        best = np.take_along_axis(candidates, best_from[:, None, :], axis=1)[:, 0]
        backpointers[t] = np.where(real & begun, best_from, identity)
        score = np.where(real, np.where(begun, best, start) + emissions[:, t], score)
        alpha = np.where(real, np.where(begun, _log_matmul(alpha, weights_forward), start) + emissions[:, t], alpha)
        alphas[t] = alpha
        started |= mask[:, t]
    log_z = _log_matmul(alpha + end, np.ones((num_labels, 1), np.float32))[:, 0]
    log_z = np.where(started, log_z, 0.0)

    current = (score + end).argmax(axis=1)
    tags = np.empty((batch, seq_len), np.int64)
    betas = np.empty((seq_len, batch, num_labels), np.float32)
    incoming = np.zeros((batch, num_labels), np.float32)
    beta = np.broadcast_to(end, (batch, num_labels)).copy()
    has_next = np.zeros(batch, bool)
    for t in range(seq_len - 1, -1, -1):
        real = mask[:, t, None]
        tags[:, t] = current
        current = backpointers[t][rows, current]
        summed = np.where(has_next[:, None], _log_matmul(incoming, weights_backward), end)
        beta = np.where(real, summed, beta)
        incoming = np.where(real, beta + emissions[:, t], incoming)
        has_next |= mask[:, t]
        betas[t] = beta
    tags = np.where(mask, tags, -100)
    log_marginals = alphas.transpose(1, 0, 2) + betas.transpose(1, 0, 2) - log_z[:, None, None]
    picked = np.take_along_axis(log_marginals, np.maximum(tags, 0)[..., None], axis=-1)[..., 0]
    scores = np.where(mask, np.exp(picked), 0.0).astype(np.float32)
    return tags, scores
