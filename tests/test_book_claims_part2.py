"""Claims of chapters 5-9 that are facts of arithmetic or of the library, checked.

Each test names the page and the sentence it holds to account (see test_book_claims.py).
"""
import json
from unittest import mock

import numpy as np
import pytest

from attncore import flash, masks, softmax
from attncore.invariants import check_rows


# Chapter 6, "The tiling order": the readable loop of the chapter skips a tile when the mask
# allows no key in it, and flash_attention's own loop computes exactly those tiles, query
# block by query block, for a causal mask (square or not a multiple of the block).
@pytest.mark.parametrize("t, block", [(10, 4), (300, 64), (128, 32)])
def test_flash_attention_computes_the_causal_tiles_the_chapter_draws(t, block):
    rng = np.random.default_rng(t)
    q, k = rng.normal(size=(2, t, 4))
    v = np.repeat(np.arange(t, dtype=float)[:, None], 2, axis=1)   # value of key j = j
    seen, real_tile = [], flash.tile_state

    def spy(s, v_tile):
        seen.append((int(v_tile[0, 0]), v_tile.shape[0], s.shape[0]))
        return real_tile(s, v_tile)

    with mock.patch.object(flash, "tile_state", spy):
        flash.flash_attention(q, k, v, causal=True, block_q=block, block_k=block)
    allowed = masks.causal(t)
    expected = [(k0, min(k0 + block, t) - k0, min(q0 + block, t) - q0)
                for q0 in range(0, t, block) for k0 in range(0, t, block)
                if allowed[q0:q0 + block, k0:k0 + block].any()]
    assert seen == expected


# Chapter 6, "Sliding windows skip more": a query block needs the key blocks overlapping
# [q0 - W + 1, q1), an interval of B + W - 1 keys, so the work grows as T W.
@pytest.mark.parametrize("t, block, window", [(2048, 64, 256), (1000, 64, 100), (512, 32, 33)])
def test_a_sliding_window_needs_about_w_over_b_key_blocks_per_query_block(t, block, window):
    allowed = masks.sliding_window(t, window)
    for q0 in range(0, t, block):
        needed = sum(allowed[q0:q0 + block, k0:k0 + block].any() for k0 in range(0, t, block))
        assert needed <= (block + window - 2) // block + 2           # blocks an interval can touch


# Chapter 8, "Differential attention": each row sums to exactly 1 - lambda, entries in (-lambda, 1).
@pytest.mark.parametrize("lam", [0.2, 0.5, 0.8])
def test_differential_rows_sum_to_one_minus_lambda(lam):
    rng = np.random.default_rng(1)
    A = softmax(3 * rng.normal(size=(50, 16))) - lam * softmax(3 * rng.normal(size=(50, 16)))
    assert np.allclose(A.sum(-1), 1 - lam, atol=1e-12)
    assert A.min() > -lam and A.max() < 1


def softpick_reference(s, eps=1e-6):
    return np.maximum(np.exp(s) - 1, 0) / (np.abs(np.exp(s) - 1).sum(-1, keepdims=True) + eps)


def softpick_stable(s, eps=1e-6):
    m = np.maximum(s.max(axis=-1, keepdims=True), 0.0)
    e, one = np.exp(s - m), np.exp(-m)
    return np.maximum(e - one, 0) / (np.abs(e - one).sum(axis=-1, keepdims=True) + eps * one)


# Chapter 8, "Softpick": zero exactly where s <= 0, sums below 1 once a score is negative, an
# all-non-positive row is all zeros, and taking m = max(0, row max) out changes nothing but
# keeps large scores finite.
def test_softpick_rows_and_their_stable_form():
    rng = np.random.default_rng(2)
    s = 2 * rng.normal(size=(200, 12))
    s[0] = -np.abs(s[0])
    A = softpick_stable(s)
    assert np.allclose(A, softpick_reference(s), rtol=1e-12, atol=1e-15)
    assert np.all(A[s <= 0] == 0) and np.all(A[s > 0] > 0)
    assert np.all(A[0] == 0)
    assert check_rows(A).sub_stochastic and not check_rows(A).on_simplex
    assert np.all(A.sum(-1)[(s < 0).any(-1)] < 1)
    big = softpick_stable(np.array([[1000.0, 999.0, -5.0]]))
    assert np.all(np.isfinite(big)) and big[0, 2] == 0


# Chapter 8, "SSMax": a key ahead of n - 1 others by g gets e^g / (e^g + n - 1) under softmax
# (tending to 0) and n^(s g) / (n^(s g) + n - 1) under SSMax (tending to 1 when s g > 1).
def test_ssmax_keeps_the_leader_as_the_row_grows():
    g, s = 2.0, 1.0
    for n in (16, 256, 4096, 65536):
        row = np.zeros(n)
        row[0] = g
        assert np.isclose(softmax(row)[0], np.exp(g) / (np.exp(g) + n - 1))
        scaled = softmax(s * np.log(n) * row)
        assert np.isclose(scaled[0], n ** (s * g) / (n ** (s * g) + n - 1))
        assert check_rows(scaled).on_simplex
    assert softmax(s * np.log(65536) * row)[0] > 0.9999 and softmax(row)[0] < 1e-3


# Chapter 9, "How long may an input be?": the published pipeline cuts at 256 word pieces, the
# tokenizer file at 128, the position table has 512 rows, and bert.tokenize cuts at none of them.
def test_the_model_folder_gives_three_limits_and_tokenize_cuts_at_none():
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    from attncore import bert

    try:
        model = bert.load()
    except (FileNotFoundError, ModuleNotFoundError, ImportError) as err:
        pytest.skip(f"model files not installed: {err}")
    st = json.loads((model.path / "sentence_bert_config.json").read_text())["max_seq_length"]
    file_cut = json.loads((model.path / "tokenizer.json").read_text())["truncation"]["max_length"]
    assert (file_cut, st, model.config.max_positions) == (128, 256, 512)
    n = bert.tokenize(model, [" ".join(["word"] * 300)]).ids.shape[1]
    assert n == 302
