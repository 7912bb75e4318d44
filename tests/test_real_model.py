"""attncore.bert against the libraries everyone uses, on the real all-MiniLM-L6-v2.

The yardsticks are independent implementations: transformers' BertModel (eager
attention, output_attentions=True), sentence-transformers' encode and the model's
own tokenizer through transformers' AutoTokenizer, all loaded from the local model
folder with the hub switched off. They come from the model-test extra, which
`make test` installs, and are imported by the first test that needs them (collecting this
file, as `make check` does, imports none of them); without them those tests fail, they
never skip.

Tolerances. In float64 on both sides the two computations differ only by the
rounding of a few thousand float64 operations per entry (measured about 1e-14),
so 1e-12 is tight and far inside the issue's 1e-5. In float32 PyTorch's own
forward is off the float64 truth by up to about 1e-5 after six layers; ours must
stay within twice PyTorch's own error (plus a few ulps), layer by layer.
"""
import os
import re
import subprocess
import sys
from types import SimpleNamespace

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing below may reach the network
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import pytest

from attncore import bert, masks

# one worker loads PyTorch and the model once for the whole module (make test runs pytest -n 2)
pytestmark = [pytest.mark.slow, pytest.mark.model, pytest.mark.xdist_group("real-model")]

# punctuation, an apostrophe, an unknown symbol (the emoji becomes [UNK]), accents that
# the uncased tokenizer strips, CJK characters split one by one, a word cut into
# word pieces, and lengths that differ so the batch is padded
SENTENCES = [
    "The cat sat on the mat.",
    "Attention rows are distributions!",
    "Zxqwv blorptastic, isn't it? \N{PARROT} na\u00efve caf\u00e9 \u2014 \u6771\u4eac (3.14%)",
    "Hello,world!!",
    "A longer sentence, with commas; semicolons: and 'quotes', so the others are padded.",
]


@pytest.fixture(scope="module")
def yardsticks():
    """torch, SentenceTransformer, AutoTokenizer and BertModel, from the model-test extra."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
        from transformers import AutoTokenizer, BertModel
    except ImportError as err:  # a clear failure, not a skip: these checks must run
        raise ImportError(f"{err}; install the test yardsticks with pip install -e '.[model-test]' "
                          f"(make test does)") from None
    return SimpleNamespace(torch=torch, SentenceTransformer=SentenceTransformer, AutoTokenizer=AutoTokenizer,
                           BertModel=BertModel)


@pytest.fixture(scope="module")
def path():
    return bert.model_dir()


@pytest.fixture(scope="module")
def model32(path):
    return bert.load(path)


@pytest.fixture(scope="module")
def model64(path):
    return bert.load(path, dtype=np.float64)


@pytest.fixture(scope="module")
def batch(model32):
    return bert.tokenize(model32, SENTENCES)


@pytest.fixture(scope="module")
def ours64(model64, batch):
    """attncore.bert's float64 run of the batch."""
    return bert.encode(model64, batch.ids, batch.attention_mask)


@pytest.fixture(scope="module")
def torch_runs(path, batch, yardsticks):
    """transformers' eager BertModel on the batch, in float32 and float64."""
    torch, BertModel = yardsticks.torch, yardsticks.BertModel
    hf = BertModel.from_pretrained(path, local_files_only=True, attn_implementation="eager").eval()
    inputs = dict(input_ids=torch.tensor(batch.ids), attention_mask=torch.tensor(batch.attention_mask))
    with torch.no_grad():
        run32 = hf(**inputs, output_attentions=True, output_hidden_states=True)
        run64 = hf.double()(**inputs, output_attentions=True, output_hidden_states=True)
    as_np = lambda run: ([a.numpy() for a in run.attentions], [h.numpy() for h in run.hidden_states])  # noqa: E731
    return {np.float32: as_np(run32), np.float64: as_np(run64)}


# --------------------------------------------------------------------------- tokens


