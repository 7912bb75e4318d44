"""The invariant reports catch what they claim to catch, and say where."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore
from attncore import invariants


def random_weights(rng, shape, dtype=np.float64):
    return attncore.softmax(rng.normal(size=shape).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_pass_with_default_tolerance(rng, dtype):
    report = invariants.check_rows(random_weights(rng, (3, 50, 200), dtype))
    assert report.on_simplex, str(report)
    assert report.atol == pytest.approx(4 * 200 * np.finfo(dtype).eps)


def test_report_names_the_worst_row(rng):
    w = random_weights(rng, (2, 4, 6))
    w[1, 2] *= 1.01
    report = invariants.check_rows(w)
    assert not report.on_simplex
    assert report.worst_row == (1, 2)
    assert report.worst_row_error == pytest.approx(0.01)
    assert "(1, 2)" in str(report) and "NOT on the simplex" in str(report)


def test_column_normalised_matrix_is_caught(rng):
    scores = rng.normal(size=(4, 7))
    report = invariants.check_rows(attncore.softmax(scores, axis=0))
    assert not report.on_simplex


def test_negative_and_large_entries_are_caught():
    w = np.array([[1.5, -0.5], [0.5, 0.5]])
    report = invariants.check_rows(w)
    assert report.worst_row_error == 0  # sums are right...
    assert not report.entries_in_unit_interval  # ...but entries are not
    assert not report.on_simplex
    assert report.min_entry == -0.5 and report.max_entry == 1.5


def test_nan_is_never_on_the_simplex():
    report = invariants.check_rows(np.array([[np.nan, 1.0], [0.5, 0.5]]))
    assert not report.finite and not report.on_simplex
    assert report.worst_row == (0,)


def test_mass_on_masked_keys_and_fully_masked_rows(rng):
    mask = attncore.masks.causal(4, 6, causal="bottom_right")
    mask[0] = False
    w = attncore.softmax(rng.normal(size=(4, 6)), mask=mask)
    report = invariants.check_rows(w, mask)
    assert report.on_simplex and report.empty_rows == 1 and report.masked_mass == 0
    leaky = attncore.softmax(rng.normal(size=(4, 6)))  # mask ignored
    leaky_report = invariants.check_rows(leaky, mask)
    assert leaky_report.masked_mass > 0 and not leaky_report.on_simplex
    nan_row = w.copy()
    nan_row[0] = 1 / 6  # the "uniform" answer for a fully masked row
    assert not invariants.check_rows(nan_row, mask).on_simplex


def test_softmax_one_is_sub_stochastic_not_stochastic(rng):
    report = invariants.check_rows(attncore.softmax_one(rng.normal(size=(5, 3))))
    assert report.sub_stochastic and not report.on_simplex
    assert report.max_row_sum < 1


def test_convex_combination_of_attention(rng):
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(8, 4)), rng.normal(size=(8, 3))
    out, w = attncore.attention(q, k, v, return_weights=True)
    assert invariants.check_convex_combination(out, w, v).convex
    linear = (q @ k.T) @ v  # unnormalised weights: outputs leave the hull
    report = invariants.check_convex_combination(linear, q @ k.T, v)
    assert not report.convex and not report.rows_on_simplex


def test_output_outside_hull_is_measured():
    v = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    w = np.array([[0.2, 0.3, 0.5]])
    shifted = w @ v + 1.5  # (1.8, 2.0): beyond the largest x (1) and y (1) of the values
    report = invariants.check_convex_combination(shifted, w, v)
    assert report.max_mix_error == pytest.approx(1.5)
    assert report.max_hull_excess == pytest.approx(1.0)
    assert not report.convex


@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0,), (2, 0, 3), (2, 3, 0)])
def test_empty_weights_get_a_report(shape):
    """No keys or no rows: a report (as softmax gives a result), not an IndexError or argmax error.
    A row with no key is like a fully masked row: it is all zeros, and so on the simplex."""
    w = attncore.softmax(np.zeros(shape))
    report = invariants.check_rows(w, mask=np.ones(shape, bool))
    assert report.on_simplex and report.sub_stochastic, str(report)
    assert report.worst_row_error == 0 and report.masked_mass == 0
    assert report.empty_rows == (int(np.prod(shape[:-1])) if shape[-1] == 0 else 0)
    assert report.shape == shape and "on the simplex" in str(report)
    assert "nan" not in str(report) and "no entries" in str(report)


def test_scalar_weights_are_refused():
    with pytest.raises(ValueError, match=r"weights must have shape \(\.\.\., T_q, T_k\).*shape \(\)"):
        invariants.check_rows(np.float64(0.5))


def _lse_rows(x):
    """Weights exp(x - lse) with lse = m + log(sum(exp(x - m))) rounded in x's dtype, as
    SciPy's softmax and a kernel that stores the lse compute them; and the lse."""
    m = x.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))
    return np.exp(x - lse), lse


def test_default_atol_adds_the_size_of_the_lse():
    eps = float(np.finfo(np.float32).eps)
    assert invariants.default_atol(4, np.float32) == 16 * eps
    assert invariants.default_atol(4, np.float32, lse=-300.0) == 316 * eps
    lse = np.array([[2.0], [-np.inf], [-7.0]])  # a fully masked row has lse -inf: no slack
    assert invariants.default_atol(3, np.float64, lse=lse) == 19 * np.finfo(np.float64).eps


@given(dtype=st.sampled_from([np.float32, np.float64]), n=st.integers(1, 64),
       mu=st.floats(-1e4, 1e4), seed=st.integers(0, 2 ** 32 - 1))
def test_both_correct_softmaxes_are_within_the_slack_with_their_lse(dtype, n, mu, seed):
    """Rows divided by their sum stay within max(4 n, 8) eps; rows recovered from a rounded
    lse within that plus |lse| eps (attncore.invariants derives both); the first slack
    alone fails the second kind as soon as the scores are large."""
    x = (mu + np.random.default_rng(seed).normal(size=(64, n))).astype(dtype)
    divided = attncore.softmax(x)
    recovered, lse = _lse_rows(x)
    assert invariants.check_rows(divided).on_simplex
    assert invariants.check_rows(recovered, atol=invariants.default_atol(n, dtype, lse=lse)).on_simplex


def test_the_slack_without_the_lse_fails_correct_rows_at_large_scores(rng):
    x = (300 + rng.normal(size=(2000, 4))).astype(np.float32)
    recovered, lse = _lse_rows(x)
    assert not invariants.check_rows(recovered).on_simplex
    assert invariants.check_rows(recovered, atol=invariants.default_atol(4, np.float32, lse=lse)).on_simplex
