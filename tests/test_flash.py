"""Tiled FlashAttention in NumPy: equal to plain attention for every causal option and
tile size, its log-sum-exp, row recovery from it, and the online-softmax merge."""
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore as ac
import attncore.flash as fl
from attncore import masks

from . import reference as ref
from .strategies import flash_problems, random_qkv

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

SHAPES = [(5, 5), (7, 7), (3, 8), (8, 3), (1, 6), (6, 1), (1, 1)]
BLOCKS = [(1, 1), (2, 3), (3, 2), (4, 4), (5, 100), (64, 64)]
CAUSAL = [False, True, "top_left", "bottom_right"]


def _inputs(rng, dtype, t_q, t_k, d=4, d_v=3, lead=()):
    return random_qkv(rng, dtype, (*lead, t_q, d), (*lead, t_k, d), (*lead, t_k, d_v))


def _mask(causal, t_q, t_k):
    """The boolean mask `causal` stands for, from the reference definition."""
    if causal is False:
        return None
    align = "top_left" if causal is True else causal
    return np.array(ref.causal(t_q, t_k, align))


def _ref_lse(q, k, mask, scale=None):
    s = ref.scores(q, k, scale)
    if mask is None:
        return np.array([ref.logsumexp_row(row) for row in s])
    return np.array([ref.logsumexp_row(row, m) for row, m in zip(s, mask)])


@pytest.fixture(params=["numpy", "jit"])
def flash_attention(request):
    """The NumPy tiles and the Numba kernel (at the host's path) promise the same results."""
    if request.param == "numpy":
        return ac.flash_attention
    pytest.importorskip("numba")
    from attncore import jit

    return jit.flash_attention


def _combos():
    for (t_q, t_k), causal in itertools.product(SHAPES, CAUSAL):
        if causal is True and t_q != t_k:
            continue
        yield t_q, t_k, causal


@pytest.mark.parametrize("t_q,t_k,causal", list(_combos()))
@pytest.mark.parametrize("block_q,block_k", BLOCKS)
def test_flash_matches_reference(flash_attention, rng, t_q, t_k, causal, block_q, block_k):
    q, k, v = _inputs(rng, np.float64, t_q, t_k)
    out, lse = flash_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k, return_lse=True)
    mask = _mask(causal, t_q, t_k)
    want_out, _ = ref.attention(q, k, v, mask)
    np.testing.assert_allclose(out, want_out, rtol=0, atol=1e-12)
    want_lse = _ref_lse(q, k, mask)
    assert np.array_equal(np.isneginf(lse), np.isneginf(want_lse))
    finite = np.isfinite(want_lse)
    np.testing.assert_allclose(lse[finite], want_lse[finite], rtol=0, atol=1e-12)


@pytest.mark.parametrize("causal", CAUSAL)
def test_flash_float32_matches_attention(flash_attention, rng, causal):
    q, k, v = _inputs(rng, np.float32, 9, 9, d=8, d_v=5, lead=(2, 3))
    out, lse = flash_attention(q, k, v, causal=causal, block_q=4, block_k=3, return_lse=True)
    assert out.dtype == np.float32 and lse.dtype == np.float32
    assert out.shape == (2, 3, 9, 5) and lse.shape == (2, 3, 9)
    want = ac.attention(q, k, v, mask=_mask(causal, 9, 9))
    np.testing.assert_allclose(out, want, rtol=0, atol=ref.attention_atol(np.float32, 8, 9, 2.0)[1])


def test_flash_leading_dims_broadcast(flash_attention, rng):
    q, _, _ = _inputs(rng, np.float64, 4, 6, lead=(2, 3))
    _, k, v = _inputs(rng, np.float64, 4, 6, lead=(3,))
    out, lse = flash_attention(q, k, v, block_q=3, block_k=4, return_lse=True)
    assert out.shape == (2, 3, 4, 3) and lse.shape == (2, 3, 4)
    for b, h in np.ndindex(2, 3):
        want, _ = ref.attention(q[b, h], k[h], v[h])
        np.testing.assert_allclose(out[b, h], want, rtol=0, atol=1e-12)
        np.testing.assert_allclose(lse[b, h], _ref_lse(q[b, h], k[h], None), rtol=0, atol=1e-12)


