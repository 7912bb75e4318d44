"""06-variants: softmax_one, sparsemax and (non-causal, normalised) linear_attention.

Each is compared with attncore: softmax_one, sparsemax and linear_attention.
"""
import numpy as np

import attncore
from attncore.feature_maps import ELU_PLUS_ONE, EXP, EXP_PAIRS, RELU_PLUS_EPS, FeatureMap

from .. import stand_ins
from ..probe import Case, FunctionSpec, Misconception, ResultDtype
from .common import (
    GLOBAL_MAX,
    GLOBAL_MAX_FIX,
    UNSTABLE,
    along_axis_detail,
    along_other_axes,
    closer_rows,
    qkv,
    rounded_rows,
    rows_of_different_scales,
    score_rows,
    two_d_only,
    written_or_drawn,
)

ASSIGNMENT = "06-variants"


def scores(seed, *shape, **kw):
    return {"x": score_rows(seed, *shape, **kw)}


def given(rows, dtype=np.float64):
    return {"x": np.array(rows, dtype=dtype)}


def _repeated(rng, n):
    """n (3 or more) scores of 2 drawn values in a drawn order, one at least twice."""
    low, high = rng.normal(0.0, 1.5, 2)
    return np.where(rng.permutation(n) % 2 == 0, low, high)


def _ties_softmax_one(rng):
    """3 to 6 keys: a row of one score from 0.5 to 3, a row of zeros, a row of repeated
    scores (_repeated)."""
    n = int(rng.integers(3, 7))
    return {"x": np.stack([np.full(n, rng.uniform(0.5, 3.0)), np.zeros(n), _repeated(rng, n)])}


def _ties_sparsemax(rng):
    """4 to 6 keys: two tied top scores and the rest 1.2 to 3 below (the two share the
    weight); a row of one score (uniform); all tied but one, 1.5 to 4 below (left out);
    the places drawn."""
    n = int(rng.integers(4, 7))
    top = rng.uniform(-1.0, 3.0, 3)
    pair = np.concatenate([[top[0], top[0]], top[0] - rng.uniform(1.2, 3.0, n - 2)])
    lone = np.concatenate([np.full(n - 1, top[2]), [top[2] - rng.uniform(1.5, 4.0)]])
    return {"x": np.stack([rng.permutation(pair), np.full(n, top[1]), rng.permutation(lone)])}


def _one_hot_rows(rng):
    """2 to 3 rows of 4 to 6 scores, one in a drawn place of each row 1.2 to 5 above all
    the others: sparsemax gives it all the weight."""
    t, n = int(rng.integers(2, 4)), int(rng.integers(4, 7))
    x = rng.normal(0.0, 0.5, (t, n))
    for row in x:
        row[rng.integers(n)] = row.max() + rng.uniform(1.2, 5.0)
    return {"x": x}


# ------------------------------------------------------------ softmax_one

SOFTMAX_ONE_CASES = {
    "basic": [
        Case("2 rows of 3 scores", lambda: scores(1, 2, 3, scale=1.5)),
    ],
    "hidden": [
        Case("3-D input (2, 3, 4)", lambda: scores(2, 2, 3, 4, scale=1.5)),
        Case("a single column (n = 1): the weight is exp(x) / (1 + exp(x))",
             lambda: scores(3, 3, 1, scale=2.0)),
        Case("ties, 3 to 6 keys: a row of equal scores, a row of zeros (each weight "
             "1 / (1 + n) there) and a row of repeated scores", lambda: written_or_drawn(
                 91, lambda: given([[2.0, 2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 0.0],
                                    [1.0, -1.0, 1.0, 0.5]]), _ties_softmax_one)),
        Case("float32 scores, shape (3, 5): the result must stay float32",
             lambda: scores(4, 3, 5, dtype=np.float32, scale=1.5)),
    ],
    "extreme": [
        Case("float32 scores around 100: exp(x) alone overflows in float32",
             lambda: scores(5, 2, 4, dtype=np.float32, scale=3.0, offset=100.0)),
        Case("float64 rows around 1e3 and 1e4: exp(x) alone overflows",
             lambda: scores(6, 3, 4, scale=3.0, offset=np.array([1e3, 1.002e3, 1e4]))),
        Case("very negative rows (around -1e4 and -300) beside an ordinary row",
             lambda: scores(7, 3, 4, scale=3.0, offset=np.array([-1e4, 0.0, -300.0]))),
        Case("4 rows at offsets -1e4, 0, 1e4, -50: rows on wildly different scales",
             lambda: {"x": rows_of_different_scales(8, 4, 5)}),
        Case("float32, 3-D, scores up to 1e4 in magnitude",
             lambda: scores(9, 2, 2, 5, dtype=np.float32, scale=5e3)),
    ],
}


