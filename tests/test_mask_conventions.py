"""Chapter 3's mask-convention table, executed against the installed libraries.

Each test is one row of the table in book/03-masking.md ("Mask conventions across
libraries"), or one sentence of chapters 3 and 4 about a library's masks: it runs the
library and compares what it computes with attncore's boolean masks (True = may attend).
A library that is not installed is skipped, with its name as the reason; PyTorch and
Transformers are in the model-test extra that `make test` installs.

The FlexAttention listing of chapter 3 is not executed when the book is built (the book's
environment need not have PyTorch), so test_flex_attention_listing_of_chapter_3 runs it
here, from the page's own text.
"""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import attncore
from attncore import masks

pytestmark = [pytest.mark.slow, pytest.mark.model]

torch = pytest.importorskip("torch", reason="PyTorch is not installed (model-test extra)")
F = torch.nn.functional

BOOK = Path(__file__).resolve().parents[1] / "book"
ATOL = 1e-12   # float64 everywhere below: the two sides differ only by rounding


def qkv(*lead, t_q=4, t_k=6, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(*lead, t_q, d)), rng.normal(size=(*lead, t_k, d)),
            rng.normal(size=(*lead, t_k, d)))


def sdpa(q, k, v, **kwargs):
    t = [torch.from_numpy(x) for x in (q, k, v)]
    return F.scaled_dot_product_attention(*t, **kwargs).numpy()


def some_mask(t_q, t_k, seed=1):
    """A random pattern with at least one allowed key per row."""
    m = np.random.default_rng(seed).random((t_q, t_k)) < 0.5
    m[np.arange(t_q), np.arange(t_q) % t_k] = True
    return m


# --- PyTorch F.scaled_dot_product_attention ------------------------------------------------

def test_sdpa_boolean_mask_true_means_attend():
    q, k, v = qkv(2, 3)
    m = some_mask(4, 6)
    got = sdpa(q, k, v, attn_mask=torch.from_numpy(m))
    np.testing.assert_allclose(got, attncore.attention(q, k, v, mask=m), rtol=0, atol=ATOL)
    inverted = sdpa(q, k, v, attn_mask=torch.from_numpy(~m))
    assert np.abs(inverted - got).max() > 0.1


def test_sdpa_float_mask_is_added_to_the_scores():
    q, k, v = qkv(2, 3)
    m = some_mask(4, 6)
    additive = masks.to_additive(m, dtype=np.float64)
    got = sdpa(q, k, v, attn_mask=torch.from_numpy(additive))
    np.testing.assert_allclose(got, attncore.attention(q, k, v, mask=m), rtol=0, atol=ATOL)
    # any bias, not only 0 / -inf: softmax(QK^T / sqrt(d) + bias) V
    bias = np.random.default_rng(2).normal(size=(4, 6))
    expected = attncore.softmax(attncore.attention_scores(q, k) + bias) @ v
    got = sdpa(q, k, v, attn_mask=torch.from_numpy(bias))
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("t_q, t_k", [(3, 6), (1, 5), (4, 4), (6, 3)])
def test_sdpa_is_causal_is_top_left(t_q, t_k):
    q, k, v = qkv(2, t_q=t_q, t_k=t_k)
    got = sdpa(q, k, v, is_causal=True)
    expected = attncore.attention(q, k, v, mask=masks.causal(t_q, t_k, causal="top_left"))
    np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
    if t_q == 1:   # a single query sees key 0 only: the output is v_0 (chapter 4's proposition)
        np.testing.assert_allclose(got[..., 0, :], v[..., 0, :], rtol=0, atol=ATOL)
    if t_q != t_k:
        bottom_right = attncore.attention(q, k, v, mask=masks.causal(t_q, t_k, causal="bottom_right"))
        assert np.abs(got - bottom_right).max() > 1e-3


# PyTorch warns that T_q > T_k "will produce NaNs"; SDPA returns zeros for those rows (checked)
@pytest.mark.filterwarnings("ignore:Lower right causal bias will produce NaNs")
@pytest.mark.parametrize("t_q, t_k", [(3, 6), (1, 5), (4, 4), (5, 3)])
def test_causal_lower_right_is_bottom_right_and_upper_left_is_top_left(t_q, t_k):
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left

    q, k, v = qkv(2, t_q=t_q, t_k=t_k)
    for bias, align in ((causal_lower_right, "bottom_right"), (causal_upper_left, "top_left")):
        got = sdpa(q, k, v, attn_mask=bias(t_q, t_k))
        expected = attncore.attention(q, k, v, mask=masks.causal(t_q, t_k, causal=align))
        np.testing.assert_allclose(got, expected, rtol=0, atol=ATOL)
        assert np.isfinite(got).all()
    if t_q == 1:   # one query, bottom-right: every key, as with no mask at all
        np.testing.assert_allclose(sdpa(q, k, v, attn_mask=causal_lower_right(1, t_k)),
                                   sdpa(q, k, v), rtol=0, atol=ATOL)


