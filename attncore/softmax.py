"""Softmax and its relatives, stable for any finite input.

Every function normalises along `axis` (the last one by default, the key axis
of a score matrix (..., T_q, T_k)). An optional boolean `mask` (True = keep)
removes entries before normalising: they get weight exactly 0, and a slice
with nothing left gets all zeros instead of the 0/0 = NaN of the naive formula.
Both are keyword-only after x, as the keyword tail of attention.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._checks import FloatArray, as_float_array, as_mask, check_axis, finite_or_zero, old_positional


def _prepare(x, axis, mask):
    """Validated scores with masked entries set to -inf, and the safe row max.

    The max is taken per slice along `axis` (never a global max: rows with
    very different scales would underflow). A slice that is entirely -inf
    gets max 0 so that x - max stays -inf rather than NaN.
    """
    x = as_float_array("x", x, allow_neg_inf=True)
    return _masked(x, axis, None if mask is None else as_mask(mask, x.shape))


def _masked(x, axis, mask):
    """_prepare's work on trusted input: x (float, no NaN or +inf) and mask (None, or
    boolean of x's shape)."""
    if mask is not None:
        x = np.where(mask, x, -np.inf).astype(x.dtype, copy=False)
    return x, finite_or_zero(np.max(x, axis=axis, keepdims=True, initial=-np.inf))


def _normalise(x, m, axis):
    """softmax of x given its safe slice max m (from _prepare or _masked)."""
    e = np.exp(x - m)
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total == 0, 1, total).astype(x.dtype, copy=False)


def _masked_softmax(x, mask=None, axis=-1):
    """softmax(x, axis, mask) for trusted input: the core of attention_weights, which has
    checked its q and k (the scores are finite) and its mask (boolean, of x's shape)."""
    return _normalise(*_masked(x, axis, mask), axis)


def logsumexp(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None,
              keepdims: bool = False) -> FloatArray:
    """log(sum(exp(x))) along axis; -inf for an empty (fully masked) slice.

    Raises
    ------
    ValueError
        If x is not a floating-point array or holds NaN or +inf (-inf is a masked entry);
        if mask is not boolean or does not broadcast to x; numpy.exceptions.AxisError (a
        ValueError) if axis is not an axis of x.

    Examples
    --------
    >>> from attncore import logsumexp
    >>> round(float(logsumexp(np.array([1000.0, 1000.0]))), 4)  # 1000 + log 2, no overflow
    1000.6931
    >>> float(logsumexp(np.array([1.0, 2.0]), mask=np.array([False, False])))
    -inf
    """
    if deprecated:  # the old positional axis, mask and keepdims, for one release
        axis, mask, keepdims = old_positional(logsumexp, deprecated, axis=axis, mask=mask, keepdims=keepdims)
    out = _lse(*_prepare(x, axis, mask), axis)
    return out if keepdims else np.squeeze(out, axis=axis)