def _one_kept_as_one(x):
    """Max subtracted, but the 1 in the denominator left as 1."""
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (1 + e.sum(axis=-1, keepdims=True))


def _one_as_exp_plus_m(x):
    """Max subtracted, and the 1 turned into exp(+m) instead of exp(-m)."""
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(m) + e.sum(axis=-1, keepdims=True))


def _one_as_exp_plus_m_unclamped(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (np.exp(m) + e.sum(axis=-1, keepdims=True))


def _clamped_one_kept(x):
    """m = max(0, row max) subtracted, the 1 left as 1."""
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (1 + e.sum(axis=-1, keepdims=True))


def _softmax_one_naive(x):
    e = np.exp(x)
    return e / (1 + e.sum(axis=-1, keepdims=True))


def _softmax_one_rescaled(x):
    """softmax(x) * s / (1 + s) with s = sum exp(x) computed naively."""
    s = np.exp(x).sum(axis=-1, keepdims=True)
    return attncore.softmax(x) * s / (1 + s)


def _softmax_one_clamp_wrong_way(x):
    """m = min(0, row max): no shift at all for the rows that need one."""
    m = np.minimum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))


def _softmax_one_global_max(x):
    m = np.maximum(x.max(), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))


def _n_in_denominator(x):
    e = np.exp(x)
    return e / (x.shape[-1] + e.sum(axis=-1, keepdims=True))


def _n_in_denominator_shifted(x):
    """Stabilised, with n exp(-m) where exp(-m) belongs."""
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (x.shape[-1] * np.exp(-m) + e.sum(axis=-1, keepdims=True))


STABILISED_WRONGLY = "softmax-1 stabilised wrongly"
FORGOT_ONE = "the 1 in the denominator forgotten (plain softmax)"

SOFTMAX_ONE_MISCONCEPTIONS = [
    Misconception(
        FORGOT_ONE,
        "softmax-1 divides by 1 + sum_j exp(x_j), not by sum_j exp(x_j): its rows sum to "
        "LESS than 1 (the missing mass goes to an implicit extra key of score 0).",
        variants=(lambda x: attncore.softmax(x),),
    ),
    Misconception(
        STABILISED_WRONGLY,
        "when you subtract m from every score, the 1 must be shifted too: "
        "1 = exp(0) becomes exp(0 - m) = exp(-m). Take m = max(0, row max) "
        "(np.maximum(x.max(axis=-1, keepdims=True), 0)), then "
        "out = exp(x - m) / (exp(-m) + sum_j exp(x_j - m)).",
        variants=(_one_kept_as_one, _one_as_exp_plus_m, _one_as_exp_plus_m_unclamped,
                  _clamped_one_kept),
        detail=[
            "Your weights match exp(x - m) / (1 + sum_j exp(x_j - m)) with m the row max: the "
            "scores were shifted, the 1 was not.",
            "Your weights match exp(x - m) / (exp(+m) + sum_j exp(x_j - m)): the 1 was shifted "
            "the wrong way (exp(+m) instead of exp(-m)).",
            "Your weights match exp(x - m) / (exp(+m) + sum_j exp(x_j - m)) with m the row "
            "max: the 1 was shifted the wrong way.",
            "Your weights match exp(x - m) / (1 + sum_j exp(x_j - m)) with m = max(0, row "
            "max): the scores were shifted, the 1 was not.",
        ],
    ),
    two_d_only(lambda x: attncore.softmax_one(x, axis=1)),
    Misconception(
        "softmax-1 over the wrong axis",
        "normalise each row, the last axis: reduce with axis=-1, keepdims=True.",
        variants=along_other_axes(attncore.softmax_one), detail=along_axis_detail("softmax-1"),
    ),
    Misconception(
        UNSTABLE,
        "exp of a large score overflows. Subtract m = max(0, row max) from every score and "
        "write the 1 as exp(-m): out = exp(x - m) / (exp(-m) + sum_j exp(x_j - m)). Then no "
        "exponent is positive, and the denominator is at least 1 whenever m > 0.",
        variants=(_softmax_one_naive, _softmax_one_rescaled, _softmax_one_clamp_wrong_way),
        detail="exp of these scores overflows unless each row is shifted first.",
    ),
    Misconception(
        "n instead of 1 in the softmax-1 denominator",
        "the extra term is ONE implicit key of score 0, so it adds exp(0) = 1 to the "
        "denominator, whatever the number of keys n: exp(x_j) / (1 + sum_k exp(x_k)).",
        variants=(_n_in_denominator, _n_in_denominator_shifted),
        detail="Your weights match exp(x_j) / (n + sum_k exp(x_k)) with n the number of keys: "
               "one extra 1 per key instead of a single 1.", finite=True,
    ),
    Misconception(GLOBAL_MAX, GLOBAL_MAX_FIX + " (For softmax-1: m = max(0, row max), per row.)",
                  variants=(_softmax_one_global_max,)),
    rounded_rows(
        "x", at_most_one=True, name="rows that sum to more than 1",
        fix="divide by the denominator itself and by nothing else: e = np.exp(x - m); "
            "e / (np.exp(-m) + e.sum(axis=-1, keepdims=True)) with m = max(0, row max), no "
            "epsilon, no other constant. exp(x - lse) with lse = logaddexp(0, logsumexp(x)) is "
            "right too."),
]