def test_sdpa_returns_a_zero_output_for_a_fully_masked_row():
    """Chapter 3, 'Fully masked rows': zeros since PyTorch 2.5, never NaN (and the rows
    causal_lower_right empties when T_q > T_k are such rows)."""
    q, k, v = qkv(t_q=3, t_k=5)
    m = np.ones((3, 5), dtype=bool)
    m[1] = False
    qt, kt, vt = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=torch.from_numpy(m))
    assert torch.all(out[1] == 0)
    np.testing.assert_allclose(out.detach().numpy(), attncore.attention(q, k, v, mask=m),
                               rtol=0, atol=ATOL)
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (qt, kt, vt))


# --- PyTorch FlexAttention -------------------------------------------------------------------

def flex():
    return pytest.importorskip("torch.nn.attention.flex_attention",
                               reason="FlexAttention needs PyTorch >= 2.5")


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_mask_mod_true_means_attend():
    fa = flex()
    t_q, t_k = 4, 6
    m = some_mask(t_q, t_k)
    m[2] = False                                       # and one row with no allowed key
    m_t = torch.from_numpy(m)

    def mask_mod(b, h, q_idx, kv_idx):                 # the table's lambda b, h, i, j: m[i, j]
        return m_t[q_idx, kv_idx]

    block_mask = fa.create_block_mask(mask_mod, B=None, H=None, Q_LEN=t_q, KV_LEN=t_k,
                                      device="cpu")
    q, k, v = (torch.from_numpy(x.astype(np.float32)) for x in qkv(1, 2, t_q=t_q, t_k=t_k))
    got = fa.flex_attention(q, k, v, block_mask=block_mask).double().numpy()
    expected = attncore.attention(*(x.double().numpy() for x in (q, k, v)), mask=m)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)   # float32 kernel
    assert np.all(got[..., 2, :] == 0)                 # the empty row: zeros, as SDPA


def chapter_3_flex_listing():
    text = (BOOK / "03-masking.md").read_text(encoding="utf-8")
    found = re.findall(r"^```python\n(# FlexAttention.*?)^```$", text, flags=re.S | re.M)
    assert len(found) == 1, "chapter 3 has one FlexAttention listing (```python, '# FlexAttention' first)"
    return found[0]


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_flex_attention_listing_of_chapter_3():
    """The listing runs as printed and its outputs are attncore's to float32 rounding."""
    flex()
    namespace = {}
    exec(compile(chapter_3_flex_listing(), "03-masking.md (FlexAttention listing)", "exec"),
         namespace)
    assert namespace["err"] < 1e-5
    assert namespace["err_alibi"] < 1e-5
    # the padded sequence's pad keys got nothing: sequence 1 has 5 real keys of 8
    assert namespace["out"].shape == (2, 2, 8, 4)


# --- PyTorch nn.MultiheadAttention and nn.Transformer ----------------------------------------

def mha(seed=0):
    torch.manual_seed(seed)
    return torch.nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True).double().eval()


def test_multihead_attention_key_padding_mask_true_means_ignore():
    layer = mha()
    real = np.array([[True] * 5, [True, True, True, False, False]])     # (B, T): real tokens
    x = torch.from_numpy(np.random.default_rng(3).normal(size=(2, 5, 4)))
    _, w = layer(x, x, x, key_padding_mask=torch.from_numpy(~real),
                 average_attn_weights=False)                              # (B, H, T, T)
    w = w.detach().numpy()
    allowed = masks.key_padding(real.sum(axis=1), 5)[:, None]            # (B, 1, 1, T_k)
    assert np.all(w[np.broadcast_to(~allowed, w.shape)] == 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1, rtol=0, atol=ATOL)


def test_multihead_attention_boolean_attn_mask_true_means_not_allowed():
    layer = mha(1)
    m = masks.causal(5)
    x = torch.from_numpy(np.random.default_rng(4).normal(size=(1, 5, 4)))
    _, w = layer(x, x, x, attn_mask=torch.from_numpy(~m), average_attn_weights=False)
    w = w.detach().numpy()[0]                                            # (H, T, T)
    assert np.array_equal(w > 0, np.broadcast_to(m, w.shape))


