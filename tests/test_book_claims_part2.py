"""Claims of chapters 5-9 that are facts of arithmetic or of the library, checked.

Each test names the page and the sentence it holds to account (see test_book_claims.py).
"""
import json
from unittest import mock

import numpy as np
import pytest

from attncore import flash, masks, softmax, softmax_one
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


# Chapter 8, "Sigmoid attention": with the bias -log n a row of zero scores sums to n / (n + 1);
# a row of equal scores c sums to n / (1 + n e^-c), which is another number for every c != 0
# and runs from near 0 to near n.
def test_sigmoid_attention_sums_n_over_n_plus_one_for_zero_scores_only():
    def row_sum(scores):
        return (1 / (1 + np.exp(-(scores - np.log(scores.size))))).sum()

    for n in (4, 64, 1024):
        assert np.isclose(row_sum(np.zeros(n)), n / (n + 1))
        for c in (-5.0, -0.5, 0.5, 5.0):
            total = row_sum(np.full(n, c))
            assert np.isclose(total, n / (1 + n * np.exp(-c)))
            assert not np.isclose(total, n / (n + 1))
        assert row_sum(np.full(n, -30.0)) < 1e-6 and row_sum(np.full(n, 30.0)) > n - 1e-3


# Chapter 8, "Differential attention": each row sums to exactly 1 - lambda for every lambda; for
# lambda >= 0 (also above 1) the entries lie in (-lambda, 1), for lambda < 0 in (0, 1 - lambda);
# no row with lambda != 0 is on the simplex, and a row with lambda > 0 is sub-stochastic until
# the second map outweighs the first on a key.
@pytest.mark.parametrize("lam", [0.2, 0.5, 0.8, 1.5, -0.3])
def test_differential_rows_sum_to_one_minus_lambda(lam):
    rng = np.random.default_rng(1)
    first, second = softmax(3 * rng.normal(size=(2, 50, 16)))
    A = first - lam * second
    assert np.allclose(A.sum(-1), 1 - lam, atol=1e-12)
    low, high = (-lam, 1) if lam >= 0 else (0, 1 - lam)
    assert A.min() > low and A.max() < high
    assert not check_rows(A).on_simplex
    if 0 < lam < 1:
        assert A.min() < 0 and not check_rows(A).sub_stochastic
        assert check_rows(first - lam * first).sub_stochastic      # never outweighed: no sign


# Appendix, softmax-1 in floating point (and chapter 8's mistake 1): a computed entry stays in
# [0, 1], while the rounded entries of a row can add up to a few ulps above 1, within the atol
# that sub_stochastic allows; the appendix's rows of eight scores around 50 show it.
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_one_entries_stay_at_most_one_while_sums_can_pass_it(dtype):
    rng = np.random.default_rng(7)
    for level, n in [(0.0, 3), (50.0, 8), (50.0, 64), (500.0, 16)]:
        A = softmax_one((level + 5 * rng.normal(size=(2000, n))).astype(dtype))
        assert A.min() >= 0 and A.max() <= 1
        assert check_rows(A).sub_stochastic
    sums = softmax_one(50.0 + np.random.default_rng(1).normal(size=(1000, 8))).sum(-1)
    assert (sums > 1).any() and sums.max() <= 1 + 4 * np.finfo(np.float64).eps


# Chapter 9, "Which input tokens does the last layer draw on?": half of each layer's head-mean
# weights plus half the identity is row-stochastic, and so is the product over the layers
# (attention rollout), checked against sums over every path through the layers.
def test_rollout_of_row_stochastic_layers_is_row_stochastic():
    rng = np.random.default_rng(9)
    layers = [softmax(2 * rng.normal(size=(4, 5, 5))).mean(0) for _ in range(3)]   # heads averaged
    mixed = [0.5 * A + 0.5 * np.eye(5) for A in layers]
    rollout = mixed[2] @ mixed[1] @ mixed[0]
    paths = np.zeros((5, 5))
    for i in range(5):
        for j in range(5):
            paths[i, j] = sum(mixed[2][i, a] * mixed[1][a, b] * mixed[0][b, j]
                              for a in range(5) for b in range(5))
    assert np.allclose(rollout, paths, rtol=1e-13, atol=0)
    assert rollout.min() >= 0 and check_rows(rollout).on_simplex


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


# Chapter 9, "Fused kernels and output_attentions": with the pinned transformers, a BertModel
# loaded with its default sdpa attention logs a warning and returns no weights when a call
# asks for output_attentions, and refuses them in its configuration; eager returns them.
# Tier "model" on this test alone (PyTorch and transformers), marked here so that it holds
# whether the tiers are read from conftest.py's FILES or from each file's markers.
@pytest.mark.slow
@pytest.mark.model
def test_transformers_sdpa_gives_no_weights_and_eager_does(caplog):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer, BertModel
    from transformers.utils import logging as hf_logging

    from attncore import bert

    path = bert.load().path
    inputs = AutoTokenizer.from_pretrained(path, local_files_only=True)(["The cat sat."], return_tensors="pt")
    sdpa = BertModel.from_pretrained(path, local_files_only=True).eval()
    assert sdpa.config._attn_implementation == "sdpa"
    hf_logging.warning_once.cache_clear()
    hf_logging.enable_propagation()
    try:
        with torch.no_grad(), caplog.at_level("WARNING", logger="transformers"):
            out = sdpa(**inputs, output_attentions=True)
    finally:
        hf_logging.disable_propagation()
    assert not out.attentions
    assert "output_attentions" in caplog.text
    with pytest.raises(ValueError, match="output_attentions"):
        sdpa.config.output_attentions = True
    eager = BertModel.from_pretrained(path, local_files_only=True, attn_implementation="eager").eval()
    with torch.no_grad():
        weights = eager(**inputs, output_attentions=True).attentions
    assert len(weights) == eager.config.num_hidden_layers