# -------------------------------------------------------------- sparsemax

SPARSEMAX_CASES = {
    "basic": [
        Case("2 rows of 5 scores: only part of each row survives",
             lambda: given([[0.9, -0.3, 1.4, 0.2, 1.1], [0.1, 0.5, -1.0, 0.45, 0.3]])),
        Case("2 rows of 5 scores, values drawn when graded (no table of fixed cases can "
             "answer them)", lambda: scores(36, 2, 5, scale=0.8)),
    ],
    "hidden": [
        Case("3-D input (2, 3, 4)", lambda: scores(11, 2, 3, 4, scale=0.8)),
        Case("a single column (n = 1): the weight is exactly 1", lambda: scores(12, 3, 1)),
        Case("ties, 4 to 6 keys: equal scores share the weight equally, and a row of equal "
             "scores is uniform", lambda: written_or_drawn(
                 92, lambda: given([[2.0, 2.0, 0.5, 1.0], [1.0, 1.0, 1.0, 1.0],
                                    [0.3, 3.0, 3.0, 3.0]]), _ties_sparsemax)),
        Case("scores close together: every key keeps some weight (full support)",
             lambda: scores(13, 2, 5, scale=0.1)),
        Case("one score 1.2 or more above the rest, in a drawn place: a one-hot row",
             lambda: written_or_drawn(93, lambda: given([[5.0, 0.2, 0.1, -1.0],
                                                         [0.0, 0.3, 2.0, 0.25]]),
                                      _one_hot_rows)),
        Case("float32 scores, shape (3, 5): the result must stay float32",
             lambda: scores(14, 3, 5, dtype=np.float32, scale=0.8)),
    ],
    "extreme": [
        Case("float32 rows around 100",
             lambda: scores(15, 2, 5, dtype=np.float32, scale=0.8, offset=100.0)),
        Case("float64 rows around 1e4",
             lambda: scores(16, 3, 5, scale=0.8, offset=np.array([1e4, 2e3, 1e2]))),
        Case("very negative rows (around -1e4)",
             lambda: scores(17, 2, 5, scale=0.8, offset=np.array([-1e4, -5e3]))),
        Case("4 rows at offsets -1e4, 0, 1e4, -50",
             lambda: {"x": rows_of_different_scales(18, 4, 5)}),
    ],
}


def _sorted_desc(x):
    return -np.sort(-x, axis=-1)


def _threshold(z, cumulative, k):
    """tau from the (possibly wrong) sorted values, cumulative sums and indices k."""
    in_support = 1 + k * z > cumulative
    size = np.sum(in_support, axis=-1, keepdims=True)
    return (np.take_along_axis(cumulative, size - 1, axis=-1) - 1) / size


def _k(x):
    return np.arange(1, x.shape[-1] + 1)


def _tau_zero_based_k(x):
    z = _sorted_desc(x)
    return _threshold(z, np.cumsum(z, axis=-1), np.arange(x.shape[-1]))


