"""CRF inference: Viterbi tags and marginals as loops compiled by numba, the model's only decode.

At inference the CRF is a recursion over positions of tiny (83-label) steps. As torch ops each step pays a fixed
per-op cost, and at batch 1 that loop costs more than the encoder; compiled, a row decodes in about a millisecond
(benchmarks/bench_crf_decode.py times both). The model runs these on the CPU wherever its emissions are (a GPU's are
copied over), and the ONNX runtime path runs them on the graph's emissions. Training's losses stay in `crf_piiner`.

Masked positions are skipped and the chain joins the real positions around them. Viterbi runs a float32 max-plus
pass (ties go to the lower label) that reads only the allowed predecessors of an "I-X" label and, for the other
labels, only the labels within the transition spread of the step's best (exact). The marginals run a float64
forward-backward in probability space, scaled at every real position; a row whose emissions are hundreds of nats
apart at one position (no trained model's softmax gives that) runs it in log space instead.
"""

import functools

import numba
import numpy as np
import torch

from .crf_piiner import FORBIDDEN_SCORE, _padded_neighbours


# The sums of the forward-backward pass may be reassociated (vectorised): results differ by rounding only. No
# "no NaN / no inf" assumptions: an -inf emission must stay -inf.
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


def _compile(function):
    try:
        return numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)(function)
    except RuntimeError:  # no writable cache location next to this file or in the user's cache
        return numba.njit(nogil=True, fastmath=_FASTMATH)(function)


def crf_decode_cpu(emissions, mask, start, transitions, end):
    """
    Viterbi tags and CRF marginals for inference on the CPU (tensors or arrays in).

    Returns:
        `(tags, marginals)` as NumPy arrays: (batch, seq_len) int64 with -100 off the mask, and (batch, seq_len,
        num_labels) float64, each real position summing to 1, 0 off the mask.
    """
    tags, _ = viterbi_cpu(emissions, mask, start, transitions, end)
    return tags, marginals_cpu(emissions, mask, start, transitions, end)


def viterbi_cpu(emissions, mask, start, transitions, end):
    """Best path per row: `(tags (batch, seq_len) int64, -100 off the mask; scores (batch,) float32, 0 for a row
    without a real position)`."""
    emissions, mask, start, transitions, end = _arrays(emissions, mask, start, transitions, end, np.float32)
    sources, counts, spread, dense_index, outgoing = _viterbi_tables(transitions.tobytes(), transitions.shape)
    batch, seq_len, _ = emissions.shape
    tags = np.empty((batch, seq_len), dtype=np.int64)
    scores = np.empty(batch, dtype=np.float32)
    _viterbi_rows(emissions, mask, start, transitions, outgoing, dense_index, end, sources, counts, spread, tags,
                  scores)
    return tags, scores


def marginals_cpu(emissions, mask, start, transitions, end):
    """p(y_t = label | x) per real position, (batch, seq_len, num_labels) float64, 0 off the mask."""
    emissions, mask, start, transitions, end = _arrays(emissions, mask, start, transitions, end, np.float64)
    scores = (start.tobytes(), transitions.tobytes(), end.tobytes(), transitions.shape)
    scaled, logs = _marginal_factors(*scores), _marginal_tables(*scores)
    out = np.empty(emissions.shape, dtype=np.float64)
    _marginal_rows(emissions, mask, start, transitions, end, *scaled, *logs, out)
    return out


# What the loops need from the transition scores, built once per set of scores (a model's are the same on every
# call; building them cost as much as decoding a short text). Keyed by the scores' bytes, so never stale.
@functools.lru_cache(maxsize=8)
def _viterbi_tables(transitions_bytes, shape):
    transitions = np.frombuffer(transitions_bytes, dtype=np.float32).reshape(shape)
    allowed = transitions > FORBIDDEN_SCORE / 2  # [to, from]
    sources, _ = _padded_neighbours(torch.from_numpy(allowed), torch.from_numpy(transitions.copy()))
    counts = allowed.sum(axis=1)
    dense = transitions[counts == allowed.shape[1]]  # labels every label may precede ("O", "B-X")
    spread = float((dense.max(axis=1) - dense.min(axis=1)).max()) if len(dense) else 0.0
    # [from, dense to]: a source's moves to the labels every label may precede, side by side, which the step reads
    # as one vector; `dense_index[to]` is a label's column there, -1 for an "I-X" (its two sources are read apart).
    dense_labels = np.flatnonzero(counts == allowed.shape[1])
    dense_index = np.full(len(counts), -1, dtype=np.int64)
    dense_index[dense_labels] = np.arange(len(dense_labels))
    outgoing = np.ascontiguousarray(transitions.T[:, dense_labels])
    return np.ascontiguousarray(sources.numpy()), counts, np.float32(spread), dense_index, outgoing