def test_flash_custom_scale(flash_attention, rng):
    q, k, v = _inputs(rng, np.float64, 5, 7)
    out, lse = flash_attention(q, k, v, scale=0.7, block_q=2, block_k=3, return_lse=True)
    np.testing.assert_allclose(out, ref.attention(q, k, v, scale=0.7)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(lse, _ref_lse(q, k, None, 0.7), rtol=0, atol=1e-12)


def test_flash_lse_equals_logsumexp_of_scaled_scores(flash_attention, rng, dtype):
    q, k, v = _inputs(rng, dtype, 6, 10, lead=(2,))
    _, lse = flash_attention(q, k, v, causal="bottom_right", block_q=4, block_k=3, return_lse=True)
    mask = masks.causal(6, 10, causal="bottom_right")
    want = ac.logsumexp(ac.attention_scores(q, k), mask=mask)
    assert lse.dtype == dtype
    np.testing.assert_allclose(lse, want, rtol=0, atol=ref.softmax_atol(dtype, 10, 20))


def test_flash_fully_masked_rows_are_zero(flash_attention, rng, dtype):
    # bottom-right with T_q > T_k: queries 0..T_q-T_k-1 see no key at all
    q, k, v = _inputs(rng, dtype, 6, 2)
    with np.errstate(all="raise"):
        out, lse = flash_attention(q, k, v, causal="bottom_right", block_q=2, block_k=1, return_lse=True)
    assert not np.isnan(out).any() and not np.isnan(lse).any()
    assert np.all(out[:4] == 0) and np.all(np.isneginf(lse[:4]))
    assert np.all(np.isfinite(lse[4:]))
    w = ac.weights_from_lse(q, k, lse, causal="bottom_right")
    assert np.all(w[:4] == 0) and not np.isnan(w).any()


def test_numpy_bools_are_accepted_for_causal(rng):
    """causal=np.True_ (e.g. from an np.all(...) check) means causal=True, np.False_ means False."""
    q, k, v = _inputs(rng, np.float64, 4, 4)
    np.testing.assert_array_equal(
        ac.flash_attention(q, k, v, causal=np.True_), ac.flash_attention(q, k, v, causal=True)
    )
    np.testing.assert_array_equal(
        ac.flash_attention(q, k, v, causal=np.False_), ac.flash_attention(q, k, v, causal=False)
    )


def test_flash_skips_tiles_above_the_diagonal(rng, monkeypatch):
    """'Blocks entirely above the diagonal are skipped, never computed.'"""
    calls = []
    original = fl.tile_state

    def counting(s, v_tile):
        calls.append(s.shape)
        return original(s, v_tile)

    monkeypatch.setattr(fl, "tile_state", counting)
    q, k, v = _inputs(rng, np.float64, 8, 8)
    out = ac.flash_attention(q, k, v, causal=True, block_q=2, block_k=2)
    assert len(calls) == 4 * 5 // 2  # 10 tiles on or below the diagonal out of 16
    np.testing.assert_allclose(out, ac.attention(q, k, v, mask=masks.causal(8)), rtol=0, atol=1e-12)
    calls.clear()
    ac.flash_attention(q, k, v, causal=False, block_q=2, block_k=2)
    assert len(calls) == 16


# --------------------------------------------------------------------------- weights_from_lse


@pytest.mark.parametrize("t_q,t_k,causal", list(_combos()))
def test_weights_from_lse_recovers_every_row(rng, dtype, t_q, t_k, causal):
    q, k, v = _inputs(rng, dtype, t_q, t_k)
    _, lse = ac.flash_attention(q, k, v, causal=causal, block_q=2, block_k=3, return_lse=True)
    w = ac.weights_from_lse(q, k, lse, causal=causal)
    want = ac.attention_weights(q, k, mask=_mask(causal, t_q, t_k))
    assert w.shape == (t_q, t_k)
    # exp(s - lse) vs exp(s - m) / l: both are one exp of a score difference <= ~10 away from
    # the row max, so they agree to softmax rounding
    np.testing.assert_allclose(w, want, rtol=0, atol=ref.softmax_atol(dtype, t_k, 20))
    mask = _mask(causal, t_q, t_k)
    if mask is not None:
        assert np.all(w[~mask] == 0)


@pytest.mark.parametrize("rows", [[0], [4], [3, 1], [2, 2, 0], np.array([1, 4]), [], np.array([], np.int64)])
@pytest.mark.parametrize("causal", [False, True])
def test_weights_from_lse_row_subsets(rng, rows, causal):
    q, k, v = _inputs(rng, np.float64, 5, 5, lead=(2,))
    _, lse = ac.flash_attention(q, k, v, causal=causal, block_q=2, block_k=2, return_lse=True)
    w = ac.weights_from_lse(q, k, lse, rows=rows, causal=causal)
    picked = np.asarray(rows, np.intp)
    assert w.shape == (2, len(picked), 5)
    mask = _mask(causal, 5, 5)
    for b in range(2):
        full = ref.attention_weights(q[b], k[b], mask)
        np.testing.assert_allclose(w[b], np.array(full)[picked], rtol=0, atol=1e-13)


@pytest.mark.parametrize("rows, shape", [([[0, 1]], r"\(1, 2\)"), (3, r"\(\)"), (np.zeros((2, 0), int), r"\(2, 0\)")])
def test_weights_from_lse_rows_must_be_1d(rng, rows, shape):
    """rows is a 1-D array of query indices ([] included); a 2-D or 0-D one is refused, naming rows and its
    shape, rather than returning an undocumented shape."""
    q, k, v = _inputs(rng, np.float64, 5, 5)
    _, lse = ac.flash_attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match=rf"^rows must be a 1-D array of query indices, got shape {shape}"):
        ac.weights_from_lse(q, k, lse, rows=rows)


