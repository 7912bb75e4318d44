"""softmax, log_softmax, logsumexp, softmax_one, sparsemax and hardmax against
the plain-loop references, plus the properties every row must have."""
import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore as ac
from attncore.invariants import check_rows

from . import reference as ref
from .strategies import dtypes, finite, score_arrays

AXES = [0, 1, 2, -1, -2]


def _random_mask(rng, shape, axis):
    """Random boolean mask with one slice along axis fully masked."""
    mask = rng.random(shape) < 0.6
    index = [0] * len(shape)
    index[axis] = slice(None)
    mask[tuple(index)] = False
    return mask


# --------------------------------------------------------------------------- known values


def test_softmax_known_values():
    out = ac.softmax(np.array([0.0, math.log(3.0)]))
    np.testing.assert_allclose(out, [0.25, 0.75], rtol=1e-15)
    # equal scores give the uniform distribution
    np.testing.assert_allclose(ac.softmax(np.full(4, 7.0)), np.full(4, 0.25), rtol=1e-15)


def test_rows_at_very_different_scales(dtype):
    """The max is taken per row: a global max would underflow every entry of the lower row."""
    x = np.array([[0.0, 1.0, 2.0], [-1000.0, -999.0, -998.0], [5000.0, 5001.0, 5002.0]], dtype)
    want = ref.softmax_row([0.0, 1.0, 2.0])
    for axis, xx in ((-1, x), (0, x.T)):
        out = ac.softmax(xx, axis=axis)
        out = out if axis == -1 else out.T
        for row in out:
            np.testing.assert_allclose(row, want, rtol=0, atol=ref.softmax_atol(dtype, 3, 2))
    lse = ac.logsumexp(x)
    np.testing.assert_allclose(lse, [ref.logsumexp_row(r) for r in x.astype(np.float64)], rtol=4 * ref.eps(dtype))


def test_logsumexp_known_values():
    assert ac.logsumexp(np.array([0.0, 0.0])) == pytest.approx(math.log(2.0), rel=1e-15)
    # a naive exp(1000) overflows; the stable form does not
    assert ac.logsumexp(np.array([1000.0, 1000.0])) == pytest.approx(1000 + math.log(2.0))


def test_sparsemax_known_values():
    # tau = (1 + 0.5 - 1) / 2 = 0.25, so [0.75, 0.25, 0]; the low score is exactly 0
    out = ac.sparsemax(np.array([1.0, 0.5, -1.0]))
    np.testing.assert_allclose(out, [0.75, 0.25, 0.0], rtol=1e-15)
    assert out[2] == 0.0


# --------------------------------------------------------------------------- vs reference


@pytest.mark.parametrize("axis", AXES)
def test_softmax_matches_reference_any_axis(rng, dtype, axis):
    x = (rng.normal(size=(3, 4, 5)) * 5).astype(dtype)
    got = ac.softmax(x, axis=axis)
    assert got.dtype == dtype and got.shape == x.shape
    want = ref.rows_apply(ref.softmax_row, x, axis)
    spread = float(x.max() - x.min())
    np.testing.assert_allclose(got, want, rtol=0, atol=ref.softmax_atol(dtype, 5, spread))


@pytest.mark.parametrize("axis", AXES)
def test_softmax_with_mask_matches_reference(rng, dtype, axis):
    x = (rng.normal(size=(3, 4, 5)) * 5).astype(dtype)
    mask = _random_mask(rng, x.shape, axis)
    got = ac.softmax(x, axis=axis, mask=mask)
    want = ref.rows_apply(ref.softmax_row, x, axis, mask)
    spread = float(x.max() - x.min())
    np.testing.assert_allclose(got, want, rtol=0, atol=ref.softmax_atol(dtype, 5, spread))
    assert np.all(got[~mask] == 0)  # masked: exactly zero, not merely small
    index = [0, 0, 0]
    index[axis] = slice(None)
    assert np.all(got[tuple(index)] == 0)  # the fully masked slice


def test_softmax_mask_broadcasts(rng, dtype):
    x = rng.normal(size=(2, 3, 4)).astype(dtype)
    mask = np.array([True, False, True, True])  # shape (4,) -> (2, 3, 4)
    got = ac.softmax(x, mask=mask)
    want = ref.rows_apply(ref.softmax_row, x, -1, np.broadcast_to(mask, x.shape))
    np.testing.assert_allclose(got, want, rtol=0, atol=ref.softmax_atol(dtype, 4, 10))
    assert np.all(got[..., 1] == 0)