def test_tokenization_equals_the_models_own_tokenizer(path, batch, yardsticks):
    reference = yardsticks.AutoTokenizer.from_pretrained(path, local_files_only=True)
    want = reference(SENTENCES, padding=True, return_tensors="np")
    np.testing.assert_array_equal(batch.ids, want["input_ids"])
    np.testing.assert_array_equal(batch.attention_mask, want["attention_mask"])
    assert batch.tokens == [reference.convert_ids_to_tokens(row) for row in want["input_ids"]]
    assert "[UNK]" in batch.tokens[2] and "naive" in batch.tokens[2]  # the cases the list is for
    assert [t[0] for t in batch.tokens] == ["[CLS]"] * len(SENTENCES)


def test_tokenize_refuses_a_sentence_longer_than_the_positions(model32):
    with pytest.raises(ValueError, match=r"sentence 1 has \d+ tokens, but the model has positions for 512"):
        bert.tokenize(model32, ["short", "word " * 600])
    with pytest.raises(ValueError, match="sentences must be a non-empty list of strings, got 'one sentence'"):
        bert.tokenize(model32, "one sentence")


# --------------------------------------------------------------------------- against PyTorch


@pytest.mark.parametrize("layer", range(6))
def test_attention_equals_transformers_per_layer_and_head_float64(ours64, batch, torch_runs, layer):
    attentions, hidden_states = torch_runs[np.float64]
    want = attentions[layer]
    assert ours64.attentions[layer].shape == want.shape == (len(SENTENCES), 12, batch.ids.shape[1], batch.ids.shape[1])
    per_head = np.abs(ours64.attentions[layer] - want).max(axis=(0, 2, 3))  # (H,)
    assert per_head.max() <= 1e-12, f"layer {layer}: largest difference per head {per_head}"
    np.testing.assert_allclose(ours64.hidden_states[layer + 1], hidden_states[layer + 1], rtol=0, atol=1e-10)


def test_float32_attention_is_within_pytorchs_own_rounding(model32, batch, torch_runs):
    ours = bert.encode(model32, batch.ids, batch.attention_mask)
    truth = torch_runs[np.float64][0]
    for layer, (a32, a64) in enumerate(zip(torch_runs[np.float32][0], truth)):
        pytorch_error = np.abs(a32 - a64).max()
        our_error = np.abs(ours.attentions[layer] - a64).max()
        # twice PyTorch's own error, plus 1e-6 (about 8 float32 ulps of a weight near 1) for
        # layer 0, where both errors are single roundings of the embeddings
        assert our_error <= 2 * pytorch_error + 1e-6, (
            f"layer {layer}: attncore float32 is {our_error:.2e} off the float64 result, "
            f"PyTorch float32 {pytorch_error:.2e}")


def test_layer_attention_equals_the_output_projection_of_transformers(path, model64, ours64, batch, yardsticks):
    """The function an assignment grades: layer 2's attention through W_o, before the residual."""
    torch, BertModel = yardsticks.torch, yardsticks.BertModel
    hf = BertModel.from_pretrained(path, local_files_only=True, attn_implementation="eager").eval().double()
    seen = {}
    hf.encoder.layer[2].attention.output.dense.register_forward_hook(
        lambda module, args, out: seen.update(input=args[0].numpy(), out=out.numpy()))
    hidden = ours64.hidden_states[2]  # layer 2's input
    with torch.no_grad():
        hf(input_ids=torch.tensor(batch.ids), attention_mask=torch.tensor(batch.attention_mask))
    out, weights = bert.layer_attention(hidden, model64.layers[2].attention, batch.attention_mask)
    np.testing.assert_allclose(out, seen["out"], rtol=0, atol=1e-10)
    # what went into W_o is the heads' outputs side by side, (B, T, H * d)
    v = bert.split_heads(hidden @ model64.layers[2].attention.W_v + model64.layers[2].attention.b_v, 12)
    np.testing.assert_allclose(bert.merge_heads(weights @ v), seen["input"], rtol=0, atol=1e-10)


def test_sentence_embeddings_equal_sentence_transformers(path, model32, yardsticks):
    reference = yardsticks.SentenceTransformer(str(path), device="cpu", local_files_only=True)
    want = reference.encode(SENTENCES, batch_size=2)  # batches of 2: other paddings than ours
    got = bert.sentence_embeddings(model32, SENTENCES)
    assert got.shape == want.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1, atol=1e-6)