def test_weights_from_lse_negative_row_index(rng):
    """rows=[-1, -2] means the last two queries, as in NumPy indexing (review 5.1.1: the test
    passed whether they worked or raised); rows past either end are refused, naming rows."""
    q, k, v = _inputs(rng, np.float64, 5, 5)
    _, lse = ac.flash_attention(q, k, v, causal=True, block_q=2, block_k=2, return_lse=True)
    full = np.array(ref.attention_weights(q, k, ref.causal(5)))
    w = ac.weights_from_lse(q, k, lse, rows=[-1, -2], causal=True)
    np.testing.assert_allclose(w, full[[4, 3]], rtol=0, atol=1e-13)
    for rows in ([5], [-6]):
        with pytest.raises(ValueError, match=r"^rows must be integer query indices in \[-5, 5\)"):
            ac.weights_from_lse(q, k, lse, rows=rows, causal=True)


# --------------------------------------------------------------------------- online-softmax merge


def _tile_states(rng, rows=4, t_k=11, d_v=3, sizes=(3, 1, 4, 2, 1)):
    s = rng.normal(size=(rows, t_k)) * 4
    s[1, :] = -np.inf  # a row that sees no key at all
    s[2, 5:] = -np.inf  # a row whose later tiles are empty
    v = rng.normal(size=(t_k, d_v))
    bounds = np.cumsum((0,) + sizes)
    assert bounds[-1] == t_k
    states = [fl.tile_state(s[:, a:b], v[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    return s, v, states


def _finalize_reference(s, v):
    """Row-wise softmax(s) @ v and logsumexp(s) from the loop references."""
    mask = ~np.isneginf(s)
    out = np.array([[sum(a * vj[c] for a, vj in zip(ref.softmax_row(row, m), v)) for c in range(v.shape[1])]
                    for row, m in zip(s, mask)])
    lse = np.array([ref.logsumexp_row(row, m) for row, m in zip(s, mask)])
    return out, lse


def _assert_same(got, want):
    (out, lse), (w_out, w_lse) = got, want
    np.testing.assert_allclose(out, w_out, rtol=0, atol=1e-12)
    assert np.array_equal(np.isneginf(lse), np.isneginf(w_lse))
    finite = np.isfinite(w_lse)
    np.testing.assert_allclose(lse[finite], w_lse[finite], rtol=0, atol=1e-12)


def test_merge_in_order_gives_softmax(rng):
    s, v, states = _tile_states(rng)
    state = fl.empty_state(4, 3, np.float64)
    for t in states:
        state = fl.merge(state, t)
    out, lse = fl.finalize(state)
    _assert_same((out, lse), _finalize_reference(s, v))
    assert np.all(out[1] == 0) and np.isneginf(lse[1])


def test_merge_is_order_independent(rng):
    s, v, states = _tile_states(rng)
    want = _finalize_reference(s, v)
    for perm in itertools.permutations(range(len(states))):
        state = fl.empty_state(4, 3, np.float64)
        for i in perm:
            state = fl.merge(state, states[i])
        _assert_same(fl.finalize(state), want)


def test_merge_is_associative(rng):
    _, _, states = _tile_states(rng, sizes=(3, 4, 4))
    a, b, c = states
    left = fl.finalize(fl.merge(fl.merge(a, b), c))
    right = fl.finalize(fl.merge(a, fl.merge(b, c)))
    _assert_same(left, right)
    # and commutative
    _assert_same(fl.finalize(fl.merge(a, b)), fl.finalize(fl.merge(b, a)))


def test_empty_state_is_the_identity_of_merge(rng):
    _, _, states = _tile_states(rng)
    e = fl.empty_state(4, 3, np.float64)
    for t in states:
        for merged in (fl.merge(e, t), fl.merge(t, e)):
            np.testing.assert_array_equal(merged.m, t.m)
            np.testing.assert_array_equal(merged.l, t.l)
            np.testing.assert_array_equal(merged.acc, t.acc)
    out, lse = fl.finalize(e)
    assert np.all(out == 0) and np.all(np.isneginf(lse))


@given(seed=st.integers(0, 2**16), sizes=st.lists(st.integers(1, 4), min_size=1, max_size=6), data=st.data())
def test_merge_tree_shape_does_not_matter(seed, sizes, data):
    """Any order and any bracketing of the tile merges gives the same softmax."""
    rng = np.random.default_rng(seed)
    s, v, states = _tile_states(rng, t_k=sum(sizes), sizes=tuple(sizes))
    want = _finalize_reference(s, v)
    pool = list(states)
    while len(pool) > 1:  # merge two random states until one is left
        i, j = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=2, max_size=2, unique=True))
        merged = fl.merge(pool[i], pool[j])
        pool = [p for n, p in enumerate(pool) if n not in (i, j)] + [merged]
    _assert_same(fl.finalize(pool[0]), want)


# --------------------------------------------------------------------------- properties


@given(problem=flash_problems())
def test_flash_equals_attention_property(problem):
    q, k, v, causal, block_q, block_k = problem
    out, lse = ac.flash_attention(q, k, v, causal=causal, block_q=block_q, block_k=block_k, return_lse=True)
    mask = _mask(causal, q.shape[0], k.shape[0])
    want, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    assert out.dtype == q.dtype and lse.dtype == q.dtype
    assert not np.isnan(out).any() and not np.isnan(lse).any()
    # both sides carry the attention error bound; the online rescaling adds a few eps per tile
    w_atol, o_atol = ref.attention_atol(q.dtype, q.shape[1], k.shape[0], 3.0)
    np.testing.assert_allclose(out, want, rtol=0, atol=2 * o_atol)
    recovered = ac.weights_from_lse(q, k, lse, causal=causal)
    np.testing.assert_allclose(recovered, w, rtol=0, atol=2 * w_atol)
    if mask is not None:
        assert np.all(recovered[~mask] == 0)
        assert np.all(out[~mask.any(1)] == 0)


def _window_mask(causal, t_q, t_k, window):
    """The mask of causal, keeping only the last `window` keys up to each query's diagonal."""
    offset = t_k - t_q if causal == "bottom_right" else 0
    allowed = ref.causal(t_q, t_k, "bottom_right" if offset else "top_left")
    return np.array([[allowed[i][j] and j > i + offset - window for j in range(t_k)] for i in range(t_q)])


@given(problem=flash_problems(), window=st.integers(1, 14))
def test_a_sliding_window_is_the_masked_attention(problem, window):
    """window=w: attention with each query's last w keys up to the diagonal, tile by tile,
    and weights_from_lse with the same window recovers its weights."""
    q, k, v, causal, block_q, block_k = problem
    causal = causal or "bottom_right"  # a window needs a diagonal
    out, lse = ac.flash_attention(q, k, v, causal=causal, window=window, block_q=block_q, block_k=block_k,
                                  return_lse=True)
    mask = _window_mask(causal, q.shape[0], k.shape[0], window)
    want, w = ac.attention(q, k, v, mask=mask, return_weights=True)
    w_atol, o_atol = ref.attention_atol(q.dtype, q.shape[1], k.shape[0], 3.0)
    np.testing.assert_allclose(out, want, rtol=0, atol=2 * o_atol)
    recovered = ac.weights_from_lse(q, k, lse, causal=causal, window=window)
    np.testing.assert_allclose(recovered, w, rtol=0, atol=2 * w_atol)
    assert np.all(recovered[~mask] == 0) and np.all(out[~mask.any(1)] == 0)


def test_tiles_outside_the_window_are_skipped(monkeypatch, rng):
    """Only tiles that hold a key some query of the block sees are computed: with 32
    queries, blocks of 4 and a window of 3, at most two key tiles per query block."""
    q, k, v = random_qkv(rng, np.float64, (32, 4), (32, 4), (32, 3))
    tiles, scores = [], fl.scores

    def recorded(*args, origin, **kwargs):
        tiles.append(origin)
        return scores(*args, origin=origin, **kwargs)

    monkeypatch.setattr(fl, "scores", recorded)
    out = ac.flash_attention(q, k, v, causal=True, window=3, block_q=4, block_k=4)
    np.testing.assert_allclose(out, ac.attention(q, k, v, mask=masks.sliding_window(32, 3)), rtol=0, atol=1e-13)
    visible = _window_mask(True, 32, 32, 3)
    assert all(visible[q0:q0 + 4, k0:k0 + 4].any() for q0, k0 in tiles)
    assert len(tiles) <= 2 * 8 < 36  # a causal pass without the window computes 36 tiles


@pytest.mark.parametrize("window, causal, match", [
    (0, True, r"^window must be an integer >= 1, got 0"),
    (2.5, True, r"^window must be an integer >= 1, got 2.5"),
    (2, False, r"^window=2 needs causal: the window is the last 2 keys up to the diagonal"),
])
def test_a_bad_window_is_named(window, causal, match):
    x = np.ones((4, 2))
    with pytest.raises(ValueError, match=match):
        ac.flash_attention(x, x, x, causal=causal, window=window)
    with pytest.raises(ValueError, match=match):
        ac.weights_from_lse(x, x, np.zeros(4), causal=causal, window=window)


def test_mixed_precision_uses_the_common_dtype_for_the_scale():
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 5, 3)).astype(np.float32)
    k, v = rng.standard_normal((6, 3)), rng.standard_normal((6, 4))  # float64, shared by the batch
    out, lse = ac.flash_attention(q, k, v, block_q=2, block_k=4, return_lse=True)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, ac.attention(q, k, v), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(lse, ac.logsumexp(ac.attention_scores(q, k)), rtol=1e-13)
