"""Checks of the row invariants that return a report, not a bare bool.

A report says how far the worst row is from the claim and which row it is, so
the book can print it, the tests can assert on it and the grader can quote it.

Tolerance: a row of n weights computed in floating point sums to 1 only up to
rounding, and how far depends on how the weights were made (u = eps/2, the unit roundoff
of the dtype):

- normalised by their computed sum, w_j = e_j / sum(e): the exponentials' own rounding
  cancels (the same rounded values are summed and then divided by that sum); what remains
  is the summation, each of the n additions contributing at most about u, and the
  division, so |sum - 1| <= (n + 1) u, about n eps / 2;
- recovered from a log-sum-exp, w_j = exp(x_j - lse) (scipy's softmax, FlashAttention's
  backward P = exp(S - LSE), the log-space softmax-1): nothing divides by the weights'
  own sum, so every error of the computed lse reaches every weight of the row as the same
  factor. lse = m + log(s) is rounded to |lse| u, and log(s) carries the summation's
  (n + 1) u; the subtraction x_j - lse adds |x_j - lse| u to weight j, which averages, with
  the weights, to the row's entropy (at most log n) times u; exp and a final cast to the
  input's dtype add u each. So |sum - 1| <= |lse| u + (n + log n + 3) u.

The default atol covers both with room to spare: max(4 n, 8) eps of the dtype
(float32: eps = 1.19e-7; float64: eps = 2.2e-16), the floor 8 eps for rows too short for
4 n eps to cover one rounding, plus |lse| eps when the weights may come from a log-sum-exp
(twice its |lse| u, since lse itself is computed as m + log(s) in the working precision).
The lse term does not depend on n: it grows with the size of the scores, so a float32 row
whose scores sit near 300 needs about 300 eps however short it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._checks import as_mask, leading_shape


def default_atol(n: int, dtype: DTypeLike, lse: ArrayLike = 0.0) -> float:
    """max(4 n, 8) eps + |lse| eps of dtype: the row-sum slack that rounding allows.

    n: the length of a row; lse: the log-sum-exp of the rows' scores (one number, or one
    per row: the largest |lse| counts), for weights that may be recovered as
    exp(x - lse); 0 (the default) for weights normalised by their own sum. The module's
    docstring derives both terms.

    Examples
    --------
    >>> from attncore.invariants import default_atol
    >>> default_atol(1000, np.float32) == 4000 * float(np.finfo(np.float32).eps)
    True
    >>> default_atol(4, np.float32, lse=300.0) == 316 * float(np.finfo(np.float32).eps)
    True
    """
    eps = np.finfo(dtype).eps if np.issubdtype(dtype, np.floating) else np.finfo(float).eps
    size = np.abs(np.asarray(lse, dtype=np.float64))
    size = float(np.max(size[np.isfinite(size)], initial=0.0))
    return float((max(4 * n, 8) + size) * eps)


@dataclass(frozen=True)
class RowReport:
    """What the rows of a weight matrix (..., T_q, T_k) satisfy.

    Fields are plain floats and ints; `worst_row` is the index (a tuple over
    the leading and query axes) of the row whose sum is furthest from its target.
    Fully masked rows (every key masked, or no key at all: T_k = 0) have target sum 0;
    all others target 1. With no entry (or no row) the minima and maxima are NaN and
    the claims hold vacuously.
    """

    shape: tuple[int, ...]
    atol: float
    nonfinite_rows: int
    min_entry: float
    max_entry: float
    min_row_sum: float
    max_row_sum: float
    worst_row: tuple[int, ...]
    worst_row_error: float
    masked_mass: float
    empty_rows: int

    @property
    def finite(self) -> bool:
        return self.nonfinite_rows == 0

    @property
    def entries_in_unit_interval(self) -> bool:
        return self.finite and not (self.min_entry < 0 or self.max_entry > 1)  # NaN: no entry

    @property
    def on_simplex(self) -> bool:
        """Every row is a probability distribution (masked entries 0, empty rows all 0)."""
        return (
            self.entries_in_unit_interval
            and self.worst_row_error <= self.atol
            and self.masked_mass == 0
        )

    @property
    def sub_stochastic(self) -> bool:
        """Entries in [0, 1], nothing on masked keys, row sums at most 1 (softmax-1 rows)."""
        return (
            self.entries_in_unit_interval
            and not self.max_row_sum > 1 + self.atol  # NaN: no row
            and self.masked_mass == 0
        )

    def __str__(self):
        verdict = "on the simplex" if self.on_simplex else "NOT on the simplex"
        entries = ("no entries (NaN aside)" if np.isnan(self.min_entry)
                   else f"entries (NaN aside) in [{self.min_entry:.3g}, {self.max_entry:.3g}]")
        sums = ("no row sums (NaN aside)" if np.isnan(self.min_row_sum)
                else f"row sums in [{self.min_row_sum:.9g}, {self.max_row_sum:.9g}]")
        return (
            f"{self.shape} rows {verdict}: {self.nonfinite_rows} rows with NaN or inf, "
            f"{entries}, {sums}, worst row {self.worst_row} off by "
            f"{self.worst_row_error:.3g} (atol {self.atol:.3g}), mass on masked keys "
            f"{self.masked_mass:.3g}, {self.empty_rows} fully masked rows"
        )


def check_rows(weights: ArrayLike, mask: ArrayLike | None = None, atol: float | None = None) -> RowReport:
    """Report on the rows of weights (..., T_q, T_k), with an optional boolean mask.

    Empty weights (T_k = 0, or no rows) get a report, as softmax gives them a result.

    Raises
    ------
    ValueError
        If weights is a scalar; if mask is not boolean or does not broadcast to weights.

    Examples
    --------
    >>> from attncore import softmax
    >>> from attncore.invariants import check_rows
    >>> check_rows(softmax(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))).on_simplex
    True
    >>> report = check_rows(np.array([[0.3, 0.7], [0.5, 0.6]]))  # row 1 sums to 1.1
    >>> report.on_simplex, report.worst_row, round(report.worst_row_error, 6)
    (False, (1,), 0.1)
    >>> report = check_rows(np.array([[0.5, 0.5]]), mask=np.array([True, False]))
    >>> report.on_simplex, report.masked_mass  # weight on a masked key
    (False, 0.5)
    """
    w = np.asarray(weights)
    if w.ndim < 1:
        raise ValueError(f"weights must have shape (..., T_q, T_k) or (T_k,), got a scalar, shape {w.shape}")
    atol = default_atol(w.shape[-1], w.dtype) if atol is None else float(atol)
    allowed = np.ones(w.shape, bool) if mask is None else as_mask(mask, w.shape)
    empty = ~allowed.any(axis=-1)
    w64 = w.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf rows are reported, not warned
        sums = w64.sum(axis=-1)
        error = np.abs(sums - np.where(empty, 0.0, 1.0))
    error = np.where(np.isnan(error), np.inf, error)
    worst, worst_error = _worst(error)
    return RowReport(
        shape=w.shape,
        atol=atol,
        nonfinite_rows=int((~np.isfinite(w64).all(axis=-1)).sum()),
        min_entry=_ignoring_nan(np.min, w64),
        max_entry=_ignoring_nan(np.max, w64),
        min_row_sum=_ignoring_nan(np.min, sums),
        max_row_sum=_ignoring_nan(np.max, sums),
        worst_row=worst,
        worst_row_error=worst_error,
        masked_mass=float(np.abs(np.where(allowed, 0, w64)).sum()),
        empty_rows=int(empty.sum()),
    )


def _worst(error: np.ndarray) -> tuple[tuple[int, ...], float]:
    """The index (a tuple) of the largest entry of error and that entry; ((), 0.0) when it is empty."""
    if error.size == 0:
        return (), 0.0
    index = np.unravel_index(np.argmax(error), error.shape)
    return tuple(int(i) for i in index), float(error[index])


def _ignoring_nan(reduce, x: np.ndarray) -> float:
    """reduce over the non-NaN entries of x; NaN when there are none."""
    x = x[~np.isnan(x)]
    return float(reduce(x)) if x.size else float("nan")


@dataclass(frozen=True)
class ConvexityReport:
    """Is every output row the weighted average of the value rows its weights describe?"""

    rows_on_simplex: bool
    max_mix_error: float
    max_hull_excess: float
    atol: float

    @property
    def convex(self) -> bool:
        return self.rows_on_simplex and self.max_mix_error <= self.atol and self.max_hull_excess <= self.atol

    def __str__(self):
        verdict = "convex combinations" if self.convex else "NOT convex combinations"
        return (
            f"outputs are {verdict}: weights on simplex {self.rows_on_simplex}, "
            f"|out - A v| up to {self.max_mix_error:.3g}, outside the per-coordinate "
            f"hull of the attended values by up to {self.max_hull_excess:.3g} (atol {self.atol:.3g})"
        )


def check_convex_combination(output: ArrayLike, weights: ArrayLike, values: ArrayLike,
                             mask: ArrayLike | None = None, atol: float | None = None) -> ConvexityReport:
    """Check output (..., T_q, d_v) = weights (..., T_q, T_k) @ values (..., T_k, d_v).

    Also checks that every output coordinate lies between the smallest and largest
    value of that coordinate over the keys the row gives weight to (a necessary
    condition for lying in their convex hull, exact up to rounding).

    Raises
    ------
    ValueError
        If the three shapes do not fit together (T_q, T_k, d_v and the leading
        dimensions); if mask is not boolean or does not broadcast to weights.

    Examples
    --------
    >>> from attncore import attention
    >>> from attncore.invariants import check_convex_combination
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 4, 2))
    >>> out, A = attention(q, k, v, return_weights=True)
    >>> check_convex_combination(out, A, v).convex
    True
    >>> check_convex_combination(out + 10, A, v).convex  # outside the hull of the values
    False
    """
    out, w, v = (np.asarray(a, dtype=np.float64) for a in (output, weights, values))
    _check_fit(out, w, v)
    rows = check_rows(np.asarray(weights), mask=mask)
    scale = max(1.0, float(np.abs(v).max(initial=0)))
    atol = rows.atol * scale if atol is None else float(atol)
    mix_error = float(np.abs(out - w @ v).max(initial=0))
    used = (w > 0)[..., :, :, None]  # (..., T_q, T_k, 1)
    vv = v[..., None, :, :]  # (..., 1, T_k, d_v)
    low = np.where(used, vv, np.inf).min(axis=-2)
    high = np.where(used, vv, -np.inf).max(axis=-2)
    has_support = used.any(axis=-2)
    excess = np.where(has_support, np.maximum(low - out, out - high), 0)
    return ConvexityReport(rows.on_simplex, mix_error, float(np.max(excess, initial=0)), atol)


def _check_fit(out: np.ndarray, w: np.ndarray, v: np.ndarray) -> None:
    """Raise unless out (..., T_q, d_v), w (..., T_q, T_k) and v (..., T_k, d_v) fit together."""
    if (min(out.ndim, w.ndim, v.ndim) < 2 or w.shape[-1] != v.shape[-2] or out.shape[-1] != v.shape[-1]
            or out.shape[-2] != w.shape[-2]):
        raise ValueError(
            f"output (..., T_q, d_v), weights (..., T_q, T_k) and values (..., T_k, d_v) must fit together: "
            f"got output {out.shape}, weights {w.shape}, values {v.shape}"
        )
    leading_shape(output=out, weights=w, values=v)