def test_gelu_is_the_exact_erf_form(yardsticks):
    torch = yardsticks.torch
    x = np.linspace(-6, 6, 1001)
    exact = torch.nn.functional.gelu(torch.tensor(x), approximate="none").numpy()
    tanh = torch.nn.functional.gelu(torch.tensor(x), approximate="tanh").numpy()
    np.testing.assert_allclose(bert.gelu(x), exact, rtol=0, atol=1e-15)
    assert np.abs(bert.gelu(x) - tanh).max() > 1e-4  # the approximation is a different function
    assert bert.gelu(x.astype(np.float32)).dtype == np.float32


# --------------------------------------------------------------------------- the library alone


def test_split_heads_moves_heads_first_and_merge_heads_undoes_it(rng):
    x = rng.normal(size=(2, 5, 12))  # (B, T, H * d) with H = 3, d = 4
    heads = bert.split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for h in range(3):  # head h is columns h*d .. (h+1)*d of every token
        np.testing.assert_array_equal(heads[:, h], x[:, :, 4 * h:4 * (h + 1)])
    np.testing.assert_array_equal(bert.merge_heads(heads), x)
    wrong = x.reshape(2, 3, 5, 4)  # the reshape without the transpose
    assert not np.array_equal(wrong, heads)


def test_padding_changes_no_real_row(model64, batch, ours64):
    alone = [bert.tokenize(model64, [s]) for s in SENTENCES]
    together = ours64
    for b, single in enumerate(alone):
        n = single.ids.shape[1]
        assert batch.attention_mask[b].sum() == n
        run = bert.encode(model64, single.ids, single.attention_mask)
        for layer in range(6):
            A = together.attentions[layer][b]
            np.testing.assert_allclose(A[:, :n, :n], run.attentions[layer][0], rtol=0, atol=1e-12)
            assert np.all(A[:, :, n:] == 0)  # no query, pad or real, gives a pad key any weight


def test_key_padding_mask_is_the_courses_mask():
    hf_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    allowed = bert.key_padding_mask(hf_mask)
    assert allowed.shape == (2, 1, 1, 4) and allowed.dtype == np.bool_
    np.testing.assert_array_equal(allowed[:, 0], masks.key_padding(np.array([3, 4]), 4))


@pytest.mark.parametrize("bad, message", [
    (np.array([[0, 1, 1]]), "right-padded"),
    (np.array([[1, 2, 0]]), r"0 and 1 .* shape \(1, 3\)"),
    (np.array([1, 1, 0]), r"\(B, T\) .* shape \(3,\)"),
    (np.array([[1.0, 1.0, 0.0]]), "dtype float64"),
])
def test_key_padding_mask_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        bert.key_padding_mask(bad)


def test_layer_attention_errors_name_the_argument_and_shapes(model32):
    weights = model32.layers[0].attention
    hidden = np.zeros((2, 3, 384), np.float32)
    mask = np.ones((2, 3), np.int64)
    cases = [
        (lambda: bert.layer_attention(hidden[0], weights, mask),
         r"hidden must have shape \(B, T, D\), got shape \(3, 384\)"),
        (lambda: bert.layer_attention(hidden, weights, mask[:, :2]),
         r"attention_mask must have shape \(B=2, T=3\), got shape \(2, 2\)"),
        (lambda: bert.layer_attention(hidden[..., :96], weights, mask),
         r"weights.W_q must have shape \(D=96, D=96\), got shape \(384, 384\)"),
        (lambda: bert.layer_attention(hidden.astype(np.int64), weights, mask), r"hidden must be a floating"),
        (lambda: bert.split_heads(hidden, 5), r"H = n_heads = 5 .* got shape \(2, 3, 384\)"),
        (lambda: bert.layer_attention(hidden, {"W_q": weights.W_q}, mask), "AttentionWeights, got dict"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_model_dir_names_the_missing_files(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=re.escape("lacks model.safetensors, tokenizer.json")):
        bert.model_dir(tmp_path)


def test_import_attncore_needs_numpy_only():
    """With safetensors and tokenizers hidden, attncore and attncore.bert import, and load names the extra."""
    code = (
        "import sys; sys.modules['safetensors'] = None; sys.modules['tokenizers'] = None\n"
        "import attncore, attncore.bert\n"
        "try:\n    attncore.bert.load()\nexcept ImportError as e:\n    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'attncore[model]'" in result.stdout