@functools.lru_cache(maxsize=8)
def _marginal_factors(start_bytes, transitions_bytes, end_bytes, shape):
    """exp of the start, transition (as [from, to]) and end scores, each shifted by its max: constant shifts cancel
    in the normalisation, and forbidden moves become exactly 0."""
    start, end = (np.frombuffer(b, dtype=np.float64) for b in (start_bytes, end_bytes))
    transitions = np.frombuffer(transitions_bytes, dtype=np.float64).reshape(shape)
    factors = np.ascontiguousarray(np.exp(transitions - transitions.max()).T)
    # The labels every label may precede and their columns, gathered for the dense steps of `_scaled_row`.
    _, counts, _, _, _ = _viterbi_tables(transitions.astype(np.float32).tobytes(), shape)
    dense_labels = np.flatnonzero(counts == shape[1])
    into_dense, from_dense = (np.ascontiguousarray(x) for x in (factors.T[dense_labels], factors[:, dense_labels]))
    return np.exp(start - start.max()), factors, np.exp(end - end.max()), dense_labels, into_dense, from_dense


@functools.lru_cache(maxsize=8)
def _marginal_tables(start_bytes, transitions_bytes, end_bytes, shape):
    """For the log-space pass: the allowed sources of each label (as for Viterbi), and for the labels every label
    may precede ("O", "B-X") their transition scores as factors, `factors[to, from] = exp(transitions[to, from] -
    row_max[to])`, 0 on the other rows. And for choosing the pass: the spread of the finite start, transition and
    end scores."""
    transitions = np.frombuffer(transitions_bytes, dtype=np.float64).reshape(shape)
    sources, counts, _, _, _ = _viterbi_tables(transitions.astype(np.float32).tobytes(), shape)
    dense = counts == shape[1]
    row_max = np.where(dense, transitions.max(axis=1), 0.0)
    factors = np.where(dense[:, None], np.exp(transitions - row_max[:, None]), 0.0)
    scores = np.concatenate([np.frombuffer(start_bytes), transitions.ravel(), np.frombuffer(end_bytes)])
    allowed = scores[scores > FORBIDDEN_SCORE / 2]
    spread = float(allowed.max() - allowed.min()) if len(allowed) else 0.0
    return sources, counts, np.ascontiguousarray(factors), row_max, spread


def _arrays(emissions, mask, start, transitions, end, dtype):
    def as_array(value, dtype):
        value = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        return np.ascontiguousarray(value, dtype=dtype)

    emissions, mask = as_array(emissions, dtype), as_array(mask, bool)
    if emissions.ndim != 3 or mask.shape != emissions.shape[:2]:
        raise ValueError(
            f"emissions must be (batch, seq_len, num_labels) and mask (batch, seq_len), got {emissions.shape} and "
            f"{mask.shape}"
        )
    return emissions, mask, as_array(start, dtype), as_array(transitions, dtype), as_array(end, dtype)