@pytest.mark.parametrize("axis", AXES)
def test_log_softmax_matches_reference(rng, dtype, axis):
    x = (rng.normal(size=(3, 4, 5)) * 5).astype(dtype)
    mask = _random_mask(rng, x.shape, axis)
    got = ac.log_softmax(x, axis=axis, mask=mask)
    assert got.dtype == dtype and got.shape == x.shape
    want = ref.rows_apply(ref.log_softmax_row, x, axis, mask)
    # masked entries and the whole fully masked slice are -inf, as documented
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    assert np.all(np.isneginf(got[~mask]))
    finite = np.isfinite(want)
    # log-weights are differences of scores of size <= ~25: absolute error ~ eps * 25 * few
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=ref.softmax_atol(dtype, 5, 50))
    np.testing.assert_allclose(
        np.exp(got.astype(np.float64)), ref.rows_apply(ref.softmax_row, x, axis, mask),
        rtol=0, atol=ref.softmax_atol(dtype, 5, 50),
    )


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_matches_reference(rng, dtype, axis, keepdims):
    x = (rng.normal(size=(3, 4, 5)) * 5).astype(dtype)
    mask = _random_mask(rng, x.shape, axis)
    got = ac.logsumexp(x, axis=axis, mask=mask, keepdims=keepdims)
    want = ref.reduce_rows(ref.logsumexp_row, x, axis, mask)
    if keepdims:
        want = np.expand_dims(want, axis)
    assert got.dtype == dtype and got.shape == want.shape
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    assert np.isneginf(want).sum() == 1  # the fully masked slice, documented as -inf
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=0, atol=ref.softmax_atol(dtype, 5, 50))


def test_logsumexp_without_mask_equals_log_of_sum(rng):
    x = rng.normal(size=(4, 6))
    np.testing.assert_allclose(ac.logsumexp(x), np.log(np.exp(x).sum(-1)), rtol=1e-14)


def test_neg_inf_scores_act_as_masked(rng, dtype):
    x = rng.normal(size=(3, 4)).astype(dtype)
    mask = np.array([[True, False, True, False], [False] * 4, [True] * 4])
    additive = np.where(mask, x, -np.inf).astype(dtype)
    np.testing.assert_array_equal(ac.softmax(additive), ac.softmax(x, mask=mask))
    assert np.all(ac.softmax(additive)[1] == 0)
    assert np.isneginf(ac.logsumexp(additive)[1])
    assert np.all(np.isneginf(ac.log_softmax(additive)[1]))


def test_fully_masked_rows_are_zero_without_warnings(dtype):
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype)
    mask = np.array([[False, False, False], [True, False, True]])
    with np.errstate(all="raise"):
        out = ac.softmax(x, mask=mask)
        lse = ac.logsumexp(x, mask=mask)
        log_out = ac.log_softmax(x, mask=mask)
    assert np.array_equal(out[0], np.zeros(3, dtype))
    assert not np.isnan(out).any() and not np.isnan(lse).any() and not np.isnan(log_out).any()
    assert np.isneginf(lse[0]) and np.all(np.isneginf(log_out[0]))
    np.testing.assert_allclose(out[1], ref.softmax_row([4.0, 5.0, 6.0], [True, False, True]), rtol=1e-6)


@pytest.mark.parametrize("axis", AXES)
def test_softmax_one_matches_reference(rng, dtype, axis):
    x = (rng.normal(size=(3, 4, 5)) * 5).astype(dtype)
    got = ac.softmax_one(x, axis=axis)
    assert got.dtype == dtype and got.shape == x.shape
    want = ref.rows_apply(ref.softmax_one_row, x, axis)
    np.testing.assert_allclose(got, want, rtol=0, atol=ref.softmax_atol(dtype, 6, 60))


def test_softmax_one_can_attend_to_nothing(dtype):
    # very negative scores: the "1" in the denominator wins and the row sums to ~0
    x = np.array([[-30.0, -40.0, -35.0], [0.0, 0.0, 0.0], [500.0, 500.0, -500.0]], dtype)
    out = ac.softmax_one(x)
    assert out[0].sum() < 1e-12
    np.testing.assert_allclose(out[1], np.full(3, 0.25), rtol=4 * ref.eps(dtype))
    # huge scores: no overflow, the extra 1 is negligible and this is plain softmax
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out[2], [0.5, 0.5, 0.0], atol=4 * ref.eps(dtype))