def _lse(x, m, axis):
    """log(sum(exp(x))) along axis (kept) given the safe slice max m; -inf for an empty slice."""
    with np.errstate(divide="ignore"):
        return m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def log_softmax(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """x - logsumexp(x); masked entries (log of weight 0) are -inf, as is a fully masked slice.

    Raises
    ------
    ValueError
        As softmax.

    Examples
    --------
    >>> from attncore import log_softmax
    >>> log_softmax(np.array([0.0, 0.0, 5.0]), mask=np.array([True, True, False])).round(4).tolist()
    [-0.6931, -0.6931, -inf]
    """
    if deprecated:  # the old positional axis and mask, for one release
        axis, mask = old_positional(log_softmax, deprecated, axis=axis, mask=mask)
    x, m = _prepare(x, axis, mask)
    return x - finite_or_zero(_lse(x, m, axis))


def softmax(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """exp(x_i - m) / sum_j exp(x_j - m), with m the slice max; same shape and dtype.

    Masked entries are exactly 0; a fully masked slice is all zeros.

    Raises
    ------
    ValueError
        If x is not a floating-point array or holds NaN or +inf (-inf is a masked entry);
        if mask is not boolean or does not broadcast to x; numpy.exceptions.AxisError (a
        ValueError) if axis is not an axis of x.

    Examples
    --------
    >>> from attncore import softmax
    >>> softmax(np.array([0.0, np.log(3.0)])).round(6).tolist()
    [0.25, 0.75]
    >>> scores = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    >>> softmax(scores, mask=np.array([True, True, False])).round(3).tolist()
    [[0.269, 0.731, 0.0], [0.5, 0.5, 0.0]]
    >>> softmax(scores, mask=np.zeros(3, bool)).tolist()  # nothing allowed: zeros, not NaN
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    >>> softmax(np.array([1, 2]))
    Traceback (most recent call last):
    ...
    ValueError: x must be a floating-point array (float16, float32 or float64), got dtype int...
    """
    if deprecated:  # the old positional axis and mask, for one release
        axis, mask = old_positional(softmax, deprecated, axis=axis, mask=mask)
    return _normalise(*_prepare(x, axis, mask), axis)


def softmax_one(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """Off-by-one softmax exp(x_i) / (1 + sum_j exp(x_j)) (Miller, 2023).

    Stable form: with m = max(0, max_j x_j), the "1" becomes exp(-m), so
    out_i = exp(x_i - m) / (exp(-m) + sum_j exp(x_j - m)). Rows sum to less than 1;
    masked entries are 0 and a fully masked slice is all zeros (the "1" keeps it finite).

    Raises
    ------
    ValueError
        As softmax.

    Examples
    --------
    >>> from attncore import softmax_one
    >>> softmax_one(np.array([0.0, 0.0])).round(4).tolist()  # exp(0) / (1 + 2)
    [0.3333, 0.3333]
    >>> bool(softmax_one(np.array([-30.0, -30.0])).sum() < 1e-12)  # a row may attend to nothing
    True
    """
    if deprecated:  # the old positional axis and mask, for one release
        axis, mask = old_positional(softmax_one, deprecated, axis=axis, mask=mask)
    x, m = _prepare(x, axis, mask)
    m = np.maximum(m, 0).astype(x.dtype, copy=False)
    e = np.exp(x - m)
    return e / (np.exp(-m) + np.sum(e, axis=axis, keepdims=True))


def sparsemax(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """Euclidean projection of x onto the probability simplex (Martins & Astudillo, 2016).

    out_i = max(x_i - tau, 0) with tau chosen so the row sums to 1; low scores get
    exactly 0, so rows lie on a face of the simplex. Shift-invariant, so computed on
    x - max (without it float32 rows at 1e4 leave the simplex). Masked (or -inf)
    entries are exactly 0; a fully masked slice is all zeros. Same shape and dtype.

    Raises
    ------
    ValueError
        As softmax; a scalar x, which has no axis, raises numpy.exceptions.AxisError too.

    Examples
    --------
    >>> from attncore import sparsemax
    >>> sparsemax(np.array([1.0, 0.8, 0.1])).round(6).tolist()  # tau = 0.4: the low score gets 0
    [0.6, 0.4, 0.0]
    >>> x = np.array([0.3, 0.1, -0.2, 0.25], np.float32) + np.float32(1e4)
    >>> round(float(sparsemax(x).sum()), 5)  # float32 at an offset of 1e4: still on the simplex
    1.0
    """
    if deprecated:  # the old positional axis and mask, for one release
        axis, mask = old_positional(sparsemax, deprecated, axis=axis, mask=mask)
    check_axis(axis, np.shape(x))
    x, m = _prepare(x, axis, mask)
    z = np.moveaxis(x - m, axis, -1)  # row max 0; masked entries -inf
    z_sorted = -np.sort(-z, axis=-1)  # descending, masked entries last
    k = np.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    in_support = 1 + k * z_sorted > np.cumsum(z_sorted, axis=-1)  # a prefix; empty iff fully masked
    support_size = np.sum(in_support, axis=-1, keepdims=True)
    support_sum = np.sum(np.where(in_support, z_sorted, 0), axis=-1, keepdims=True)
    tau = np.where(support_size > 0, (support_sum - 1) / np.maximum(support_size, 1), 0)
    return np.moveaxis(np.maximum(z - tau.astype(z.dtype), 0), -1, axis)


def hardmax(x: ArrayLike, *deprecated: Any, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """One-hot argmax along axis (the first maximum on ties): a vertex of the simplex.

    Masked (or -inf) entries are never picked; a fully masked slice is all zeros.
    Empty input (no keys, or no rows) gives an empty result of the same shape, as softmax does.

    Raises
    ------
    ValueError
        As softmax; a scalar x, which has no axis, raises numpy.exceptions.AxisError too.

    Examples
    --------
    >>> from attncore import hardmax
    >>> hardmax(np.array([[0.1, 0.7, 0.7], [2.0, 1.0, 0.0]])).tolist()
    [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    >>> hardmax(np.array([[0.1, 0.7, 0.7], [2.0, 1.0, 0.0]]), mask=np.array([True, False, False])).tolist()
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    if deprecated:  # the old positional axis and mask, for one release
        axis, mask = old_positional(hardmax, deprecated, axis=axis, mask=mask)
    check_axis(axis, np.shape(x))
    x, _ = _prepare(x, axis, mask)  # masked entries -inf
    out = np.zeros_like(x)
    if x.size == 0:  # argmax has nothing to pick
        return out
    first_max = np.expand_dims(np.argmax(x, axis=axis), axis)
    any_kept = np.take_along_axis(x, first_max, axis=axis) > -np.inf  # else the slice is fully masked
    np.put_along_axis(out, first_max, any_kept, axis=axis)
    return out
