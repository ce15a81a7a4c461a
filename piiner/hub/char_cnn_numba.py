"""The char CNN at inference on the CPU: `PiiNerCharCNN`'s window sums, ReLU and max-pool as one compiled loop.

As torch ops the char CNN is some seventy small operations a call (grouping repeated words, gathers, masks), each
with a fixed cost: at batch 1 they cost more than the arithmetic. Here a word is read once, its windows summed from
the window table straight into its features. The same sums as `PiiNerCharCNN._lookup` in another order (float
rounding apart); `test_modeling.py` checks the two against each other and against a Conv1d per kernel.
"""

import numpy as np
import torch
from numba import types
from numba.typed import Dict

# The CRF's compile settings: cached next to the file where it can be, sums reassociated (vectorised).
from .crf_numba import _compile


def char_features_cpu(words: torch.LongTensor, table: np.ndarray, bias: np.ndarray,
                      kernels: np.ndarray) -> torch.Tensor:
    """
    Features of each row of `words` (char ids, 0-padded on the right), float32 `(num_words, channels)`.

    Args:
        table (`np.ndarray` of shape `(widest, char_vocab_size, channels)`): what character c at offset j of a window
            adds to every channel (0 for padding), each kernel's weights zero beyond its width.
        bias (`np.ndarray` of shape `(channels,)`), kernels (`np.ndarray`): each kernel's width, its channels in
            this order, equally many each.
    """
    rows = np.ascontiguousarray(words.numpy(), dtype=np.int64)
    out = np.empty((rows.shape[0], bias.shape[0]), dtype=np.float32)
    _features(rows, table, bias, kernels, out)
    return torch.from_numpy(out)


@_compile
def _features(words, table, bias, kernels, out):
    count, width = words.shape
    widest, channels = table.shape[0], bias.shape[0]
    per_kernel = channels // len(kernels)
    narrowest = kernels.min()
    window = np.empty(channels, np.float32)
    # Repeats of a word (its sub-tokens, every "the") are read once: the first row with the same hash, compared
    # exactly, gives its features.
    seen = Dict.empty(key_type=types.int64, value_type=types.int64)
    for n in range(count):
        length, digest = 0, np.int64(0)
        for i in range(width):
            if words[n, i] != 0:
                length += 1
            digest = digest * np.int64(1000003) + words[n, i]
        if digest in seen and np.array_equal(words[seen[digest]], words[n]):
            out[n] = out[seen[digest]]
            continue
        seen[digest] = n
        out[n] = 0.0  # features are >= 0 after ReLU: the max of the read windows
        # A window is read when it starts inside the word (a word shorter than a kernel: its first window only).
        for start in range(max(length - narrowest + 1, 1)):
            window[:] = bias
            for j in range(min(widest, width - start)):
                char = words[n, start + j]
                if char != 0:
                    window += table[j, char]
            for k in range(len(kernels)):
                if start < max(length - kernels[k] + 1, 1):
                    for c in range(k * per_kernel, (k + 1) * per_kernel):
                        out[n, c] = max(out[n, c], window[c])
