"""Boolean masks (True = may attend) against their definitions in reference.py."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attncore as ac
from attncore import masks

from . import reference as ref

SIZES = [1, 2, 3, 5, 8]


def _check_mask(got, want):
    want = np.array(want, dtype=bool)
    assert got.dtype == np.bool_
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- causal


@pytest.mark.parametrize("t", SIZES)
def test_causal_square_is_lower_triangle(t):
    _check_mask(masks.causal(t), ref.causal(t))
    _check_mask(masks.causal(t, t), ref.causal(t))
    # on a square both alignments coincide
    _check_mask(masks.causal(t, t, causal="top_left"), ref.causal(t))
    _check_mask(masks.causal(t, t, causal="bottom_right"), ref.causal(t))


@pytest.mark.parametrize("t_q", SIZES)
@pytest.mark.parametrize("t_k", SIZES)
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_causal_rectangular_alignments(t_q, t_k, align):
    _check_mask(masks.causal(t_q, t_k, causal=align), ref.causal(t_q, t_k, align))


def test_causal_rectangular_examples_written_out():
    # 2 queries, 4 keys. top_left: the queries are positions 0 and 1.
    np.testing.assert_array_equal(
        masks.causal(2, 4, causal="top_left"), [[1, 0, 0, 0], [1, 1, 0, 0]]
    )
    # bottom_right: the queries are positions 2 and 3 (decoding with a KV cache)
    np.testing.assert_array_equal(
        masks.causal(2, 4, causal="bottom_right"), [[1, 1, 1, 0], [1, 1, 1, 1]]
    )
    # more queries than keys, bottom_right: the first queries see no key at all
    np.testing.assert_array_equal(
        masks.causal(4, 2, causal="bottom_right"), [[0, 0], [0, 0], [1, 0], [1, 1]]
    )


def test_bottom_right_last_query_sees_every_key():
    for t_q, t_k in [(1, 7), (3, 7), (7, 7)]:
        assert masks.causal(t_q, t_k, causal="bottom_right")[-1].all()
        assert masks.causal(t_q, t_k, causal="top_left")[0].sum() == 1


# --------------------------------------------------------------------------- windows


@pytest.mark.parametrize("t", SIZES)
@pytest.mark.parametrize("window", [1, 2, 3, 10])
def test_sliding_window_matches_definition(t, window):
    _check_mask(masks.sliding_window(t, window), ref.sliding_window(t, window))


def test_sliding_window_limits():
    np.testing.assert_array_equal(masks.sliding_window(5, 1), np.eye(5, dtype=bool))
    np.testing.assert_array_equal(masks.sliding_window(5, 5), masks.causal(5))
    np.testing.assert_array_equal(masks.sliding_window(5, 50), masks.causal(5))
    # every query sees min(i + 1, window) keys
    assert masks.sliding_window(6, 3).sum(axis=1).tolist() == [1, 2, 3, 3, 3, 3]


@pytest.mark.parametrize("t", SIZES)
@pytest.mark.parametrize("n_sink", [0, 1, 2, 9])
@pytest.mark.parametrize("window", [1, 2, 4])
def test_sink_window_matches_definition(t, n_sink, window):
    _check_mask(masks.sink_window(t, n_sink, window), ref.sink_window(t, n_sink, window))


def test_sink_window_example_and_limits():
    got = masks.sink_window(6, 1, 2)
    want = [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 0, 1, 1, 0, 0],
        [1, 0, 0, 1, 1, 0],
        [1, 0, 0, 0, 1, 1],
    ]
    np.testing.assert_array_equal(got, np.array(want, dtype=bool))
    np.testing.assert_array_equal(masks.sink_window(6, 0, 2), masks.sliding_window(6, 2))
    # sinks never break causality: query 0 sees only key 0 even with 3 sinks
    assert masks.sink_window(6, 3, 1)[0].tolist() == [True] + [False] * 5


# --------------------------------------------------------------------------- packing, padding


@pytest.mark.parametrize(
    "ids", [[0], [0, 0, 0], [0, 0, 1, 1, 1, 2], [3, 3, 1, 1, 3], [5, 4, 3, 2, 1]]
)
def test_block_diagonal_matches_definition(ids):
    _check_mask(masks.block_diagonal(np.array(ids)), ref.block_diagonal(ids))


def test_block_diagonal_batched():
    ids = np.array([[[0, 0, 1, 1]], [[0, 1, 1, 2]]])  # shape (2, 1, 4)
    got = masks.block_diagonal(ids)
    assert got.shape == (2, 1, 4, 4)
    for index in np.ndindex(2, 1):
        _check_mask(got[index], ref.block_diagonal(ids[index]))


def test_packed_causal_combination():
    ids = np.array([0, 0, 0, 1, 1])
    packed = masks.block_diagonal(ids) & masks.causal(5)
    want = np.array(ref.block_diagonal(ids)) & np.array(ref.causal(5))
    np.testing.assert_array_equal(packed, want)
    assert packed[3].tolist() == [False, False, False, True, False]  # new segment restarts


@pytest.mark.parametrize("lengths,t_k", [([3, 1, 4], 4), ([0, 2], 2), ([5], 5), ([0], 1)])
def test_key_padding_matches_definition(lengths, t_k):
    got = masks.key_padding(np.array(lengths), t_k)
    assert got.shape == (len(lengths), 1, t_k)
    _check_mask(got, ref.key_padding(lengths, t_k))
    # also from a plain list
    _check_mask(masks.key_padding(lengths, t_k), ref.key_padding(lengths, t_k))


def test_key_padding_hides_padded_keys_in_attention(rng):
    b, h, t, d = 3, 2, 5, 4
    lengths = [5, 2, 3]
    q, k, v = (rng.normal(size=(b, h, t, d)) for _ in range(3))
    mask = masks.key_padding(lengths, t)[:, None]  # (B, 1, 1, T_k) over heads and queries
    out, weights = ac.attention(q, k, v, mask=mask, return_weights=True)
    for bi, n in enumerate(lengths):
        assert np.all(weights[bi, :, :, n:] == 0)
        for hi in range(h):
            want, want_w = ref.attention(q[bi, hi, :, :], k[bi, hi, :n], v[bi, hi, :n])
            np.testing.assert_allclose(out[bi, hi], want, rtol=0, atol=1e-12)
            np.testing.assert_allclose(weights[bi, hi, :, :n], want_w, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- additive form


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_to_additive(dtype):
    mask = masks.causal(3, 5, causal="bottom_right")
    add = masks.to_additive(mask, dtype=dtype)
    assert add.dtype == dtype and add.shape == mask.shape
    assert np.all(add[mask] == 0)
    assert np.all(np.isneginf(add[~mask]))


def test_to_additive_default_dtype_is_float32():
    assert masks.to_additive(masks.causal(2)).dtype == np.float32


@given(
    t=st.integers(1, 7),
    window=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_additive_mask_gives_the_same_softmax(t, window, seed):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(2, t, t))
    mask = masks.sliding_window(t, window)
    additive = masks.to_additive(mask, np.float64)
    np.testing.assert_array_equal(ac.softmax(scores + additive), ac.softmax(scores, mask=mask))
