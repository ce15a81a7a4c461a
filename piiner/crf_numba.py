"""Compiled CRF inference loops for the CPU, used by `crf_piiner` when numba is installed (optional).

The NumPy decoders in `crf_piiner` pay a few NumPy calls per position: at batch 1 on a 1,200-character text that
is most of their ~10 ms. These are the same two recursions as plain loops compiled by numba, one row at a time:
Viterbi reads only the allowed predecessors of an "I-X" label (two) and, for the other labels, only the labels
within the transition spread of the step's best (exact, as in the NumPy version); the forward-backward pass runs
dense dot products. A row of a few hundred tokens decodes in about a millisecond. Same arithmetic as the NumPy
versions: float32 max-plus for Viterbi (ties go to the lower label), float64 forward-backward scaled at every real
position for the marginals. Without numba `AVAILABLE` is False and nothing here is called.
"""

import numpy as np


try:
    import numba
except ImportError:  # optional dependency
    numba = None

AVAILABLE = numba is not None


# The sums of the forward-backward pass may be reassociated (vectorised): the results differ from the NumPy ones by
# rounding only (~1e-15). No "no NaN / no inf" assumptions: an -inf emission must stay -inf.
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


def _compile(function):
    if numba is None:
        return function
    try:
        return numba.njit(cache=True, nogil=True, fastmath=_FASTMATH)(function)
    except RuntimeError:  # no writable cache location next to this file or in the user's cache
        return numba.njit(nogil=True, fastmath=_FASTMATH)(function)


@_compile
def _viterbi_rows(emissions, mask, start, transitions, end, sources, source_counts, spread, tags, best_scores):
    batch, seq_len, num_labels = emissions.shape
    positions = np.empty(seq_len, np.int64)
    backpointers = np.empty((seq_len, num_labels), np.int32)
    score = np.empty(num_labels, np.float32)
    new = np.empty(num_labels, np.float32)
    near = np.empty(num_labels, np.int64)
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
            # A label more than the largest transition spread below the best score cannot win any label's max: it
            # would end below best + that label's smallest transition. Usually a handful are left.
            best = score.max()
            floor = best - spread - 1e-4 * (1.0 + abs(best))
            count = 0
            for i in range(num_labels):
                if score[i] >= floor:
                    near[count] = i
                    count += 1
            for j in range(num_labels):
                if source_counts[j] == num_labels:
                    arg = near[0]
                    top = score[arg] + transitions[j, arg]
                    for c in range(1, count):
                        i = near[c]
                        value = score[i] + transitions[j, i]
                        if value > top:
                            top = value
                            arg = i
                else:
                    arg = sources[j, 0]
                    top = score[arg] + transitions[j, arg]
                    for c in range(1, source_counts[j]):
                        i = sources[j, c]
                        value = score[i] + transitions[j, i]
                        if value > top:
                            top = value
                            arg = i
                new[j] = top + emissions[b, t, j]
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


@_compile
def _marginal_rows(emissions, mask, start_factors, factors, end_factors, marginals):
    """`factors[from, to]`; the forward step reads `factors.T` rows, the backward step `factors` rows: both
    contiguous dot products."""
    batch, seq_len, num_labels = emissions.shape
    incoming = np.ascontiguousarray(factors.T)
    positions = np.empty(seq_len, np.int64)
    emitted = np.empty((seq_len, num_labels))
    alphas = np.empty((seq_len, num_labels))
    scales = np.empty(seq_len)
    beta = np.empty(num_labels)
    weighted = np.empty(num_labels)
    for b in range(batch):
        length = 0
        for t in range(seq_len):
            marginals[b, t, :] = 0.0
            if mask[b, t]:
                positions[length] = t
                length += 1
        if length == 0:
            continue
        for k in range(length):
            row = emissions[b, positions[k]]
            top = row.max()
            for j in range(num_labels):
                emitted[k, j] = np.exp(row[j] - top)
        for k in range(length):
            total = 0.0
            for j in range(num_labels):
                if k == 0:
                    value = start_factors[j]
                else:
                    value = 0.0
                    for i in range(num_labels):
                        value += alphas[k - 1, i] * incoming[j, i]
                value *= emitted[k, j]
                alphas[k, j] = value
                total += value
            if not total > 0.0:
                return False  # every term underflowed: the caller redoes the batch with shifted steps
            for j in range(num_labels):
                alphas[k, j] /= total
            scales[k] = total
        norm = 0.0
        for j in range(num_labels):
            norm += alphas[length - 1, j] * end_factors[j]
        norm = max(norm, 2.2250738585072014e-308)
        for j in range(num_labels):
            beta[j] = end_factors[j] / norm
        for k in range(length - 1, -1, -1):
            if k < length - 1:
                for i in range(num_labels):
                    weighted[i] = emitted[k + 1, i] * beta[i] / scales[k + 1]
                for i in range(num_labels):
                    value = 0.0
                    for to in range(num_labels):
                        value += factors[i, to] * weighted[to]
                    beta[i] = value
            for j in range(num_labels):
                marginals[b, positions[k], j] = min(alphas[k, j] * beta[j], 1.0)
    return True


def viterbi(emissions, mask, start, transitions, end, sources, source_counts, spread):
    """Best path per row: `(tags (batch, seq_len) int64 with -100 off the mask, scores (batch,) float32)`. Inputs are
    the float32 / bool arrays of `crf_piiner.viterbi_decode_numpy`, `sources[to, :source_counts[to]]` the labels
    `to` may follow, and `spread` the largest spread of transition scores into a label every label may precede (see
    `crf_piiner._viterbi_compiled`, which prepares them)."""
    batch, seq_len, _ = emissions.shape
    tags = np.empty((batch, seq_len), dtype=np.int64)
    scores = np.empty(batch, dtype=np.float32)
    _viterbi_rows(np.ascontiguousarray(emissions), np.ascontiguousarray(mask), start, np.ascontiguousarray(transitions),
                  end, np.ascontiguousarray(sources), source_counts, np.float32(spread), tags, scores)
    return tags, scores


def marginals(emissions, mask, start_factors, factors, end_factors):
    """p(y_t = label | x) per real position (float64, 0 off the mask) from the probability-space factors of
    `crf_piiner._probability_factors` (`factors[from, to]`, forbidden moves exactly 0), or None when a step
    underflows (the caller then uses the shifted NumPy pass)."""
    out = np.empty(emissions.shape, dtype=np.float64)
    ok = _marginal_rows(np.ascontiguousarray(emissions), np.ascontiguousarray(mask), start_factors,
                        np.ascontiguousarray(factors), end_factors, out)
    return out if ok else None
