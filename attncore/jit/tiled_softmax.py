"""attncore.softmax compiled: the online softmax over the rows of an array,
key tile by key tile (a running max and sum), then one pass to normalise.
"""
import math

import numba
import numpy as np
from numba import prange

from .._checks import as_float_array, positive_int, require_ndim
from .compiling import FASTMATH, _compute_dtype
from .exponential import _exp


@numba.njit(cache=True, fastmath=FASTMATH | {"reassoc"}, parallel=True)
def _softmax(x, block_k, out):
    """Rows of x (rows, n): one pass for the running max m and sum l, one to normalise.

    reassoc lets the tile sums vectorise; they add finite non-negative terms only.
    """
    f = x.dtype.type
    for r in prange(x.shape[0]):
        row, m, l = x[r], f(-np.inf), f(0)
        for k0 in range(0, x.shape[1], block_k):
            k1 = min(k0 + block_k, x.shape[1])
            new_max = m
            for j in range(k0, k1):
                new_max = row[j] if row[j] > new_max else new_max
            shift = f(0) if new_max == -np.inf else new_max
            total = f(0)
            for j in range(k0, k1):
                total += _exp(row[j] - shift)
            l = l * _exp(m - shift) + total
            m = new_max
        shift = f(0) if m == -np.inf else m
        for j in range(x.shape[1]):
            out[r, j] = _exp(row[j] - shift) / l if l > 0 else 0


def softmax(x, block_k=1024):
    """attncore.softmax over the last axis, tiled: x (..., n) -> same shape and dtype.

    Scores may be -inf (masked); a row with no finite score gives all zeros.
    """
    x = as_float_array("x", x, allow_neg_inf=True)
    require_ndim("x", x, 1, "(..., n)")
    block_k = positive_int("block_k", block_k)
    rows = np.require(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), _compute_dtype(x.dtype), "CW")
    out = np.empty_like(rows)
    _softmax(rows, block_k, out)
    return out.reshape(x.shape).astype(x.dtype, copy=False)
