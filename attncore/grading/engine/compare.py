"""When a learner's result counts as the expected one: tolerances and same()."""
import numpy as np


def tolerances(expected, rtol=None):
    """rtol, atol for comparing with the reference.

    Loose enough for any correct order of operations even when scores reach 1e4
    (their rounding errors, ~1e4 * d_k * eps, move the weights by that relative
    amount), tight enough that every catalogued mistake, which changes results
    by far more, is seen: rtol 1e-6 in float64 and 2e-3 in float32. atol is a
    twentieth of that, relative to the largest expected entry: an entry near 0 that
    is a difference of larger terms (a weighted sum of values of both signs, x - tau
    in sparsemax) carries a rounding error relative to those terms, not to itself,
    and inputs drawn at grading time land on such entries by chance.
    """
    dtype = expected.dtype if np.issubdtype(expected.dtype, np.floating) else np.float64
    loose = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3}.get(np.dtype(dtype), 1e-6)
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0))
    rtol = rtol if rtol is not None else loose
    return rtol, loose * 0.05 * scale


def several(expected):
    """Is expected a tuple of results with different shapes, such as (output, weights)?"""
    return isinstance(expected, tuple) and len({np.shape(v) for v in expected}) > 1


def same(a, b, rtol=None):
    """a and b have one shape and agree within tolerance (NaN matches NaN); when b is
    several results, a must be as many, each agreeing with its counterpart."""
    if several(b):
        return isinstance(a, (tuple, list)) and len(a) == len(b) and all(
            same(x, y, rtol) for x, y in zip(a, b))
    try:
        a, b = np.asarray(a), np.asarray(b)
    except Exception:  # a ragged or odd return value
        return False
    if a.shape != b.shape:
        return False
    if a.dtype == bool or b.dtype == bool or not np.issubdtype(b.dtype, np.number):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if not np.issubdtype(a.dtype, np.number):
        return False
    rtol, atol = tolerances(b, rtol)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def differing(got, expected, rtol=None):
    """The boolean mask of the entries where got (of expected's shape) is not expected."""
    got, expected = np.asarray(got), np.asarray(expected)
    if expected.dtype == bool or got.dtype == bool:
        return got.astype(bool) != expected.astype(bool) if got.dtype != object else got != expected
    rtol, atol = tolerances(expected, rtol)
    with np.errstate(all="ignore"):
        return ~np.isclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                           atol=atol, equal_nan=True)