def _tau_unsorted(x):
    return _threshold(x, np.cumsum(x, axis=-1), _k(x))


def _tau_unsorted_cumsum(x):
    return _threshold(_sorted_desc(x), np.cumsum(x, axis=-1), _k(x))


def _tau_all_entries(x):
    return (x.sum(axis=-1, keepdims=True) - 1) / x.shape[-1]


def _tau_size_plus_one(x):
    z = _sorted_desc(x)
    cumulative = np.cumsum(z, axis=-1)
    size = np.sum(1 + _k(x) * z > cumulative, axis=-1, keepdims=True)
    return (np.take_along_axis(cumulative, size - 1, axis=-1) - 1) / (size + 1)


def _tau_next_cumsum(x):
    """cumulative[size] instead of cumulative[size - 1] (clipped at the last index)."""
    z = _sorted_desc(x)
    cumulative = np.cumsum(z, axis=-1)
    size = np.sum(1 + _k(x) * z > cumulative, axis=-1, keepdims=True)
    index = np.minimum(size, x.shape[-1] - 1)
    return (np.take_along_axis(cumulative, index, axis=-1) - 1) / size


def _tau_first_false(x):
    """Support size from argmax of the first failing index: 0 when every key is in the support."""
    z = _sorted_desc(x)
    cumulative = np.cumsum(z, axis=-1)
    size = np.argmax(~(1 + _k(x) * z > cumulative), axis=-1)[..., None]
    return (np.take_along_axis(cumulative, size - 1, axis=-1) - 1) / size


def _tau_max_minus_one(x):
    return x.max(axis=-1, keepdims=True) - 1


def _clipped(tau_of):
    return lambda x: np.maximum(x - tau_of(x), 0)


def _tau(x):
    """The correct threshold (for the wrong versions that misuse it)."""
    z = _sorted_desc(x)
    return _threshold(z, np.cumsum(z, axis=-1), _k(x))


def _sparsemax_sorted_order(x):
    z = _sorted_desc(x)
    return np.maximum(z - _tau(x), 0)


def _sparsemax_unclipped(x):
    return x - _tau(x)


def _tau_zero_based_index(x):
    """k = 0, 1, ...: the largest index k with 1 + k z_k > c_k, and tau = (c_k - 1) / k."""
    z = _sorted_desc(x)
    cumulative = np.cumsum(z, axis=-1)
    k = np.arange(x.shape[-1])
    last = np.max(np.where(1 + k * z > cumulative, k, 0), axis=-1, keepdims=True)
    return (np.take_along_axis(cumulative, last, axis=-1) - 1) / last


def _tau_ascending_index(x):
    """Ascending sort; tau from the largest k = 1, ..., n with 1 + k z_k > c_k."""
    z = np.sort(x, axis=-1)
    cumulative = np.cumsum(z, axis=-1)
    k = _k(x)
    last = np.max(np.where(1 + k * z > cumulative, k, 1), axis=-1, keepdims=True)
    return (np.take_along_axis(cumulative, last - 1, axis=-1) - 1) / last


def _fitted_threshold(args, got, expected):
    """THRESHOLD_WRONG for any threshold: the learner's row is max(x - t, 0) for one t per
    row (read off the entries above 0), and t is not the sparsemax threshold."""
    x, got = np.asarray(args["x"], float), np.asarray(got, float)
    if got.shape != x.shape or not np.all(np.isfinite(got)) or np.any(got < 0):
        return None
    t = np.where(got > 0, x - got, np.nan)
    t_row = np.nanmean(t, axis=-1, keepdims=True)
    fits = np.all((got == 0) | np.isclose(t, t_row, rtol=1e-6, atol=1e-6), axis=-1)
    if not np.all(fits & np.any(got > 0, axis=-1)):
        return None
    index = np.unravel_index(np.argmax(np.abs(got - expected).max(axis=-1)), x.shape[:-1])
    return (f"Your weights are max(x - t, 0) with t = {t_row[index].item():.4g} in row "
            f"{index if len(index) > 1 else index[0]}, where the threshold tau is "
            f"{_tau(x)[index].item():.4g}: your row sums to {got[index].sum():.4g}, not 1.")