@pytest.mark.parametrize("axis", AXES)
def test_sparsemax_matches_bisection_reference(rng, dtype, axis):
    x = rng.normal(size=(3, 4, 5)).astype(dtype)
    got = ac.sparsemax(x, axis=axis)
    assert got.dtype == dtype and got.shape == x.shape
    want = ref.rows_apply(ref.sparsemax_row, x, axis)
    # sparsemax is piecewise linear: entries are x_i - tau with tau an average of
    # <= 5 scores of size <= ~5, so errors are a few eps * 5 * n
    np.testing.assert_allclose(got, want, rtol=0, atol=8 * 5 * 5 * ref.eps(dtype))
    # the support (exact zeros) agrees wherever the reference is clearly away from 0
    clear = np.abs(want) > 1e-3
    assert np.array_equal((got > 0)[clear], (want > 0)[clear])


def test_sparsemax_ties_and_single_entry(dtype):
    np.testing.assert_array_equal(ac.sparsemax(np.full((2, 4), 3.0, dtype)), np.full((2, 4), 0.25, dtype))
    np.testing.assert_array_equal(ac.sparsemax(np.array([[5.0]], dtype)), np.array([[1.0]], dtype))
    # a gap > 1 puts all the mass on the top score
    np.testing.assert_array_equal(ac.sparsemax(np.array([2.5, 1.0, 0.0], dtype)), np.array([1.0, 0, 0], dtype))


@pytest.mark.parametrize("offset", [1e4, 1e6, 1e7])
def test_sparsemax_stays_on_the_simplex_at_large_offsets(offset):
    """Review 3.5.12: without the row max subtracted these float32 rows summed to 0.998, 1.25 and 4."""
    x = (np.array([[0.3, 0.1, -0.2, 0.25], [0.0, 1.0, 2.0, 3.0]]) + offset).astype(np.float32)
    out = ac.sparsemax(x)
    assert out.dtype == np.float32 and check_rows(out).on_simplex, check_rows(out)
    np.testing.assert_allclose(out, ref.rows_apply(ref.sparsemax_row, x), rtol=0, atol=8 * 4 * ref.eps(np.float32))


@pytest.mark.parametrize("shape, axis", [((2, 0), -1), ((0, 3), -1), ((0, 3), 0), ((2, 0, 3), 1)])
@pytest.mark.parametrize("fn", [ac.sparsemax, ac.hardmax, ac.softmax], ids=lambda f: f.__name__)
def test_empty_input_gives_an_empty_result(fn, shape, axis, dtype):
    """No keys or no rows: an empty result of the input's shape and dtype (what softmax does)."""
    out = fn(np.zeros(shape, dtype), axis=axis)
    assert out.shape == shape and out.dtype == dtype


def test_sparsemax_fully_masked_row_is_zero_without_warnings(dtype):
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.5, -np.inf, 0.0]], dtype)
    mask = np.array([[False, False, False], [True, False, True], [True, True, True]])
    with np.errstate(all="raise"):
        out = ac.sparsemax(x, mask=mask)
    np.testing.assert_array_equal(out, np.array([[0, 0, 0], [0, 0, 1], [0.75, 0, 0.25]], dtype))


@pytest.mark.parametrize("axis", AXES)
def test_hardmax_matches_reference(rng, dtype, axis):
    x = rng.integers(-2, 3, size=(3, 4, 5)).astype(dtype)  # small integers: many ties
    got = ac.hardmax(x, axis=axis)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, ref.rows_apply(ref.hardmax_row, x, axis))


def test_hardmax_breaks_ties_towards_the_first_key(dtype):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]], dtype)
    np.testing.assert_array_equal(ac.hardmax(x), np.array([[0, 1, 0, 0], [1, 0, 0, 0]], dtype))


# --------------------------------------------------------------------------- properties


@given(dtype=dtypes, data=st.data())
def test_softmax_rows_lie_on_the_simplex(dtype, data):
    x = data.draw(score_arrays(dtype))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = ac.softmax(x)
    n = x.shape[-1]
    assert out.dtype == dtype
    assert np.all((out >= 0) & (out <= 1))  # exact: e_i <= sum_j e_j and rounding is monotone
    sums = out.astype(np.float64).sum(axis=-1)
    assert np.all(np.abs(sums - 1) <= ref.simplex_atol(dtype, n)), (sums, n)
    assert out[np.unravel_index(np.argmax(x), x.shape)] > 0  # the row max never underflows