@_compile
def _viterbi_rows(emissions, mask, start, transitions, outgoing, dense_index, end, sources, source_counts, spread, tags,
                  best_scores):
    batch, seq_len, num_labels = emissions.shape
    num_dense = outgoing.shape[1]
    positions = np.empty(seq_len, np.int64)
    backpointers = np.empty((seq_len, num_labels), np.int32)
    score = np.empty(num_labels, np.float32)
    new = np.empty(num_labels, np.float32)
    near = np.empty(num_labels, np.int64)
    incoming = np.empty(num_dense, np.float32)  # each dense label's best score over the near sources at this step
    incoming_from = np.empty(num_dense, np.int32)
    for b in range(batch):
        length = 0
        for t in range(seq_len):
            tags[b, t] = -100
            if mask[b, t]:
                positions[length] = t
                length += 1
        if length == 0:
            best_scores[b] = 0.0
            continue
        for j in range(num_labels):
            score[j] = start[j] + emissions[b, positions[0], j]
        for k in range(1, length):
            t = positions[k]
            # A label more than the largest transition spread below the best score cannot win a dense label's max:
            # it would end below best + that label's smallest transition. Usually a handful are left.
            best = score.max()
            floor = best - spread - 1e-4 * (1.0 + abs(best))
            count = 0
            for i in range(num_labels):
                if score[i] >= floor:
                    near[count] = i
                    count += 1
            # Every dense label's best source among the near ones, a source at a time over those labels at once (a
            # vector step when many are near, as with emissions that barely tell labels apart); sources in
            # increasing order and a strict comparison, so ties go to the lower label.
            first = near[0]
            for d in range(num_dense):
                incoming[d] = score[first] + outgoing[first, d]
                incoming_from[d] = first
            for c in range(1, count):
                i = near[c]
                source, source_score = np.int32(i), score[i]
                for d in range(num_dense):
                    value = source_score + outgoing[i, d]
                    better = value > incoming[d]
                    incoming[d] = value if better else incoming[d]
                    incoming_from[d] = source if better else incoming_from[d]
            for j in range(num_labels):
                d = dense_index[j]
                if d >= 0:
                    best_j, arg = incoming[d], incoming_from[d]
                else:  # "I-X": its allowed sources, near or not
                    arg = sources[j, 0]
                    best_j = score[arg] + transitions[j, arg]
                    for c in range(1, source_counts[j]):
                        i = sources[j, c]
                        value = score[i] + transitions[j, i]
                        if value > best_j:
                            best_j = value
                            arg = i
                new[j] = best_j + emissions[b, t, j]
                backpointers[k, j] = arg
            score[:] = new
        arg = 0
        top = score[0] + end[0]
        for j in range(1, num_labels):
            value = score[j] + end[j]
            if value > top:
                top = value
                arg = j
        best_scores[b] = top
        for k in range(length - 1, -1, -1):
            tags[b, positions[k]] = arg
            if k:
                arg = backpointers[k, arg]


# Emission gaps (nats, at one position) up to which the probability-space pass is exact: its factors are scaled per
# position, and no label that stays possible falls more than about twice a gap plus the transitions' spread below
# the best one, far from float64's exp(-708). A trained model's log-softmax gaps are below a hundred.
SCALED_MAX_NATS = 600.0


@_compile
def _marginal_rows(emissions, mask, start, transitions, end, start_factors, scaled_factors, end_factors,
                   dense_labels, into_dense, from_dense, sources, counts, factors, row_max, spread, marginals):
    """Each row by the probability-space pass where its emissions allow it (fast: products, no logarithms), by
    the log-space pass otherwise (an emission gap of hundreds of nats, or every term of a step underflowing)."""
    batch, seq_len, num_labels = emissions.shape
    positions = np.empty(seq_len, np.int64)
    for b in range(batch):
        length = 0
        gap = 0.0
        for t in range(seq_len):
            marginals[b, t, :] = 0.0
            if mask[b, t]:
                positions[length] = t
                length += 1
                top, low = -np.inf, np.inf
                for j in range(num_labels):
                    value = emissions[b, t, j]
                    if value > FORBIDDEN_SCORE / 2:
                        top, low = max(top, value), min(low, value)
                if top > low:
                    gap = max(gap, top - low)
        if length == 0:
            continue
        rows, real = emissions[b], positions[:length]
        if 2 * gap + 4 * spread > SCALED_MAX_NATS or not _scaled_row(
                rows, real, start_factors, scaled_factors, end_factors, dense_labels, into_dense, from_dense,
                sources, counts, marginals[b]):
            _log_space_row(rows, real, start, transitions, end, sources, counts, factors, row_max, marginals[b])