THRESHOLD_WRONG = "sparsemax threshold wrong"
WHOLE_ROW = "sparsemax threshold from the whole row"
THRESHOLD_FIX = ("sort each row in DESCENDING order, z = -np.sort(-x, axis=-1); with k = 1, 2, "
                 "..., n (not 0, 1, ...) and the cumulative sums c_k of z, the support size is "
                 "k(z) = the number of k with 1 + k z_k > c_k; then tau = (c_{k(z)} - 1) / k(z) "
                 "(the cumulative sum at position k(z), 1-based, divided by k(z)), and "
                 "out = np.maximum(x - tau, 0).")

SPARSEMAX_MISCONCEPTIONS = [
    Misconception(
        "sparsemax weights in sorted order",
        "sort only to find tau; then apply it to the scores in their original order: "
        "out = np.maximum(x - tau, 0), not np.maximum(z_sorted - tau, 0).",
        variants=(_sparsemax_sorted_order,),
    ),
    Misconception(
        "sparsemax with k counted from 0",
        "k runs over 1, 2, ..., n: np.arange(1, n + 1). With k = 0, 1, ... the test "
        "1 + k z_k > c_k and the division by k(z) are both off by one. " + THRESHOLD_FIX,
        variants=(_clipped(_tau_zero_based_k), _clipped(_tau_zero_based_index)),
        detail="Your weights match a threshold computed with k = 0, 1, ..., n - 1 "
               "(np.arange(n)) instead of k = 1, ..., n.",
    ),
    Misconception(
        WHOLE_ROW,
        "tau comes from the support alone: sort each row in DESCENDING order (z = "
        "-np.sort(-x, axis=-1); np.sort alone sorts in ascending order), then " + THRESHOLD_FIX,
        variants=(_clipped(_tau_all_entries), _clipped(_tau_ascending_index)),
        detail=["Your threshold is tau = (sum of the row - 1) / n, as if every entry stayed in "
                "the support, so after the clip at 0 the row no longer sums to 1. Two ways to "
                "get there: shifting the row to sum 1 before clipping, or sorting in ascending "
                "order (then 1 + k z_k > c_k holds for every k, and the support is the whole "
                "row).",
                "Your weights match a threshold computed from the scores sorted in ascending "
                "order (np.sort without reversing)."],
    ),
    Misconception(
        THRESHOLD_WRONG, THRESHOLD_FIX,
        variants=tuple(_clipped(t) for t in (
            _tau_unsorted, _tau_unsorted_cumsum, _tau_size_plus_one,
            _tau_next_cumsum, _tau_first_false, _tau_max_minus_one)),
        detail="Your weights are max(x - tau, 0) with a threshold tau computed from the wrong "
               "support or the wrong sums, so the rows do not sum to 1.",
        detect=_fitted_threshold,
    ),
    Misconception(
        "sparsemax without the clip at 0",
        "the scores below the threshold get weight exactly 0: return np.maximum(x - tau, 0), "
        "not x - tau.",
        variants=(_sparsemax_unclipped,),
    ),
    two_d_only(lambda x: attncore.sparsemax(x, axis=1)),
    Misconception(
        "sparsemax over the wrong axis",
        "sort, sum and threshold each row, along the last axis (axis=-1).",
        variants=along_other_axes(attncore.sparsemax), detail=along_axis_detail("sparsemax"),
    ),
]


# ------------------------------------------------------- linear_attention

def qkv_phi(seed, t_q, t_k, d_k, d_v, feature_map, dtype=np.float64, scale=1.0, q_rows=None):
    """common.qkv and the feature map; q_rows: one scale per query."""
    args = qkv(seed, t_q, t_k, d_k, d_v, dtype=dtype, scale=scale)
    if q_rows is not None:
        args["Q"] = (args["Q"] * np.asarray(q_rows, dtype=dtype)[:, None]).astype(dtype)
    return {**args, "feature_map": feature_map}


