"""02-simplex: softmax over the last axis, and is_row_stochastic.

softmax is compared with attncore.softmax; is_row_stochastic with
attncore.invariants.check_rows(W, atol=atol).on_simplex (finite, entries in
[0, 1], every row sum within atol of 1; atol=None means default_atol(n, dtype),
max(4 n, 8) eps of W's dtype, the slack the chapter derives).

is_row_stochastic returns one bool, so every wrong version "matches" a learner
whenever both answer wrongly. Its cases are therefore built so that each one is
answered wrongly by exactly one catalogued misconception (checked by
tests/test_catalogue.py through the wrong solutions in tests/wrong/simplex.py),
and each case's description says what it is about.
"""
import numpy as np

import attncore
from attncore.invariants import check_rows, default_atol

from .. import stand_ins
from ..probe import Case, FunctionSpec, Misconception, ResultDtype
from .common import (
    DRAWN,
    EXP2,
    EXP2_FIX,
    GLOBAL_MAX,
    GLOBAL_MAX_FIX,
    KEEPDIMS,
    KEEPDIMS_FIX,
    MIN_SUBTRACTED,
    MIN_SUBTRACTED_FIX,
    UNSTABLE,
    UNSTABLE_FIX,
    WHOLE,
    WHOLE_FIX,
    WRONG_AXIS,
    WRONG_AXIS_FIX,
    along_axis_detail,
    along_other_axes,
    arrays,
    closer_rows,
    exp2_softmax,
    generator,
    global_max_softmax,
    integers,
    max_without_keepdims,
    min_softmax,
    naive_softmax,
    rounded_rows,
    rows_of_different_scales,
    score_rows,
    sum_without_keepdims,
    two_d_only,
    whole_array_softmax,
    whole_sum_softmax,
    written_or_drawn,
)

ASSIGNMENT = "02-simplex"


# ---------------------------------------------------------------- softmax

def scores(seed, *shape, **kw):
    return {"scores": score_rows(seed, *shape, **kw)}


def mostly_negative(seed, t, n):
    """Scores between -560 and -540: exp of them is tiny (~1e-240) but a normal float64."""
    rng = generator(seed)
    return {"scores": rng.uniform(-560.0, -540.0, size=(t, n))}


def offsets_rows(seed, t, n, dtype=np.float64):
    return {"scores": rows_of_different_scales(seed, t, n, dtype=dtype)}


SOFTMAX_CASES = {
    "basic": [
        Case("2 rows of 3 scores, small values", lambda: scores(1, 2, 3)),
    ],
    "hidden": [
        Case("3-D input (2, 3, 4): a batch of score matrices", lambda: scores(2, 2, 3, 4)),
        Case("4-D input (2, 2, 3, 5): batch and heads", lambda: scores(3, 2, 2, 3, 5)),
        Case("a single column (n = 1): every weight is exactly 1", lambda: scores(4, 3, 1)),
        Case("a float32 single column (n = 1): exactly 1, still float32",
             lambda: scores(13, 2, 1, dtype=np.float32)),
        Case("float32 scores, shape (3, 4): the result must stay float32",
             lambda: scores(5, 3, 4, dtype=np.float32)),
    ],
    "extreme": [
        Case("2 rows of scores between 700 and 800 (float64): exp(x) alone overflows",
             lambda: scores(6, 2, 5, scale=20.0, offset=750.0)),
        Case("float32 scores between 100 and 140: exp(x) alone overflows in float32",
             lambda: scores(7, 3, 4, dtype=np.float32, scale=8.0, offset=120.0)),
        Case("mostly negative scores, between -560 and -540 (float64)",
             lambda: mostly_negative(8, 3, 5)),
        Case("4 rows at offsets -1e4, 0, 1e4, -50: rows on wildly different scales",
             lambda: offsets_rows(9, 4, 5)),
        Case("float32, 4 rows at offsets -1e4, 0, 1e4, -50: every row must still sum to 1 "
             "within the slack max(4 n, 8) eps", lambda: offsets_rows(12, 4, 5, np.float32)),
        Case("float32 scores up to 1e4 in magnitude, shape (3, 6)",
             lambda: scores(10, 3, 6, dtype=np.float32, scale=5e3)),
        Case("3-D float64 scores up to 1e4 in magnitude, shape (2, 3, 4)",
             lambda: scores(11, 2, 3, 4, scale=5e3)),
    ],
}