@given(dtype=dtypes, data=st.data())
def test_rows_with_their_own_offsets(dtype, data):
    """Each row shifted by its own offset up to 1e4: rows at very different scales."""
    x = data.draw(score_arrays(dtype, bound=20.0, max_dims=2))
    offsets = data.draw(hnp.arrays(dtype, (*x.shape[:-1], 1), elements=finite(dtype, 1e4)))
    shifted = (x + offsets).astype(dtype)
    out = ac.softmax(shifted)
    want = ref.rows_apply(ref.softmax_row, shifted)
    # x + offset is exact input to both sides; spread within a row <= 40 + rounding
    np.testing.assert_allclose(out, want, rtol=0, atol=ref.softmax_atol(dtype, x.shape[-1], 41.0))
    sums = out.astype(np.float64).sum(axis=-1)
    assert np.all(np.abs(sums - 1) <= ref.simplex_atol(dtype, x.shape[-1]))


@given(dtype=dtypes, data=st.data())
def test_masked_softmax_rows(dtype, data):
    x = data.draw(score_arrays(dtype))
    mask = data.draw(hnp.arrays(np.bool_, x.shape))
    out = ac.softmax(x, mask=mask)
    assert out.dtype == dtype and not np.isnan(out).any()
    assert np.all(out[~mask] == 0)
    sums = out.astype(np.float64).sum(axis=-1)
    any_kept = mask.any(axis=-1)
    assert np.all(sums[~any_kept] == 0)  # fully masked rows: zero, not NaN
    assert np.all(np.abs(sums[any_kept] - 1) <= ref.simplex_atol(dtype, x.shape[-1]))


@given(dtype=dtypes, data=st.data())
def test_softmax_matches_reference_on_large_scores(dtype, data):
    x = data.draw(score_arrays(dtype, bound=1e4, max_dims=2))
    out = ac.softmax(x)
    want = ref.rows_apply(ref.softmax_row, x)
    spread = float(x.astype(np.float64).max(axis=-1).max() - x.astype(np.float64).min(axis=-1).min())
    # entries that matter (> the error bound) are exp(-(m - x_i)) with m - x_i < ~100, so
    # the relative error is bounded by 4 eps (100 + n) regardless of the total spread
    atol = ref.softmax_atol(dtype, x.shape[-1], min(spread, 120.0))
    np.testing.assert_allclose(out, want, rtol=0, atol=atol)


@given(dtype=dtypes, data=st.data())
def test_softmax_shift_invariance(dtype, data):
    x = data.draw(score_arrays(dtype, bound=100.0, max_dims=2))
    rows = x.shape[:-1]
    c = data.draw(hnp.arrays(dtype, (*rows, 1), elements=finite(dtype, 100.0)))
    shifted = (x + c).astype(dtype)
    # x + c rounds with error <= u (|x| + |c|) <= eps * 200 / 2; both rows then
    # carry the softmax rounding (softmax_atol with spread <= 400).
    atol = 2 * ref.softmax_atol(dtype, x.shape[-1], 400.0)
    np.testing.assert_allclose(ac.softmax(shifted), ac.softmax(x), rtol=0, atol=atol)
    # logsumexp shifts by exactly c (up to the same rounding, scaled by |lse| <= ~200)
    np.testing.assert_allclose(
        ac.logsumexp(shifted), ac.logsumexp(x) + c[..., 0], rtol=0,
        atol=4 * ref.eps(dtype) * (400 + x.shape[-1]),
    )


@given(dtype=dtypes, data=st.data())
def test_log_softmax_is_log_of_softmax(dtype, data):
    x = data.draw(score_arrays(dtype, bound=50.0))
    got = ac.log_softmax(x)
    assert got.dtype == dtype and np.all(got <= 0)
    np.testing.assert_allclose(
        np.exp(got.astype(np.float64)), ac.softmax(x), rtol=0, atol=ref.softmax_atol(dtype, x.shape[-1], 200.0)
    )


@given(dtype=dtypes, data=st.data())
def test_softmax_one_rows_sum_below_one(dtype, data):
    x = data.draw(score_arrays(dtype, bound=1e4))
    out = ac.softmax_one(x)
    assert out.dtype == dtype and np.all(np.isfinite(out))
    assert np.all((out >= 0) & (out <= 1))
    sums = out.astype(np.float64).sum(axis=-1)
    assert np.all(sums <= 1 + ref.simplex_atol(dtype, x.shape[-1]))


@given(dtype=dtypes, data=st.data())
def test_sparsemax_rows_lie_on_the_simplex(dtype, data):
    x = data.draw(score_arrays(dtype, bound=10.0))
    out = ac.sparsemax(x)
    n = x.shape[-1]
    assert out.dtype == dtype
    assert np.all(out >= 0)
    # tau = (sum of the support - 1) / k rounds with error ~ n eps * max|x|; each entry
    # x_i - tau carries it, and the row sum n times that.
    sums = out.astype(np.float64).sum(axis=-1)
    assert np.all(np.abs(sums - 1) <= 4 * n * n * ref.eps(dtype) * 11), sums
    # the largest score is always in the support
    top = np.take_along_axis(out, np.argmax(x, axis=-1)[..., None], axis=-1)
    assert np.all(top > 0)