LINEAR_CASES = {
    "basic": [
        Case("2 queries, 3 keys, d_k = 4, d_v = 5, phi = elu(x) + 1",
             lambda: qkv_phi(21, 2, 3, 4, 5, ELU_PLUS_ONE)),
    ],
    "hidden": [
        Case("4 queries, 4 keys, d_k = 3, d_v = 5, phi = relu(x) + 1e-3",
             lambda: qkv_phi(22, 4, 4, 3, 5, RELU_PLUS_EPS)),
        Case("1 query, 5 keys, d_k = 4, d_v = 3, phi = exp(x)",
             lambda: qkv_phi(23, 1, 5, 4, 3, EXP)),
        Case("3 queries, 2 keys, d_k = 3, d_v = 4, a feature map with 2 d_k = 6 features",
             lambda: qkv_phi(24, 3, 2, 3, 4, EXP_PAIRS)),
        Case("5 queries, 3 keys, d_k = 8, d_v = 2, float32, phi = elu(x) + 1",
             lambda: qkv_phi(25, 5, 3, 8, 2, ELU_PLUS_ONE, dtype=np.float32)),
    ],
    "extreme": [
        Case("3 queries scaled by 1e-3, 1 and 1e2; 6 keys; phi = relu(x) + 1e-3",
             lambda: qkv_phi(26, 3, 6, 4, 3, RELU_PLUS_EPS, q_rows=[1e-3, 1.0, 1e2])),
        Case("large scores: Q and K entries in the hundreds, phi = elu(x) + 1, 4 queries, 7 keys",
             lambda: qkv_phi(27, 4, 7, 5, 3, ELU_PLUS_ONE, scale=100.0)),
        Case("float32, 6 queries, 9 keys, d_k = 4, d_v = 3, phi = exp(x)",
             lambda: qkv_phi(28, 6, 9, 4, 3, EXP, dtype=np.float32)),
    ],
}


def _unnormalised(Q, K, V, feature_map):
    return feature_map(Q) @ (feature_map(K).T @ V)


def _divided_by_t_k(Q, K, V, feature_map):
    return feature_map(Q) @ (feature_map(K).T @ V) / K.shape[0]


def _divided_by_feature_sum(Q, K, V, feature_map):
    """Divided by sum_j phi(k_j) summed over features too, not dotted with phi(q_i)."""
    return feature_map(Q) @ (feature_map(K).T @ V) / feature_map(K).sum()


def _phi_on_q_only(Q, K, V, feature_map):
    phi_q = feature_map(Q)
    return (phi_q @ (K.T @ V)) / (phi_q @ K.sum(axis=0))[:, None]


def _phi_on_k_only(Q, K, V, feature_map):
    phi_k = feature_map(K)
    return (Q @ (phi_k.T @ V)) / (Q @ phi_k.sum(axis=0))[:, None]


def _phi_in_numerator_only(Q, K, V, feature_map):
    return (feature_map(Q) @ (feature_map(K).T @ V)) / (Q @ K.sum(axis=0))[:, None]


def _phi_on_v_too(Q, K, V, feature_map):
    return attncore.linear_attention(Q, K, feature_map(V), feature_map)


def _normalised_over_queries(Q, K, V, feature_map):
    A = feature_map(Q) @ feature_map(K).T
    return (A / A.sum(axis=0, keepdims=True)) @ V


def _softmax_attention(Q, K, V, feature_map):
    return attncore.attention(Q, K, V)


def _softmax_of_features(Q, K, V, feature_map):
    return attncore.softmax(feature_map(Q) @ feature_map(K).T) @ V


def _linear_with(feature_map):
    """Linear attention with a fixed feature map, whatever feature_map is passed."""
    return lambda Q, K, V, _: attncore.linear_attention(Q, K, V, feature_map)


def _phi_of_scores(scaled):
    """The feature map applied to the scores Q K^T (scaled: by 1/sqrt(d_k)), normalised."""
    def run(Q, K, V, feature_map):
        A = feature_map(Q @ K.T / (np.sqrt(Q.shape[-1]) if scaled else 1.0))
        return (A / A.sum(axis=-1, keepdims=True)) @ V
    return run


# The maps a learner may use in place of the one passed (the last: none at all).
FIXED_MAPS = (ELU_PLUS_ONE, RELU_PLUS_EPS, EXP, FeatureMap("no feature map at all", lambda x: x))
WITHOUT_NORMALISER = "linear attention without its normaliser"