def _normalise_each_slice(x):
    """A loop over x[i] written for 2-D input: on 3-D input each x[i] is a whole matrix."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out


def _neither_keepdims(x):
    e = np.exp(x - x.max(axis=-1))
    return e / e.sum(axis=-1)


def _unstabilised_log_sum_exp(x):
    return np.exp(x - np.log(np.sum(np.exp(x), axis=-1, keepdims=True)))


def _clipped_naive(x):
    e = np.exp(np.clip(x, -700.0, 700.0))
    return e / e.sum(axis=-1, keepdims=True)



SOFTMAX_MISCONCEPTIONS = [
    two_d_only(lambda x: attncore.softmax(x, axis=1)),
    Misconception(WRONG_AXIS, WRONG_AXIS_FIX + " With more than two dimensions, axis=1 is not "
                  "the last axis either: write axis=-1.",
                  variants=along_other_axes(attncore.softmax),
                  detail=along_axis_detail("the softmax")),
    Misconception(WHOLE, WHOLE_FIX,
                  variants=(whole_array_softmax, _normalise_each_slice, whole_sum_softmax),
                  detail="Your entries add up to 1 over a whole block of rows, not row by row."),
    Misconception(KEEPDIMS, KEEPDIMS_FIX,
                  variants=(max_without_keepdims, sum_without_keepdims, _neither_keepdims),
                  detail="Your row maxima or row sums were applied along the wrong axis: entry "
                         "(i, j) was shifted or divided by the value of row j instead of row i."),
    Misconception(EXP2, EXP2_FIX, variants=(exp2_softmax,),
                  detail="Your weights match 2 ** (x - m) in place of exp(x - m)."),
    Misconception(MIN_SUBTRACTED, MIN_SUBTRACTED_FIX, variants=(min_softmax,)),
    Misconception(UNSTABLE, UNSTABLE_FIX,
                  variants=(naive_softmax, _unstabilised_log_sum_exp, _clipped_naive),
                  detail="exp of these scores overflows (or underflows to 0) unless each row's "
                         "maximum is subtracted first."),
    Misconception(GLOBAL_MAX, GLOBAL_MAX_FIX, variants=(global_max_softmax,)),
    rounded_rows("scores"),
]


# ------------------------------------------------------- is_row_stochastic

def _w(rows, dtype=np.float64, **extra):
    return {"W": np.array(rows, dtype=dtype), **extra}


def circulant(a, b, c, dtype=np.float64, **extra):
    """[[a, b, c], [c, a, b], [b, c, a]]: rows and columns all sum to a + b + c."""
    return {"W": np.array([[a, b, c], [c, a, b], [b, c, a]], dtype=dtype), **extra}


def float32_softmax_rows():
    """A float32 softmax of 4 rows of 50 scores: row sums are 1 within about 1e-7."""
    (x,) = arrays(21, (4, 50), dtype=np.float32, scale=2.0)
    return {"W": attncore.softmax(x)}


def dyadic_rows_3d():
    """(2, 3, 4) rows of exact binary fractions: the rows sum to 1 exactly, no other axis does."""
    base = np.array([[0.5, 0.25, 0.125, 0.125],
                     [0.0625, 0.75, 0.125, 0.0625],
                     [0.375, 0.125, 0.25, 0.25]])
    return {"W": np.stack([base, base[::-1, ::-1]])}


def _binary_fractions(rng, n):
    """n powers of 2 that sum to exactly 1, in a drawn order: 1 cut in halves n - 1 times,
    each time a drawn part."""
    parts = [1.0]
    for _ in range(n - 1):
        at = int(rng.integers(len(parts)))
        parts[at] /= 2
        parts.append(parts[at])
    return rng.permutation(parts)


def _binary_rows(rng, *shape):
    """Rows of shape[-1] binary fractions (_binary_fractions), every sum exactly 1."""
    rows = [_binary_fractions(rng, shape[-1]) for _ in range(int(np.prod(shape[:-1])))]
    return np.reshape(rows, shape)


def _some_rows(rng, most=4):
    """(t, n): 2 to `most` rows of 3 to 5 entries."""
    return int(rng.integers(2, most + 1)), int(rng.integers(3, 6))


def _place(rng, W):
    """A drawn row and a drawn entry of it, as an index of W."""
    return tuple(int(rng.integers(size)) for size in W.shape)


def _rows_3d(rng):
    """(2 to 3, 2 to 4, 3 to 5) rows of binary fractions, drawn until no other axis sums
    to 1 everywhere."""
    shape = (int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(3, 6)))
    while True:
        W = _binary_rows(rng, *shape)
        if not any(np.allclose(W.sum(axis=axis), 1) for axis in (0, 1)):
            return {"W": W}


def _hundredths(rng, n):
    """n positive hundredths that add up to 1 in decimal (k_i / 100, the k_i >= 1 summing
    to 100)."""
    cuts = np.sort(rng.choice(np.arange(1, 100), n - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [100]])) / 100


def _rotations(rng, off=0.0, dtype=np.float64, inexact=False, n=None, **extra):
    """A circulant of n (3 to 5, drawn) hundredths (each row the first rotated: rows and
    columns all sum to the same), the last one plus off; inexact: drawn until some row's
    sum in floating point is not exactly 1."""
    n = n or int(rng.integers(3, 6))
    while True:
        first = _hundredths(rng, n)
        first[-1] += off
        W = np.stack([np.roll(first, shift) for shift in range(n)]).astype(dtype)
        if not inexact or np.any(W.sum(axis=-1) != 1):
            return {"W": W, **extra}


def _off_within_atol(rng):
    """Rotations of n hundredths (_rotations), given an atol from 1e-3 to 5e-3, off by 0.3
    to 0.9 of atol / n: within atol, and all n rows together too."""
    atol, n = _atol_from(rng, 1e-3, 5e-3), int(rng.integers(3, 6))
    return _rotations(rng, off=atol * rng.uniform(0.3, 0.9) / n, n=n, atol=atol)


def _one_entry_rows(rng):
    """2 to 10 rows of one entry: 1, but one drawn row at 1 - k eps (float64), k from 4.5
    to 7.5 in steps of 1/2 (the spacing of floats below 1). The total of all entries is
    within 8 eps of the number of rows, however it is added up."""
    W = np.ones((int(rng.integers(2, 11)), 1))
    W[int(rng.integers(len(W))), 0] -= rng.integers(9, 16) / 2 * np.finfo(np.float64).eps
    return {"W": W}


def _long_float32_rows(rng):
    """2 to 3 float32 rows of 600 to 1200 positive entries, summing to 1 + 2e-5 to 2e-4,
    the next to 1 minus that, and so on."""
    t, n = int(rng.integers(2, 4)), int(rng.integers(600, 1201))
    W = rng.uniform(0.5, 1.5, (t, n))
    W /= W.sum(axis=-1, keepdims=True)
    off = 10 ** rng.uniform(np.log10(2e-5), np.log10(2e-4), (t, 1))
    return {"W": (W * (1 + off * (-1) ** np.arange(t)[:, None])).astype(np.float32)}


def _raised(rng, low, high, atol=None, one_hot=False):
    """Rows of binary fractions (a drawn one one-hot: one_hot), a drawn entry of a drawn row
    raised by a log-uniform amount from low to high times atol (times 1 when atol is None)."""
    W = _binary_rows(rng, *_some_rows(rng))
    row = int(rng.integers(len(W)))
    if one_hot:
        W[row] = np.eye(W.shape[-1])[int(rng.integers(W.shape[-1]))]
    at = int(np.argmax(W[row])) if one_hot else int(rng.integers(W.shape[-1]))
    W[row, at] += 10 ** rng.uniform(np.log10(low), np.log10(high)) * (atol or 1.0)
    return {"W": W} if atol is None else {"W": W, "atol": atol}


def _with_entry(rng, value, one_row=False):
    """2 to 6 rows of 4 to 8 binary fractions with `value` (NaN, inf) at a drawn entry, or in
    every entry of a drawn row (one_row)."""
    W = _binary_rows(rng, int(rng.integers(2, 7)), int(rng.integers(4, 9)))
    row, at = _place(rng, W)
    W[row, slice(None) if one_row else at] = value
    return {"W": W}


def _atol_from(rng, low, high):
    """A log-uniform atol from low to high."""
    return float(10 ** rng.uniform(np.log10(low), np.log10(high)))


def _negative_entry(seed):
    """A softmax of 2 to 6 rows of 2 to 6 scores where one row moves 0.05 plus an entry's
    weight to its neighbour: every row still sums to 1, one entry is -0.05, none is above 1
    (drawn again until so: only the negative entry makes it wrong)."""
    for tried in range(seed, seed + 300, 3):
        t_q, t_k = integers(tried, 2, 6, 2)
        (x,) = arrays(tried, (t_q, t_k))
        W = attncore.softmax(x)
        i, j = integers(tried + 1, 0, t_q - 1, 1)[0], integers(tried + 2, 0, t_k - 2, 1)[0]
        W[i, j + 1] += W[i, j] + 0.05
        W[i, j] = -0.05
        if W.max() <= 1:
            return {"W": W}
    raise AssertionError("no draw of a negative entry kept every other entry <= 1")


def _dyadic_rows(seed, doubled=False):
    """2 to 4 rows of 1/2, 1/4, 1/8, 1/8 each in a drawn order (every sum exactly 1); doubled:
    one drawn row times 2 (it sums to 2, its entries stay in [0, 1])."""
    t_q = integers(seed, 2, 4, 1)[0]
    rng = np.random.default_rng(integers(seed + 1, 0, 2 ** 31, 1))
    W = np.stack([rng.permutation([0.5, 0.25, 0.125, 0.125]) for _ in range(t_q)])
    if doubled:
        W[integers(seed + 2, 0, t_q - 1, 1)[0]] *= 2
    return {"W": W}


def _atol_zero(seed):
    """Rows of exact binary fractions (2 to 5 rows of 4, drawn), one entry 0.5 moved up by
    4 eps: that row sums to 1 + 8.9e-16 exactly, within the default slack, not within 0."""
    t_q = integers(seed, 2, 5, 1)[0]
    rng = np.random.default_rng(integers(seed + 1, 0, 2 ** 31, 1))
    base = np.array([0.5, 0.25, 0.125, 0.125])
    W = np.stack([rng.permutation(base) for _ in range(t_q)])
    i = integers(seed + 2, 0, t_q - 1, 1)[0]
    W[i, np.argmax(W[i])] += 4 * np.finfo(np.float64).eps
    return {"W": W, "atol": 0.0}


def _many_short_rows(seed):
    """300 to 400 float32 softmax rows of 3 (drawn); one row sums to 1 + 1e-4. The default
    slack for rows of 3 is 8 eps = 9.5e-7; one taken from W.size or the number of rows
    would be over 1e-4."""
    t_q = integers(seed, 300, 400, 1)[0]
    (x,) = arrays(seed, (t_q, 3), dtype=np.float32)
    W = attncore.softmax(x)
    i = integers(seed + 1, 0, t_q - 1, 1)[0]
    j = int(np.argmin(W[i]))
    W[i, j] += np.float32(1e-4)
    return {"W": W}


def long_float32_rows():
    """2 float32 rows of 1000 entries near 1e-3 whose sums are 1 + 1e-4 and 1 - 1e-4."""
    rows = np.full((2, 1000), 1e-3) + np.array([[1e-7], [-1e-7]])
    return {"W": rows.astype(np.float32)}


def _case(description, seed, written, draw):
    """A hidden case of is_row_stochastic: written() for a learner's own check, draw(rng)
    when graded (common.written_or_drawn)."""
    return Case(description, lambda: written_or_drawn(seed, written, draw))


def _permutation(rng):
    """A permutation of the n x n identity, n from 2 to 9: one-hot rows and columns."""
    n = int(rng.integers(2, 10))
    return {"W": np.eye(n)[rng.permutation(n)]}


EPS = np.finfo(np.float64).eps
ROW_CASES = {
    "basic": [
        Case("2 x 3, every row sums to 1, the columns do not (expected True)",
             lambda: _w([[0.25, 0.5, 0.25], [0.125, 0.375, 0.5]])),
        Case("2 x 3, row sums 1.2 and 0.8 although all entries add up to 2 (expected False)",
             lambda: _w([[0.5, 0.4, 0.3], [0.2, 0.3, 0.3]])),
        Case("2 x 3, rows sum to 1 but one entry is negative (expected False)",
             lambda: _w([[0.625, 0.625, -0.25], [0.5, 0.25, 0.25]])),
        Case(f"2 to 4 rows of the binary fractions 1/2, 1/4, 1/8, 1/8 in an order {DRAWN} "
             f"(expected True)", lambda: _dyadic_rows(25)),
        Case(f"the same kind of rows, one of them doubled so that it sums to 2, {DRAWN} "
             f"(expected False)", lambda: _dyadic_rows(26, doubled=True)),
    ],
    # Every hidden case draws its sizes, values and places when graded (written_or_drawn).
    "hidden": [
        _case("one row of 3 to 10 binary fractions (powers of 2 that sum to exactly 1), as a "
              "(1, n) array (expected True)", 41, lambda: _w([[0.125, 0.5, 0.25, 0.125]]),
              lambda rng: {"W": _binary_rows(rng, 1, int(rng.integers(3, 11)))}),
        _case("3-D (2 to 3, 2 to 4, 3 to 5): rows of exact binary fractions, no other axis sums "
              "to 1 (expected True)", 42, dyadic_rows_3d, _rows_3d),
        _case("float64 rows of hundredths (such as 0.1, 0.2, 0.7) that add up to 1 in decimal, "
              "one or more not exactly in floating point, default atol (expected True)",
              43, lambda: circulant(0.1, 0.2, 0.7), lambda rng: _rotations(rng, inexact=True)),
        _case("one-hot rows, a permutation of the n x n identity (n from 2 to 9): entries "
              "exactly 0 and 1 are allowed (expected True)", 44,
              lambda: _w([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), _permutation),
        _case("float64 rows whose sums differ from 1 by 1e-10 to 5e-9, default atol: far more "
              "than float64 rounding explains (expected False)", 45,
              lambda: circulant(0.3, 0.3, 0.4 + 3e-10),
              lambda rng: _rotations(rng, off=_atol_from(rng, 1e-10, 5e-9))),
        _case("float32 rows whose sums differ from 1 by about 1e-7 to 4e-7, default atol "
              "(expected True)", 46, lambda: circulant(0.3, 0.3, 0.4 + 2e-7, dtype=np.float32),
              lambda rng: _rotations(rng, off=_atol_from(rng, 1e-7, 4e-7), dtype=np.float32,
                                     inexact=True)),
        _case("float32 rows of 600 to 1200 entries whose sums differ from 1 by 2e-5 to 2e-4, "
              "default atol 4 n eps >= 2.9e-4 (expected True)", 47, long_float32_rows,
              _long_float32_rows),
        _case("2 to 10 rows of one entry, 1 and, in one of them, 1 - 4.5 eps to 1 - 7.5 eps "
              "(float64), default atol: the slack for n = 1 is the floor 8 eps, not 4 n eps "
              "(expected True)", 48,
              lambda: _w([[1 - 6 * EPS], [1.0]]), _one_entry_rows),
        Case("a float32 softmax, 4 rows of 50, default atol (expected True)",
             float32_softmax_rows),
        _case("one row sums to 1.0005 to 1.005, an entry raised, default atol (expected False)",
              49, lambda: _w([[0.5, 0.25, 0.25], [0.501, 0.25, 0.25]]),
              lambda rng: _raised(rng, 5e-4, 5e-3)),
        Case(f"hundreds of float32 rows of 3, one summing to 1 + 1e-4, default atol: the slack "
             f"is for rows of n = 3, 8 eps = 9.5e-7 ({DRAWN}; expected False)",
             lambda: _many_short_rows(23)),
    ],
    "edge": [
        _case("a 1-D array: a single row of 5 to 16 binary fractions (expected True)", 51,
              lambda: _w([0.25, 0.25, 0.5]),
              lambda rng: {"W": _binary_fractions(rng, int(rng.integers(5, 17)))}),
        _case("a row of NaN, in a drawn place (expected False)", 52,
              lambda: _w([[0.5, 0.5, 0.0], [np.nan, np.nan, np.nan]]),
              lambda rng: _with_entry(rng, np.nan, one_row=True)),
        _case("a row with one NaN entry, in a drawn place (expected False)", 53,
              lambda: _w([[0.5, np.nan, 0.5], [0.25, 0.25, 0.5]]),
              lambda rng: _with_entry(rng, np.nan)),
        _case("atol from 1e-3 to 5e-3 given, and rows of n entries whose sums are off by "
              "0.3 to 0.9 of atol / n (expected True)", 54, lambda: circulant(0.5, 0.25, 0.2501, atol=1e-3),
              _off_within_atol),
        _case("atol from 1e-12 to 1e-10 given, and a row sum off by 20 to 100 times it "
              "(expected False)", 55,
              lambda: _w([[0.5, 0.25, 0.25], [0.5, 0.25, 0.25000001]], atol=1e-10),
              lambda rng: _raised(rng, 20, 100, atol=_atol_from(rng, 1e-12, 1e-10))),
        _case("atol from 5e-4 to 5e-3 given, and an entry 1 plus a tenth to a half of it in a "
              "one-hot row: the sum is within atol, the entry is above 1 (expected False)", 56,
              lambda: _w([[1.0005, 0.0, 0.0], [0.5, 0.5, 0.0]], atol=1e-3),
              lambda rng: _raised(rng, 0.1, 0.5, atol=_atol_from(rng, 5e-4, 5e-3),
                                  one_hot=True)),
        _case("an entry +inf, in a drawn place (expected False)", 57,
              lambda: _w([[np.inf, 0.0, 0.0], [0.5, 0.5, 0.0]]),
              lambda rng: _with_entry(rng, np.inf)),
        Case(f"rows that sum to 1 with one entry -0.05 ({DRAWN}; expected False)",
             lambda: _negative_entry(22)),
        Case(f"atol = 0 given explicitly and a row summing to 1 + 8.9e-16 ({DRAWN}; expected "
             f"False: atol = 0 means exactly 1)", lambda: _atol_zero(24)),
    ],
}


def _rows_ok(W, sums_ok):
    return bool(np.all(np.isfinite(W)) and np.all((W >= 0) & (W <= 1)) and np.all(sums_ok))


def _tol(W, atol):
    """The atol a correct solution uses: the caller's, or the default for W's rows."""
    return default_atol(W.shape[-1], W.dtype) if atol is None else atol


def _columns(axis):
    return lambda W, atol=None: _rows_ok(W, np.abs(W.sum(axis=axis) - 1) <= _tol(W, atol))


def _total(W, atol=None):
    n_rows = W.size // W.shape[-1]
    return _rows_ok(W, abs(W.sum() - n_rows) <= _tol(W, atol))


def _no_lower_bound(W, atol=None):
    return bool(np.all(np.isfinite(W)) and np.all(W <= 1)
                and np.all(np.abs(W.sum(axis=-1) - 1) <= _tol(W, atol)))


def _no_upper_bound(W, atol=None):
    return bool(np.all(np.isfinite(W)) and np.all(W >= 0)
                and np.all(np.abs(W.sum(axis=-1) - 1) <= _tol(W, atol)))


def _strict(W, atol=None):
    return bool(np.all(np.isfinite(W)) and np.all((W > 0) & (W < 1))
                and np.all(np.abs(W.sum(axis=-1) - 1) <= _tol(W, atol)))


def _exact(W, atol=None):
    return _rows_ok(W, W.sum(axis=-1) == 1)


def _no_floor(W, atol=None):
    tol = 4 * W.shape[-1] * np.finfo(W.dtype).eps if atol is None else atol
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= tol)


def _float64_eps(W, atol=None):
    eps = np.finfo(np.float64).eps
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= (max(4 * W.shape[-1], 8) * eps
                                                      if atol is None else atol))


def _fixed_atol(W, atol=None):
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= 1e-6)


def _fixed_default(W, atol=None):
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= (1e-6 if atol is None else atol))


def _atol_or_default(W, atol=None):
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= (atol or default_atol(W.shape[-1], W.dtype)))


def _atol_or_fixed(W, atol=None):
    return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= (atol or 1e-6))


def _default_from(count):
    def check(W, atol=None):
        n = count(W)
        if n is None or n == W.shape[-1]:
            return None
        tol = default_atol(n, W.dtype) if atol is None else atol
        return _rows_ok(W, np.abs(W.sum(axis=-1) - 1) <= tol)
    return check


WRONG_N = (("W.size, the number of entries", lambda W: W.size),
           ("the number of rows", lambda W: W.size // W.shape[-1]),
           ("W.shape[0] (len(W))", lambda W: W.shape[0] if W.ndim >= 2 else None))


def _allclose_defaults(W, atol=None):
    return _rows_ok(W, np.isclose(W.sum(axis=-1), 1))


def _allclose_with_rtol(W, atol=None):
    return _rows_ok(W, np.isclose(W.sum(axis=-1), 1, atol=_tol(W, atol)))


def _nan_passes(W, atol=None):
    return not (np.any(W < 0) or np.any(W > 1)
                or np.any(np.abs(W.sum(axis=-1) - 1) > _tol(W, atol)))


def _array_returned(args, got, expected):
    if np.ndim(got) == 0:
        return None
    return (f"Your function returned an array of shape {np.shape(got)} (one answer per row?); "
            f"the question is about the whole of W, so the answer is one True or False.")


ROW_MISCONCEPTIONS = [
    Misconception("an array instead of one bool",
                  "combine the per-row checks into one answer with np.all(...) and return "
                  "bool(...) of it.", detect=_array_returned),
    Misconception("default tolerance from the wrong n (not the row length)",
                  "n in max(4 n, 8) eps is the length of ONE row, W.shape[-1]: each row sum "
                  "adds n rounded entries. W.size, len(W) or the number of rows grows with the "
                  "number of rows and lets a row that is off by far more than rounding through.",
                  variants=tuple(_default_from(count) for _, count in WRONG_N),
                  detail=lambda args, i: f"Your default tolerance fits n = {WRONG_N[i][0]} "
                                         f"({WRONG_N[i][1](args['W'])}); rows here have "
                                         f"n = {np.shape(args['W'])[-1]} entries."),
    Misconception("default slack without its floor of 8 eps",
                  "the default slack is max(4 n, 8) eps: for rows of one or two entries 4 n eps "
                  "is smaller than the rounding a single addition can leave, so it has a floor "
                  "of 8 eps.", variants=(_no_floor,)),
    Misconception("columns checked instead of rows",
                  "a row is the last axis: sum with W.sum(axis=-1) and compare every row sum "
                  "with 1 (axis=0 or axis=1 adds up columns or whole matrices).",
                  variants=tuple(lambda W, atol=None, a=a: _columns(a)(W, atol)
                                 if a < np.ndim(W) - 1 else None for a in (0, 1)),
                  detail="Your answer fits sums taken down the columns (or along another axis "
                         "than the last)."),
    Misconception("total of all entries checked instead of each row",
                  "check each row sum separately: np.abs(W.sum(axis=-1) - 1) <= atol for "
                  "every row. Rows summing to 1.2 and 0.8 have the right total but are not "
                  "distributions.", variants=(_total,)),
    Misconception("negative entries not rejected",
                  "a probability cannot be negative: also require np.all(W >= 0). A row like "
                  "[0.625, 0.625, -0.25] sums to 1 and is still not a distribution.",
                  variants=(_no_lower_bound,)),
    Misconception("entries above 1 not rejected",
                  "also require np.all(W <= 1): with a tolerance on the sum, an entry can be "
                  "above 1 while the row sum is still within atol of 1.",
                  variants=(_no_upper_bound,)),
    Misconception("0 and 1 excluded (strict inequalities)",
                  "entries may equal 0 or 1 exactly (one-hot rows, masked keys): test "
                  "W >= 0 and W <= 1, not W > 0 and W < 1.", variants=(_strict,)),
    Misconception("a fixed default tolerance instead of one for n and the dtype",
                  "with atol=None, use the slack rounding allows for W's rows: "
                  "max(4 n, 8) eps of W's dtype (attncore.invariants.default_atol(n, W.dtype)). "
                  "A fixed 1e-6 is too strict for long float32 rows and far too loose for "
                  "float64 ones.", variants=(_fixed_default,)),
    Misconception("an explicit atol = 0 ignored (atol or default)",
                  "test `if atol is None:`, not `atol or ...` / `if not atol:`: 0 is a valid "
                  "tolerance (exactly 1), and `0 or default` is the default.",
                  variants=(_atol_or_default, _atol_or_fixed),
                  detail="With atol = 0 your function accepted a row sum of 1 + 8.9e-16, as if "
                         "no atol had been given."),
    Misconception("tolerance other than atol",
                  "use the atol you are given, and only it: np.abs(row_sums - 1) <= atol. "
                  "np.allclose / np.isclose add a relative tolerance rtol=1e-05 unless you "
                  "pass rtol=0, and a hard-coded 1e-6 ignores the caller's atol.",
                  variants=(_fixed_atol, _allclose_defaults, _allclose_with_rtol)),
    Misconception("default slack from float64's eps, not W's dtype",
                  "take eps from W's own dtype: np.finfo(W.dtype).eps (1.2e-7 for float32, "
                  "2.2e-16 for float64). float64's eps is a slack float32 rows, rounded at "
                  "1e-7, cannot meet: for them it is as strict as no slack at all.",
                  variants=(_float64_eps,)),
    Misconception("exact equality instead of the tolerance",
                  "floating-point row sums are 1 only up to rounding: compare "
                  "np.abs(row_sums - 1) <= atol instead of row_sums == 1.", variants=(_exact,)),
    Misconception("NaN rows accepted",
                  "every comparison with NaN is False, so 'no entry is < 0 and no sum is off' "
                  "lets a NaN row through: test np.all(np.isfinite(W)) first, and phrase "
                  "the checks positively (np.all(W >= 0), np.all(abs(sums - 1) <= atol)).",
                  variants=(_nan_passes,)),
    two_d_only(),
]


SPECS = [
    FunctionSpec(
        name="softmax",
        plain=(stand_ins.softmax,),
        axes={"scores": ("...", "n"), "return": ("...", "n")},
        reference=lambda scores: attncore.softmax(scores),
        suites=SOFTMAX_CASES,
        misconceptions=SOFTMAX_MISCONCEPTIONS,
        advice=closer_rows("scores"),
        result_dtype=ResultDtype.INPUT_FLOAT,
        forbidden=("softmax", "log_softmax"),
    ),
    FunctionSpec(
        name="is_row_stochastic",
        plain=(stand_ins.is_row_stochastic,),
        axes={"W": ("...", "n")},
        reference=lambda W, atol=None: bool(check_rows(W, atol=atol).on_simplex),
        suites=ROW_CASES,
        misconceptions=ROW_MISCONCEPTIONS,
        forbidden=("invariants.check_rows",),
    ),
]