@given(dtype=dtypes, data=st.data())
def test_sparsemax_shift_invariance(dtype, data):
    """sparsemax(x + c) = sparsemax(x) for a per-row c up to 2^20. x is on a grid of 1/8 and c
    whole, so x + c is exact in float32 too, and so is x - max: the results are identical."""
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=8))
    x = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(-80, 80))) / 8
    c = data.draw(hnp.arrays(np.int64, (*shape[:-1], 1), elements=st.integers(-(2**20), 2**20)))
    np.testing.assert_array_equal(ac.sparsemax((x + c).astype(dtype)), ac.sparsemax(x.astype(dtype)))


@given(dtype=dtypes, data=st.data())
def test_sparsemax_rows_with_their_own_offsets(dtype, data):
    """Each row shifted by its own offset up to 1e7: still on the simplex, still the reference."""
    x = data.draw(score_arrays(dtype, bound=10.0, max_dims=2))
    offsets = data.draw(hnp.arrays(dtype, (*x.shape[:-1], 1), elements=finite(dtype, 1e7)))
    shifted = (x + offsets).astype(dtype)
    out = ac.sparsemax(shifted)
    n = x.shape[-1]
    spread = float(np.ptp(shifted.astype(np.float64), axis=-1).max())  # <= 20 + the rounding of x + offset
    # as in test_sparsemax_rows_lie_on_the_simplex, with max|x - max| = spread
    atol = 4 * n * n * ref.eps(dtype) * (1 + spread)
    np.testing.assert_allclose(out, ref.rows_apply(ref.sparsemax_row, shifted), rtol=0, atol=2 * atol)
    assert np.all(out >= 0)
    assert np.all(np.abs(out.astype(np.float64).sum(axis=-1) - 1) <= atol)


@given(dtype=dtypes, data=st.data())
def test_masked_sparsemax_rows(dtype, data):
    """Masked entries get 0, fully masked rows are zero (never NaN), the rest is the projection of
    the kept scores; a -inf score is the same as a masked one."""
    x = data.draw(score_arrays(dtype, bound=10.0))
    mask = data.draw(hnp.arrays(np.bool_, x.shape))
    out = ac.sparsemax(x, mask=mask)
    assert out.dtype == dtype and not np.isnan(out).any()
    assert np.all(out[~mask] == 0)
    sums = out.astype(np.float64).sum(axis=-1)
    any_kept = mask.any(axis=-1)
    assert np.all(sums[~any_kept] == 0)
    n = x.shape[-1]
    assert np.all(np.abs(sums[any_kept] - 1) <= 4 * n * n * ref.eps(dtype) * 21)
    want = ref.rows_apply(ref.sparsemax_row, x, mask=mask)
    np.testing.assert_allclose(out, want, rtol=0, atol=8 * n * n * ref.eps(dtype) * 21)
    np.testing.assert_array_equal(ac.sparsemax(np.where(mask, x, -np.inf).astype(dtype)), out)


@given(dtype=dtypes, data=st.data())
def test_hardmax_is_a_vertex_at_the_first_max(dtype, data):
    x = data.draw(score_arrays(dtype))
    out = ac.hardmax(x)
    assert out.dtype == dtype
    assert np.all(out.sum(axis=-1) == 1) and np.all((out == 0) | (out == 1))
    np.testing.assert_array_equal(out, ref.rows_apply(ref.hardmax_row, x))


@given(dtype=dtypes, data=st.data())
def test_masked_hardmax_rows(dtype, data):
    """As sparsemax's mask: the first max of the kept scores, a fully masked row all zeros
    (never NaN), and a -inf score the same as a masked one."""
    x = data.draw(score_arrays(dtype))
    mask = data.draw(hnp.arrays(np.bool_, x.shape))
    out = ac.hardmax(x, mask=mask)
    assert out.dtype == dtype and np.all(out[~mask] == 0)
    np.testing.assert_array_equal(out.sum(axis=-1), mask.any(axis=-1))
    np.testing.assert_array_equal(out, ref.rows_apply(ref.hardmax_row, x, mask=mask))
    np.testing.assert_array_equal(ac.hardmax(np.where(mask, x, -np.inf).astype(dtype)), out)
