"""attncore.softmax compiled: the online softmax over the rows of an array,
key tile by key tile (a running max and sum), then one pass to normalise.
"""
import math
from typing import Any

import numba
import numpy as np
from numba import prange
from numpy.typing import ArrayLike

from .._checks import FloatArray, as_float_array, as_mask, check_axis, old_positional, positive_int
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


def softmax(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None,
            block_k: int = 1024) -> FloatArray:
    """attncore.softmax compiled, tiled: x (..., n, ...) -> same shape and dtype, normalised
    along axis, with the same keyword tail (axis, mask: boolean, True = keep, broadcasting to x).

    Masked or -inf entries get weight exactly 0; a slice with nothing left gives all zeros.
    block_k: entries per tile of the online softmax (the old second positional argument,
    deprecated by position).

    Raises
    ------
    ValueError
        As attncore.softmax; also if block_k is not a positive integer.
    """
    if deprecated:  # the old positional block_k, for one release
        (block_k,) = old_positional(softmax, deprecated, block_k=block_k)
    x = as_float_array("x", x, allow_neg_inf=True)
    axis = check_axis(axis, x.shape)
    block_k = positive_int("block_k", block_k)
    if mask is not None:
        x = np.where(as_mask(mask, x.shape), x, -np.inf).astype(x.dtype, copy=False)
    last = np.moveaxis(x, axis, -1)
    rows = np.require(last.reshape(math.prod(last.shape[:-1]), last.shape[-1]), _compute_dtype(x.dtype), "CW")
    out = np.empty_like(rows)
    _softmax(rows, block_k, out)
    return np.moveaxis(out.reshape(last.shape), -1, axis).astype(x.dtype, copy=False)