@_compile
def _scaled_row(emissions, positions, start_factors, factors, end_factors, dense_labels, into_dense, from_dense,
                sources, counts, marginals):
    """Forward-backward in probability space, scaled at every real position. `factors[from, to]`; a step into a
    label every label may precede ("O", "B-X": `dense_labels`) is a contiguous dot product (`into_dense[d]` the
    column of `dense_labels[d]`, `from_dense` the dense columns of each source's row), a step into an "I-X" sums its
    two `sources` alone: its other factors are exact zeros. False (marginals left for the caller) when every term
    of a step underflowed."""
    length, num_labels = len(positions), emissions.shape[1]
    num_dense = len(dense_labels)
    emitted = np.empty((length, num_labels))
    alphas = np.empty((length, num_labels))
    scales = np.empty(length)
    beta = np.empty(num_labels)
    weighted = np.empty(num_labels)
    weighted_dense = np.empty(num_dense)
    for k in range(length):
        row = emissions[positions[k]]
        top = row.max()
        for j in range(num_labels):
            emitted[k, j] = np.exp(row[j] - top)
    for k in range(length):
        if k == 0:
            for j in range(num_labels):
                alphas[k, j] = start_factors[j]
        else:
            for d in range(num_dense):
                value = 0.0
                for i in range(num_labels):
                    value += alphas[k - 1, i] * into_dense[d, i]
                alphas[k, dense_labels[d]] = value
            for j in range(num_labels):
                if counts[j] < num_labels:
                    value = 0.0
                    for c in range(counts[j]):
                        i = sources[j, c]
                        value += alphas[k - 1, i] * factors[i, j]
                    alphas[k, j] = value
        total = 0.0
        for j in range(num_labels):
            alphas[k, j] *= emitted[k, j]
            total += alphas[k, j]
        if not total > 0.0:
            return False
        for j in range(num_labels):
            alphas[k, j] /= total
        scales[k] = total
    norm = 0.0
    for j in range(num_labels):
        norm += alphas[length - 1, j] * end_factors[j]
    if not norm > 0.0:
        return False
    for j in range(num_labels):
        beta[j] = end_factors[j] / norm
    for k in range(length - 1, -1, -1):
        if k < length - 1:
            for i in range(num_labels):
                weighted[i] = emitted[k + 1, i] * beta[i] / scales[k + 1]
            for d in range(num_dense):
                weighted_dense[d] = weighted[dense_labels[d]]
            for i in range(num_labels):
                value = 0.0
                for d in range(num_dense):
                    value += from_dense[i, d] * weighted_dense[d]
                beta[i] = value
            for to in range(num_labels):
                if counts[to] < num_labels:
                    for c in range(counts[to]):
                        i = sources[to, c]
                        beta[i] += factors[i, to] * weighted[to]
        for j in range(num_labels):
            marginals[positions[k], j] = min(alphas[k, j] * beta[j], 1.0)
    return True


@_compile
def _log_add(a, b):
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + np.log1p(np.exp(b - a))


@_compile
def _log_space_row(emissions, positions, start, transitions, end, sources, counts, factors, row_max, marginals):
    """Forward-backward in log space. A step into a label every label may precede ("O", "B-X") is one product with
    its factors, shifted by the step's best score; a step into another label ("I-X": two sources) sums its
    sources' terms exactly. No label a later position makes likely can underflow: each shift is taken over terms
    that all reach the label, and a row's factors lie within its transitions' spread."""
    length, num_labels = len(positions), emissions.shape[1]
    alphas = np.empty((length, num_labels))
    beta = np.empty(num_labels)
    new = np.empty(num_labels)
    shifted = np.empty(num_labels)
    sparse = np.empty(num_labels)
    for j in range(num_labels):
        alphas[0, j] = start[j] + emissions[positions[0], j]
    for k in range(1, length):
        previous = alphas[k - 1]
        top = previous.max()
        for i in range(num_labels):
            shifted[i] = np.exp(previous[i] - top) if top > -np.inf else 0.0
        row = emissions[positions[k]]
        for j in range(num_labels):
            if counts[j] == num_labels:
                total = 0.0
                for i in range(num_labels):
                    total += factors[j, i] * shifted[i]
                value = top + row_max[j] + np.log(total) if total > 0.0 else -np.inf
            else:
                value = -np.inf
                for c in range(counts[j]):
                    i = sources[j, c]
                    value = _log_add(value, previous[i] + transitions[j, i])
            alphas[k, j] = value + row[j]
    log_z = -np.inf
    for j in range(num_labels):
        log_z = _log_add(log_z, alphas[length - 1, j] + end[j])
    if log_z == -np.inf:
        return  # no path has any probability: every marginal stays 0
    for j in range(num_labels):
        beta[j] = end[j]
    for k in range(length - 1, -1, -1):
        for j in range(num_labels):
            marginals[positions[k], j] = min(np.exp(alphas[k, j] + beta[j] - log_z), 1.0)
        if k == 0:
            break
        row = emissions[positions[k]]
        # Into the labels every label may precede: their terms shifted by the best of them.
        top = -np.inf
        for to in range(num_labels):
            shifted[to] = row[to] + beta[to]
            if counts[to] == num_labels:
                top = max(top, shifted[to] + row_max[to])
        for i in range(num_labels):
            sparse[i] = -np.inf
        for to in range(num_labels):
            if counts[to] < num_labels:
                for c in range(counts[to]):
                    i = sources[to, c]
                    sparse[i] = _log_add(sparse[i], shifted[to] + transitions[to, i])
        for to in range(num_labels):
            dense = counts[to] == num_labels and top > -np.inf
            shifted[to] = np.exp(shifted[to] + row_max[to] - top) if dense else 0.0
        for i in range(num_labels):
            total = 0.0
            for to in range(num_labels):
                total += factors[to, i] * shifted[to]
            new[i] = _log_add(top + np.log(total) if total > 0.0 else -np.inf, sparse[i])
        beta[:] = new