LINEAR_MISCONCEPTIONS = [
    Misconception(
        WITHOUT_NORMALISER,
        "divide each output row by its own normaliser phi(q_i)^T sum_j phi(k_j): with "
        "phi_q = feature_map(Q) and phi_k = feature_map(K), "
        "out = (phi_q @ (phi_k.T @ V)) / (phi_q @ phi_k.sum(axis=0))[:, None]. "
        "It makes the weights of each query sum to 1, as softmax does.",
        variants=(_unnormalised, _divided_by_t_k, _divided_by_feature_sum),
        detail=[
            "Your output is phi(Q) (phi(K)^T V) with no division at all.",
            "You divided by the number of keys T_k, not by each query's own normaliser "
            "phi(q_i)^T sum_j phi(k_j).",
            "You divided by one number for all queries (the sum of every feature of every "
            "key), not by phi(q_i)^T sum_j phi(k_j).",
        ],
    ),
    Misconception(
        "feature_map argument ignored",
        "use the feature_map you are given, phi_q = feature_map(Q) and phi_k = "
        "feature_map(K), rather than a map of your own (or none): the tests pass several "
        "maps, elu(x) + 1, relu(x) + 1e-3, exp(x) and one with 2 d_k features.",
        variants=tuple(_linear_with(fixed) for fixed in FIXED_MAPS),
        detail=lambda args, i: (f"This test passes feature_map = {args['feature_map'].name}, "
                                f"but your output is what {FIXED_MAPS[i].name} gives."),
    ),
    Misconception(
        "feature map applied to the scores instead of to Q and K",
        "linear attention maps the queries and the keys, then takes dot products: "
        "phi(q_i)^T phi(k_j). It never forms the scores q_i . k_j, and phi(q_i . k_j) is "
        "a different number.",
        variants=(_phi_of_scores(False), _phi_of_scores(True)),
        detail="Your weights match feature_map(Q @ K.T) normalised over the keys.",
    ),
    Misconception(
        "feature map applied to only one of Q or K",
        "apply feature_map to Q AND to K, in the numerator and in the normaliser: "
        "phi_q = feature_map(Q), phi_k = feature_map(K), and use only phi_q and phi_k after "
        "that (V is not mapped).",
        variants=(_phi_on_q_only, _phi_on_k_only, _phi_in_numerator_only),
        detail=[
            "Your output matches phi applied to Q only (K used raw).",
            "Your output matches phi applied to K only (Q used raw).",
            "Your output matches phi in the numerator but raw Q and K in the normaliser.",
        ],
    ),
    Misconception(
        "feature map applied to V",
        "the feature map replaces exp(q . k) only: map Q and K, and mix the values V as "
        "they are.",
        variants=(_phi_on_v_too,),
    ),
    Misconception(
        "weights normalised over the queries instead of the keys",
        "each query's weights phi(q_i)^T phi(k_j) are divided by their sum over the keys j "
        "(a row sum, axis=-1), not over the queries.",
        variants=(_normalised_over_queries,),
    ),
    Misconception(
        "softmax attention instead of linear attention",
        "linear attention has no exp and no softmax: the weight of key j for query i is "
        "phi(q_i)^T phi(k_j) / sum_l phi(q_i)^T phi(k_l), with the feature_map you are given.",
        variants=(_softmax_attention, _softmax_of_features),
    ),
]


SPECS = [
    FunctionSpec(
        name="softmax_one",
        plain=(stand_ins.softmax_one,),
        axes={"x": ("...", "n"), "return": ("...", "n")},
        reference=lambda x: attncore.softmax_one(x),
        suites=SOFTMAX_ONE_CASES,
        misconceptions=SOFTMAX_ONE_MISCONCEPTIONS,
        advice=closer_rows("x", at_most_one=True),
        result_dtype=ResultDtype.INPUT_FLOAT,
        forbidden=("softmax_one",),
    ),
    FunctionSpec(
        name="sparsemax",
        plain=(stand_ins.sparsemax,),
        axes={"x": ("...", "n"), "return": ("...", "n")},
        reference=lambda x: attncore.sparsemax(x),
        suites=SPARSEMAX_CASES,
        misconceptions=SPARSEMAX_MISCONCEPTIONS,
        result_dtype=ResultDtype.INPUT_FLOAT,
        forbidden=("sparsemax",),
    ),
    FunctionSpec(
        name="linear_attention",
        plain=(stand_ins.linear_attention,),
        axes={"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "V": ("T_k", "d_v"), "return": ("T_q", "d_v")},
        reference=attncore.linear_attention,
        suites=LINEAR_CASES,
        misconceptions=LINEAR_MISCONCEPTIONS,
        forbidden=("linear_attention",),
    ),
]
