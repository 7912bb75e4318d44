"""attention_scores, attention_weights, attention, grouped_query_attention and
kv_head_map against the plain-loop references, and the properties of attention."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore as ac
from attncore import masks

from . import reference as ref
from .strategies import dtypes, qkv_problems, random_qkv


def ref_attention_nd(q, k, v, mask=None, scale=None):
    """The 2-D reference looped over the broadcast leading dimensions."""
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    t_q, t_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        batch = np.broadcast_shapes(batch, np.shape(mask)[:-2])
        mask = np.broadcast_to(mask, (*batch, t_q, t_k))
    q = np.broadcast_to(q, (*batch, *q.shape[-2:]))
    k = np.broadcast_to(k, (*batch, *k.shape[-2:]))
    v = np.broadcast_to(v, (*batch, *v.shape[-2:]))
    out = np.empty((*batch, t_q, v.shape[-1]))
    weights = np.empty((*batch, t_q, t_k))
    for index in np.ndindex(*batch):
        o, w = ref.attention(q[index], k[index], v[index], None if mask is None else mask[index], scale)
        out[index], weights[index] = o, w
    return out, weights


def _close(got, want, atol):
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)


# --------------------------------------------------------------------------- scores


@pytest.mark.parametrize(
    "q_shape,k_shape",
    [((3, 4), (5, 4)), ((2, 3, 4), (2, 6, 4)), ((2, 3, 5, 4), (3, 7, 4)), ((1, 3, 4), (2, 1, 3, 4))],
)
def test_attention_scores_match_reference(rng, dtype, q_shape, k_shape):
    q = rng.uniform(-2, 2, size=q_shape).astype(dtype)
    k = rng.uniform(-2, 2, size=k_shape).astype(dtype)
    got = ac.attention_scores(q, k)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    assert got.dtype == dtype and got.shape == (*batch, q.shape[-2], k.shape[-2])
    qb, kb = np.broadcast_to(q, (*batch, *q.shape[-2:])), np.broadcast_to(k, (*batch, *k.shape[-2:]))
    d = q.shape[-1]
    atol = (d + 2) * ref.eps(dtype) * d * 4 / math.sqrt(d)
    for index in np.ndindex(*batch):
        _close(got[index], ref.scores(qb[index], kb[index]), atol)


def test_attention_scores_default_and_custom_scale(rng):
    q, k = rng.normal(size=(3, 16)), rng.normal(size=(4, 16))
    np.testing.assert_allclose(ac.attention_scores(q, k), (q @ k.T) / 4.0, rtol=1e-14)
    np.testing.assert_allclose(ac.attention_scores(q, k, scale=0.5), ref.scores(q, k, 0.5), rtol=0, atol=1e-13)
    # entry (i, j) is query i against key j (rows are queries)
    s = ac.attention_scores(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0], [2.0, 0.0], [3.0, 0.0]]), scale=1.0)
    np.testing.assert_array_equal(s, [[0.0, 2.0, 3.0]])


# --------------------------------------------------------------------------- weights, attention


def test_attention_weights_match_reference_with_mask(rng, dtype):
    q, k, _ = random_qkv(rng, dtype, (2, 5, 4), (2, 5, 4), (2, 5, 4))
    mask = masks.causal(5)
    got = ac.attention_weights(q, k, mask=mask)
    want = ref_attention_nd(q, k, k, mask)[1]
    assert got.dtype == dtype
    _close(got, want, ref.attention_atol(dtype, 4, 5, 2.0)[0])
    assert np.all(got[..., ~mask] == 0)


CASES = {
    # name: (q shape, k shape, v shape, mask factory or None)
    "self": ((6, 4), (6, 4), (6, 4), None),
    "self-causal": ((6, 4), (6, 4), (6, 3), lambda: masks.causal(6)),
    "cross-rectangular": ((3, 4), (7, 4), (7, 5), None),
    "cross-bottom-right": ((3, 4), (7, 4), (7, 5), lambda: masks.causal(3, 7, causal="bottom_right")),
    "cross-top-left": ((3, 4), (7, 4), (7, 5), lambda: masks.causal(3, 7, causal="top_left")),
    "more-queries-than-keys": ((7, 4), (3, 4), (3, 2), lambda: masks.causal(7, 3, causal="bottom_right")),
    "batched-heads": ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), lambda: masks.causal(5)),
    "leading-broadcast": ((2, 3, 5, 4), (3, 6, 4), (1, 1, 6, 2), None),
    "kv-shared-across-batch": ((4, 5, 4), (6, 4), (6, 3), lambda: masks.key_padding([6, 2, 0, 4], 6)),
    "per-head-mask": ((2, 4, 4), (2, 4, 4), (2, 4, 4),
                      lambda: masks.sliding_window(4, 2)[None] & np.array([True, False])[:, None, None]),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_attention_matches_reference(rng, dtype, case):
    q_shape, k_shape, v_shape, make_mask = CASES[case]
    q, k, v = random_qkv(rng, dtype, q_shape, k_shape, v_shape)
    mask = None if make_mask is None else make_mask()
    out, weights = ac.attention(q, k, v, mask=mask, return_weights=True)
    want_out, want_w = ref_attention_nd(q, k, v, mask)
    assert out.dtype == dtype and weights.dtype == dtype
    assert out.shape == want_out.shape and weights.shape == want_w.shape
    w_atol, o_atol = ref.attention_atol(dtype, q.shape[-1], k.shape[-2], 2.0)
    _close(weights, want_w, w_atol)
    _close(out, want_out, o_atol)
    # return_weights does not change the output
    np.testing.assert_array_equal(ac.attention(q, k, v, mask=mask), out)


def test_attention_custom_scale(rng):
    q, k, v = random_qkv(rng, np.float64, (3, 4), (5, 4), (5, 2))
    out, w = ac.attention(q, k, v, scale=0.3, return_weights=True)
    want_out, want_w = ref.attention(q, k, v, scale=0.3)
    _close(w, want_w, 1e-13)
    _close(out, want_out, 1e-13)


def test_fully_masked_query_gives_zero_weights_and_output(dtype, rng):
    q, k, v = random_qkv(rng, dtype, (2, 4, 3), (2, 5, 3), (2, 5, 2))
    mask = np.ones((4, 5), bool)
    mask[1] = False
    with np.errstate(all="raise"):
        out, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    assert not np.isnan(out).any() and not np.isnan(w).any()
    assert np.all(w[:, 1] == 0) and np.all(out[:, 1] == 0)
    # the other queries are untouched
    keep = [0, 2, 3]
    np.testing.assert_allclose(out[:, keep], ac.attention(q[:, keep], k, v), rtol=0, atol=1e-6)
    # every query masked (bottom-right with T_q > T_k leaves the first rows empty)
    out = ac.attention(q[0], k[0, :2], v[0, :2], mask=masks.causal(4, 2, causal="bottom_right"))
    assert np.all(out[:2] == 0) and np.all(out[2:] != 0)


def test_attention_on_large_scores_does_not_overflow(dtype):
    # scores of +-1e4: a naive exp overflows (float32 at 88, float64 at 709)
    q = np.array([[100.0], [-100.0], [0.0]], dtype)
    k = np.array([[100.0], [99.0], [-100.0]], dtype)
    v = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]], dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out, w = ac.attention(q, k, v, scale=1.0, return_weights=True)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    # row 0: scores 1e4, 9900, -1e4 -> weights 1, e^-100 (3.7e-44, subnormal in float32), 0
    # (a subnormal carries fewer digits: allow one unit of the smallest subnormal)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    np.testing.assert_allclose(w[0], [1.0, math.exp(-100), 0.0], rtol=4 * ref.eps(dtype), atol=tiny)
    np.testing.assert_array_equal(w[1], np.array([0.0, 0.0, 1.0], dtype))
    np.testing.assert_allclose(w[2], np.full(3, 1 / 3), rtol=4 * ref.eps(dtype))
    want_out, want_w = ref.attention(q, k, v, scale=1.0)
    np.testing.assert_allclose(w, want_w, rtol=0, atol=4 * ref.eps(dtype))
    np.testing.assert_allclose(out, want_out, rtol=0, atol=4 * 3 * 5 * ref.eps(dtype))


def test_mixed_dtypes_promote(rng):
    q, k, v = random_qkv(rng, np.float32, (3, 4), (5, 4), (5, 2))
    assert ac.attention(q, k, v.astype(np.float64)).dtype == np.float64
    assert ac.attention(q, k, v).dtype == np.float32


# --------------------------------------------------------------------------- grouped-query attention


HEADS = [(4, 4), (4, 2), (6, 3), (6, 2), (8, 2), (4, 1), (1, 1)]  # MHA, GQA, ..., MQA


def _ref_gqa_nd(q, k, v, mask=None):
    batch = np.broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    n_q, t_q, t_k = q.shape[-3], q.shape[-2], k.shape[-2]
    if mask is not None:
        mask = np.broadcast_to(mask, (*batch, n_q, t_q, t_k))
    q = np.broadcast_to(q, (*batch, *q.shape[-3:]))
    k = np.broadcast_to(k, (*batch, *k.shape[-3:]))
    v = np.broadcast_to(v, (*batch, *v.shape[-3:]))
    out = np.empty((*batch, n_q, t_q, v.shape[-1]))
    w = np.empty((*batch, n_q, t_q, t_k))
    for index in np.ndindex(*batch):
        o, a = ref.grouped_query_attention(q[index], k[index], v[index], None if mask is None else mask[index])
        out[index], w[index] = o, a
    return out, w


@pytest.mark.parametrize("n_q,n_kv", HEADS)
@pytest.mark.parametrize("masked", [False, True])
def test_gqa_matches_reference_head_loop(rng, dtype, n_q, n_kv, masked):
    b, t_q, t_k, d, d_v = 2, 3, 5, 4, 3
    q, k, v = random_qkv(rng, dtype, (b, n_q, t_q, d), (b, n_kv, t_k, d), (b, n_kv, t_k, d_v))
    mask = None
    if masked:  # a different mask per batch and query head
        mask = rng.random((b, n_q, t_q, t_k)) < 0.7
        mask[0, 0, 0] = False
    out, w = ac.grouped_query_attention(q, k, v, mask=mask, return_weights=True)
    want_out, want_w = _ref_gqa_nd(q, k, v, mask)
    assert out.dtype == dtype and out.shape == (b, n_q, t_q, d_v) and w.shape == (b, n_q, t_q, t_k)
    w_atol, o_atol = ref.attention_atol(dtype, d, t_k, 2.0)
    _close(w, want_w, w_atol)
    _close(out, want_out, o_atol)
    np.testing.assert_array_equal(ac.grouped_query_attention(q, k, v, mask=mask), out)


def test_gqa_with_shared_mask_and_unbatched_inputs(rng, dtype):
    q, k, v = random_qkv(rng, dtype, (6, 5, 4), (2, 5, 4), (2, 5, 3))
    mask = masks.causal(5)
    out = ac.grouped_query_attention(q, k, v, mask=mask)
    want = _ref_gqa_nd(q, k, v, mask)[0]
    _close(out, want, ref.attention_atol(dtype, 4, 5, 2.0)[1])


def test_gqa_leading_dims_broadcast(rng):
    # kv heads shared by every batch element: k, v have no batch axis
    q, k, v = random_qkv(rng, np.float64, (3, 4, 2, 4), (2, 6, 4), (2, 6, 5))
    out = ac.grouped_query_attention(q, k, v)
    assert out.shape == (3, 4, 2, 5)
    _close(out, _ref_gqa_nd(q, k, v)[0], 1e-12)


@pytest.mark.parametrize("n_q,n_kv", HEADS)
def test_gqa_equals_attention_with_repeated_kv_heads(rng, n_q, n_kv):
    q, k, v = random_qkv(rng, np.float64, (2, n_q, 4, 8), (2, n_kv, 6, 8), (2, n_kv, 6, 3))
    group = n_q // n_kv
    repeated = ac.attention(q, np.repeat(k, group, axis=-3), np.repeat(v, group, axis=-3))
    _close(ac.grouped_query_attention(q, k, v), repeated, 1e-12)


@pytest.mark.parametrize("n_q,n_kv", [(4, 2), (6, 3), (6, 2), (8, 2)])
def test_gqa_is_not_tiled_kv_heads(rng, n_q, n_kv):
    """The classic mistake: np.tile gives heads [0, 1, 0, 1], the right order is [0, 0, 1, 1]."""
    q, k, v = random_qkv(rng, np.float64, (n_q, 4, 8), (n_kv, 6, 8), (n_kv, 6, 3))
    group = n_q // n_kv
    tiled = ac.attention(q, np.tile(k, (group, 1, 1)), np.tile(v, (group, 1, 1)))
    out = ac.grouped_query_attention(q, k, v)
    # heads 0 reads kv head 0 either way; head 1 differs (repeat: kv 0, tile: kv 1)
    assert not np.allclose(out[1], tiled[1], atol=1e-3)
    assert not np.allclose(out, tiled, atol=1e-3)


@pytest.mark.parametrize("n_q,n_kv", HEADS + [(12, 4), (12, 1), (12, 12)])
def test_kv_head_map_matches_reference(n_q, n_kv):
    got = ac.kv_head_map(n_q, n_kv)
    assert got.tolist() == ref.kv_head_map(n_q, n_kv)


def test_kv_head_map_is_repeat_not_tile():
    assert ac.kv_head_map(8, 2).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert ac.kv_head_map(8, 1).tolist() == [0] * 8
    assert ac.kv_head_map(8, 8).tolist() == list(range(8))


# --------------------------------------------------------------------------- properties

BOUND = 3.0  # the entries of qkv_problems


def _tolerances(q, k):
    return ref.attention_atol(q.dtype, q.shape[-1], k.shape[-2], BOUND)


@given(problem=qkv_problems(), data=st.data())
def test_permuting_keys_and_values_together_leaves_output_unchanged(problem, data):
    q, k, v, mask = problem
    perm = np.array(data.draw(st.permutations(range(k.shape[0]))))
    out, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    out_p, w_p = ac.attention(q, k[perm], v[perm], mask=None if mask is None else mask[:, perm], return_weights=True)
    w_atol, o_atol = _tolerances(q, k)
    _close(out_p, out, 2 * o_atol)
    _close(w_p, w[:, perm], 2 * w_atol)  # the weights move with their keys


@given(problem=qkv_problems(), data=st.data())
def test_permuting_queries_permutes_output_rows(problem, data):
    q, k, v, mask = problem
    perm = np.array(data.draw(st.permutations(range(q.shape[0]))))
    out = ac.attention(q, k, v, mask=mask)
    out_p = ac.attention(q[perm], k, v, mask=None if mask is None else mask[perm])
    _close(out_p, out[perm], 2 * _tolerances(q, k)[1])


@given(problem=qkv_problems())
def test_output_is_a_convex_combination_of_value_rows(problem):
    q, k, v, mask = problem
    out, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    assert out.dtype == q.dtype and w.dtype == q.dtype
    n = k.shape[0]
    # output == weights @ v, summed here in float64 loops from the returned weights;
    # out_ic is a t_k-term float sum: error <= t_k eps max|v| (x4 for the matmul's blocking),
    # plus, for products that land among the subnormals, half the smallest subnormal each
    by_hand = np.array([[sum(float(w[i, j]) * float(v[j, c]) for j in range(n)) for c in range(v.shape[1])]
                        for i in range(q.shape[0])])
    vmax = float(np.abs(v).max())
    atol = 4 * n * ref.eps(q.dtype) * vmax + n * float(np.finfo(q.dtype).smallest_subnormal)
    _close(out, by_hand, atol)
    # every output coordinate lies between the min and max of that coordinate over the
    # value rows with nonzero weight; the weights sum to 1 within simplex_atol, so allow
    # that much of max|v| on top of the summation error.
    hull_tol = atol + ref.simplex_atol(q.dtype, n) * vmax
    for i in range(q.shape[0]):
        used = w[i] > 0
        if not used.any():
            assert np.all(out[i] == 0)  # fully masked query
            continue
        lo, hi = v[used].min(axis=0), v[used].max(axis=0)
        assert np.all(out[i] >= lo - hull_tol) and np.all(out[i] <= hi + hull_tol)


@given(problem=qkv_problems())
def test_weight_rows_masks_and_dtype(problem):
    q, k, v, mask = problem
    out, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    assert out.dtype == q.dtype and w.dtype == q.dtype
    assert np.all((w >= 0) & (w <= 1))
    sums = w.astype(np.float64).sum(-1)
    if mask is None:
        assert np.all(np.abs(sums - 1) <= ref.simplex_atol(q.dtype, k.shape[0]))
        return
    assert np.all(w[~mask] == 0)
    empty = ~mask.any(-1)
    assert np.all(sums[empty] == 0) and np.all(out[empty] == 0)
    assert np.all(np.abs(sums[~empty] - 1) <= ref.simplex_atol(q.dtype, k.shape[0]))


@given(problem=qkv_problems(max_t=5, max_d=3))
def test_attention_matches_reference_property(problem):
    q, k, v, mask = problem
    out, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    want_out, want_w = ref.attention(q, k, v, mask)
    w_atol, o_atol = _tolerances(q, k)
    _close(w, want_w, w_atol)
    _close(out, want_out, o_atol)


@given(
    dtype=dtypes,
    d=st.integers(1, 4),
    t=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_scores_up_to_1e4_give_finite_weights(dtype, d, t, seed):
    rng = np.random.default_rng(seed)
    # entries up to 100/sqrt(d) with scale 1: |scores| <= 1e4
    q = rng.uniform(-100, 100, size=(t, d)).astype(dtype) / np.sqrt(d).astype(dtype)
    k = rng.uniform(-100, 100, size=(t, d)).astype(dtype) / np.sqrt(d).astype(dtype)
    v = rng.normal(size=(t, 2)).astype(dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out, w = ac.attention(q, k, v, scale=1.0, return_weights=True)
    assert out.dtype == dtype and np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    assert np.all(np.abs(w.astype(np.float64).sum(-1) - 1) <= ref.simplex_atol(dtype, t))


@given(
    dtype=dtypes,
    heads=st.sampled_from(HEADS),
    t_q=st.integers(1, 5),
    t_k=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    masked=st.booleans(),
)
def test_gqa_equals_mha_with_repeated_kv_property(dtype, heads, t_q, t_k, seed, masked):
    n_q, n_kv = heads
    rng = np.random.default_rng(seed)
    q, k, v = random_qkv(rng, dtype, (n_q, t_q, 3), (n_kv, t_k, 3), (n_kv, t_k, 2), bound=BOUND)
    mask = rng.random((n_q, t_q, t_k)) < 0.6 if masked else None
    out, w = ac.grouped_query_attention(q, k, v, mask=mask, return_weights=True)
    group = n_q // n_kv
    mha_out, mha_w = ac.attention(q, np.repeat(k, group, 0), np.repeat(v, group, 0), mask=mask, return_weights=True)
    assert out.dtype == dtype
    w_atol, o_atol = ref.attention_atol(dtype, 3, t_k, BOUND)
    _close(w, mha_w, w_atol)
    _close(out, mha_out, o_atol)


def test_kv_cache_bytes_counts_keys_and_values_of_every_layer_head_and_token():
    # A Llama-2-7B-like cache: 32 layers, 32 kv heads of 128, 4096 tokens, fp16 -> 2 GiB
    assert ac.kv_cache_bytes(32, 32, 128, 4096, batch=1, bytes_per_value=2) == 2 * 2**30
    # loop over every stored number: 2 tensors per layer, each (batch, heads, tokens, dim)
    count = sum(1 for _ in range(2) for _ in range(3) for _ in range(2) for _ in range(5) for _ in range(4)
                for _ in range(7))
    assert ac.kv_cache_bytes(3, 2, 7, 4, batch=5, bytes_per_value=1) == count
    assert ac.kv_cache_bytes(3, 2, 7, 4, batch=5, bytes_per_value=4) == 4 * count
    with pytest.raises(ValueError, match="n_kv_heads must be an integer >= 1, got 0"):
        ac.kv_cache_bytes(32, 0, 128, 4096)


def _elu_plus_one(x):
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def test_linear_attention_matches_the_explicit_weighted_average(rng):
    q, k, v = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    out = ac.linear_attention(q, k, v, _elu_plus_one)
    for b in range(2):
        for i in range(3):  # plain loops: weights phi(q_i).phi(k_j) / their sum, then average v_j
            kernel = [float(_elu_plus_one(q[b, i]) @ _elu_plus_one(k[b, j])) for j in range(5)]
            expected = sum(w * v[b, j] for j, w in enumerate(kernel)) / sum(kernel)
            np.testing.assert_allclose(out[b, i], expected, rtol=1e-12)


def test_linear_attention_refuses_a_zero_normaliser():
    with pytest.raises(ValueError, match="zero normaliser"):
        ac.linear_attention(np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 2)), np.zeros_like)