def test_generate_square_subsequent_mask_is_the_additive_causal_mask():
    got = torch.nn.Transformer.generate_square_subsequent_mask(6).numpy()
    np.testing.assert_array_equal(got, masks.to_additive(masks.causal(6)))


def test_float16_masked_fill_with_minus_1e9_raises_and_addition_overflows_silently():
    """Chapter 3, 'Half precision': the two behaviours of -1e9 in float16."""
    scores = torch.zeros(2, 3, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="without overflow"):
        scores.masked_fill(torch.ones(2, 3, dtype=torch.bool), -1e9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.isinf(scores + (-1e9)).all()


# --- Hugging Face Transformers ---------------------------------------------------------------

def transformers():
    return pytest.importorskip("transformers", reason="Transformers is not installed (model-test extra)")


def test_hf_attention_mask_one_means_attend_in_the_mask_it_builds():
    transformers()
    from transformers.masking_utils import sdpa_mask

    real = np.array([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])                # left padding
    got = sdpa_mask(batch_size=2, q_length=5, kv_length=5, attention_mask=torch.from_numpy(real),
                    allow_is_causal_skip=False)                          # (B, 1, T, T), True = attend
    expected = masks.causal(5) & real.astype(bool)[:, None, :]
    np.testing.assert_array_equal(got.numpy(), expected[:, None])
    # the pad queries' rows are empty and stay empty: no unmasking with torch >= 2.5
    assert not got[1, 0, :2].any()


def test_hf_causal_mask_of_a_chunk_is_bottom_right():
    transformers()
    from transformers.masking_utils import sdpa_mask

    got = sdpa_mask(batch_size=1, q_length=2, kv_length=5, q_offset=3, allow_is_causal_skip=False)
    np.testing.assert_array_equal(got[0, 0].numpy(), masks.causal(2, 5, causal="bottom_right"))


def test_hf_sliding_window_holds_w_keys_and_chunked_attention_is_block_diagonal():
    """Chapter 3, 'Windows, sinks, sparse patterns and packing': Transformers' current window
    counts W keys, the query's own included (the course's convention); its chunked attention
    (Llama 4's local layers) is block_diagonal(i // C) & causal."""
    transformers()
    from transformers.masking_utils import chunked_causal_mask_function, sdpa_mask, sliding_window_causal_mask_function

    T, W, C = 9, 3, 4
    window = sdpa_mask(batch_size=1, q_length=T, kv_length=T, allow_is_causal_skip=False,
                       mask_function=sliding_window_causal_mask_function(W))[0, 0].numpy()
    np.testing.assert_array_equal(window, masks.sliding_window(T, W))
    chunked = sdpa_mask(batch_size=1, q_length=T, kv_length=T, allow_is_causal_skip=False,
                        mask_function=chunked_causal_mask_function(C, torch.zeros(1, dtype=torch.long))
                        )[0, 0].numpy()
    np.testing.assert_array_equal(chunked, masks.block_diagonal(np.arange(T) // C) & masks.causal(T))


def test_hf_eager_mask_adds_the_dtype_minimum_and_empty_rows_are_uniform():
    transformers()
    from transformers.masking_utils import eager_mask

    real = torch.tensor([[False, False, True, True]])
    mask = eager_mask(batch_size=1, q_length=4, kv_length=4, attention_mask=real,
                      dtype=torch.bfloat16)[0, 0]
    assert mask.dtype == torch.bfloat16
    assert set(mask.float().unique().tolist()) == {0.0, torch.finfo(torch.bfloat16).min}
    # a pad query's row: every key blocked by the same finite number, added in bfloat16
    scores = torch.tensor([[0.5, -1.0, 2.0, 30.0]], dtype=torch.bfloat16)
    row = torch.softmax(scores + mask[0], dim=-1, dtype=torch.float32)
    np.testing.assert_allclose(row.numpy(), 0.25, rtol=0, atol=0)


def test_hf_sdpa_passes_is_causal_only_for_more_than_one_query_and_returns_no_weights(monkeypatch):
    transformers()
    from transformers.integrations import sdpa_attention

    seen = []
    real_sdpa = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append(kwargs.get("is_causal"))
        return real_sdpa(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    module = torch.nn.Module()
    module.is_causal = True
    for t_q in (1, 3):
        q, k, v = (torch.from_numpy(x) for x in qkv(1, 2, t_q=t_q, t_k=3))
        out, weights = sdpa_attention.sdpa_attention_forward(module, q, k, v, None,
                                                             output_attentions=True)
        assert weights is None                          # output_attentions: no weights under SDPA
    assert seen == [False, True]


def test_hf_model_attention_mask_zero_hides_the_pads():
    """A tiny random Llama: with attention_mask 0 on the pads, what the pads hold does not
    reach the real tokens; with 1 it does."""
    transformers()
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    model = LlamaModel(config).double().eval()
    ids = torch.tensor([[0, 0, 5, 6, 7]])                                   # two left pads
    other = torch.tensor([[9, 3, 5, 6, 7]])                                 # other pad content
    keep = torch.tensor([[0, 0, 1, 1, 1]])
    with torch.no_grad():
        a = model(input_ids=ids, attention_mask=keep).last_hidden_state[0, 2:]
        b = model(input_ids=other, attention_mask=keep).last_hidden_state[0, 2:]
        c = model(input_ids=other, attention_mask=torch.ones_like(keep)).last_hidden_state[0, 2:]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    assert (a - c).abs().max() > 1e-3


# --- Libraries the course does not install: checked when present ----------------------------

def test_xformers_triangular_and_block_diagonal_masks():
    fmha = pytest.importorskip("xformers.ops.fmha.attn_bias", reason="xFormers is not installed")
    for bias, align in ((fmha.LowerTriangularMask(), "top_left"),
                        (fmha.LowerTriangularFromBottomRightMask(), "bottom_right")):
        got = bias.materialize((3, 6), dtype=torch.float32).numpy()
        np.testing.assert_array_equal(got, masks.to_additive(masks.causal(3, 6, causal=align)))
    packed = fmha.BlockDiagonalCausalMask.from_seqlens([3, 2, 4]).materialize((9, 9), dtype=torch.float32)
    ids = np.repeat(np.arange(3), [3, 2, 4])
    np.testing.assert_array_equal(packed.numpy(),
                                  masks.to_additive(masks.block_diagonal(ids) & masks.causal(9)))


def test_flash_attn_causal_is_bottom_right():
    flash_attn = pytest.importorskip("flash_attn", reason="FlashAttention is not installed")
    if not torch.cuda.is_available():
        pytest.skip("FlashAttention runs on CUDA only")
    q, k, v = (torch.from_numpy(x.astype(np.float16)).cuda() for x in qkv(1, t_q=3, t_k=6, d=8))
    got = flash_attn.flash_attn_func(*(x.unsqueeze(2) for x in (q, k, v)), causal=True)[:, :, 0]
    expected = attncore.attention(*(x.double().cpu().numpy() for x in (q, k, v)),
                                  mask=masks.causal(3, 6, causal="bottom_right"))
    np.testing.assert_allclose(got.double().cpu().numpy(), expected, rtol=0, atol=2e-3)


def test_jax_dot_product_attention_mask_and_is_causal():
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    q, k, v = qkv(1, t_q=3, t_k=6)                   # jax layout (B, T, N, H): one head
    to_jax = [jax.numpy.asarray(x[:, :, None, :], dtype="float32") for x in (q, k, v)]
    m = some_mask(3, 6)
    got = jax.nn.dot_product_attention(*to_jax, mask=m[None, None])[:, :, 0]
    np.testing.assert_allclose(np.asarray(got), attncore.attention(q, k, v, mask=m), atol=1e-5)
    got = jax.nn.dot_product_attention(*to_jax, is_causal=True)[:, :, 0]
    np.testing.assert_allclose(np.asarray(got), attncore.attention(
        q, k, v, mask=masks.causal(3, 6, causal="top_left")), atol=1e-5)


def test_flax_dot_product_attention_mask_false_is_masked_out():
    linen = pytest.importorskip("flax.linen", reason="Flax is not installed")
    q, k, v = qkv(1, t_q=3, t_k=6)
    m = some_mask(3, 6)
    got = linen.dot_product_attention(*(x[:, :, None, :].astype(np.float32) for x in (q, k, v)),
                                      mask=m[None, None])[:, :, 0]
    np.testing.assert_allclose(np.asarray(got), attncore.attention(q, k, v, mask=m), atol=1e-5)


def test_keras_multi_head_attention_mask_one_means_attend():
    keras = pytest.importorskip("keras", reason="Keras is not installed")
    layer = keras.layers.MultiHeadAttention(num_heads=1, key_dim=5)
    q, k, v = (x.astype(np.float32) for x in qkv(1, t_q=3, t_k=6))
    m = some_mask(3, 6)
    _, w = layer(q, v, key=k, attention_mask=m[None], return_attention_scores=True)
    assert np.array_equal(np.asarray(w)[0, 0] > 0, m)
