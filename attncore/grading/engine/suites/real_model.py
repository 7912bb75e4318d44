"""07-real-model: split_heads and layer_attention, one BERT self-attention block.

References: attncore.bert.split_heads and attncore.bert.layer_attention. The cases use
small random weights with the structure of a real layer (an AttentionWeights: four
(D, D) matrices, four biases, H heads of size d), so grading needs no model files.
Every case puts a sentence without padding first: the detectors read the learner's
weights there (scale, softmax axis), and in the padded sentences after it (the mask).
"""
import re
from dataclasses import replace
from itertools import permutations

import numpy as np

import attncore
from attncore import bert

from .. import stand_ins
from ..probe import Case, FunctionSpec, Misconception, same
from .common import (
    KEYS_NOT_TRANSPOSED,
    KEYS_NOT_TRANSPOSED_FIX,
    MASK_AFTER,
    MASK_WITH_ZERO,
    NO_SOFTMAX,
    NO_SOFTMAX_FIX,
    SCALE,
    SCALE_AFTER_SOFTMAX,
    SCALE_AFTER_SOFTMAX_FIX,
    WRONG_AXIS,
    WRONG_AXIS_FIX,
    arrays,
    softmax_scale,
)

ASSIGNMENT = "07-real-model"
FORBIDDEN = ("bert.layer_attention", "bert.split_heads", "bert.merge_heads",
             "bert.key_padding_mask", "bert.encoder_layer", "bert.encode", "attention",
             "attention_weights", "attention_scores", "grouped_query_attention",
             "masks.key_padding")

RESHAPE = "reshape without transpose (heads leak into each other)"
RESHAPE_FIX = ("cut the last axis into heads, then move the head axis in front of the tokens: "
               "x.reshape(B, T, H, d).transpose(0, 2, 1, 3). Merging is the inverse: "
               "transpose(0, 2, 1, 3) back to (B, T, H, d), then reshape(B, T, H * d). A bare "
               "reshape to (B, H, T, d) has the right shape but deals the numbers of several "
               "tokens into one head.")


# ---------------------------------------------------------------- split_heads

def _numbered(batch, tokens, width, n_heads):
    """x[b, t, j] = 100 b + 10 t + j: every number says where it came from."""
    b, t, j = np.ogrid[:batch, :tokens, :width]
    return {"x": (100.0 * b + 10.0 * t + j).astype(np.float64), "n_heads": n_heads}


def _random_x(seed, batch, tokens, width, n_heads, dtype=np.float64):
    (x,) = arrays(seed, (batch, tokens, width), dtype=dtype)
    return {"x": x, "n_heads": n_heads}


SPLIT_CASES = {
    "basic": [
        Case("one sentence of 3 tokens, hidden size 4, 2 heads of size 2; x[b, t, j] = "
             "100 b + 10 t + j", lambda: _numbered(1, 3, 4, 2)),
        Case("two sentences of 3 tokens, hidden size 6, 3 heads of size 2; x[b, t, j] = "
             "100 b + 10 t + j", lambda: _numbered(2, 3, 6, 3)),
        Case("two sentences of 3 tokens, hidden size 6, 3 heads of size 2, values drawn when "
             "graded (no table of fixed cases can answer them)", lambda: _random_x(37, 2, 3, 6, 3)),
    ],
    "hidden": [
        Case("two sentences of 5 tokens, hidden size 12, 4 heads of size 3",
             lambda: _random_x(1, 2, 5, 12, 4)),
        Case("two sentences of 3 tokens, hidden size 8, 8 heads of size 1",
             lambda: _random_x(2, 2, 3, 8, 8)),
        Case("one sentence of 4 tokens, hidden size 6, 1 head of size 6",
             lambda: _random_x(3, 1, 4, 6, 1)),
        Case("two sentences of 4 tokens, hidden size 16, 4 heads of size 4, float32",
             lambda: _random_x(4, 2, 4, 16, 4, dtype=np.float32)),
    ],
}


def _sizes(x, n_heads):
    b, t, width = np.shape(x)
    return b, t, n_heads, width // n_heads


def _reshape_detail(args, i):
    b, t, h, d = _sizes(args["x"], args["n_heads"])
    if i == 1:
        return (f"Your result has the shape (B, T, H, d) = {(b, t, h, d)}: the last axis is cut "
                f"into heads, but the heads are not moved in front of the tokens.")
    rows = [f"token {(r * d) // (h * d)}, features {(r * d) % (h * d)}-{(r * d) % (h * d) + d - 1}"
            for r in range(t)]
    return (f"reshape(B, H, T, d) cuts x in memory order, token after token: row by row, your "
            f"head 0 holds {'; '.join(rows)}. Head 0 must hold features 0-{d - 1} of every "
            f"token, one row per token.")


def _heads_first_detail(b, t, h, d):
    return (f"Your result has the shape (H, B, T, d) = {(h, b, t, d)}; the expected shape is "
            f"(B, H, T, d) = {(b, h, t, d)}.")


# Orders of the axes (B, H, T, d) other than the right one and the two named above
# ((B, T, H, d): a reshape without the transpose; (H, B, T, d): heads in front of the batch).
_OTHER_ORDERS = [p for p in permutations(range(4))
                 if p not in ((0, 1, 2, 3), (0, 2, 1, 3), (1, 0, 2, 3))]

SPLIT_MISCONCEPTIONS = [
    Misconception(
        RESHAPE, RESHAPE_FIX,
        variants=(lambda x, n_heads: x.reshape(x.shape[0], n_heads, x.shape[1], -1),
                  lambda x, n_heads: x.reshape(*_sizes(x, n_heads))),
        detail=_reshape_detail),
    Misconception(
        "heads cut from interleaved features",
        "head h owns the d CONSECUTIVE features h*d ... h*d + d - 1 of every token (the columns "
        "of W_q that belong to it sit side by side): reshape the last axis to (H, d), not to "
        "(d, H), which gives head h the features h, h + H, h + 2H, ...",
        variants=(lambda x, n_heads: x.reshape(*x.shape[:2], -1, n_heads).transpose(0, 3, 1, 2),),
        detail=lambda args, i: (
            f"Your head 0 holds features 0, {args['n_heads']}, {2 * args['n_heads']}, ... of each "
            f"token (every H-th feature); it must hold the first d = "
            f"{_sizes(args['x'], args['n_heads'])[3]} features.")),
    Misconception(
        "heads in front of the batch axis",
        "the batch axis stays first: (B, T, H, d) -> (B, H, T, d) is transpose(0, 2, 1, 3); "
        "np.stack(np.split(x, H, axis=-1), axis=1) also works (axis=0 puts the heads first).",
        variants=(lambda x, n_heads: bert.split_heads(x, n_heads).transpose(1, 0, 2, 3),),
        detail=lambda args, i: _heads_first_detail(*_sizes(args["x"], args["n_heads"]))),
    Misconception(
        "head axes in the wrong order",
        "the result is (B, H, T, d): batch, head, token, feature. Each head's (T, d) block is "
        "a Q, K or V matrix with one ROW per token, so q @ k^T gives (T, T) scores. Cut the "
        "last axis with reshape(B, T, H, d), then transpose(0, 2, 1, 3): no other order.",
        variants=tuple(
            (lambda x, n_heads, p=p: bert.split_heads(x, n_heads).transpose(p))
            for p in _OTHER_ORDERS),
        detail=lambda args, i: (
            f"Your result is split_heads(x) with its axes in the order "
            f"({', '.join('BHTd'[a] for a in _OTHER_ORDERS[i])}), shape "
            f"{tuple(_sizes(args['x'], args['n_heads'])[[0, 2, 1, 3][a]] for a in _OTHER_ORDERS[i])}"
            f"; the order is (B, H, T, d) = "
            f"{tuple(_sizes(args['x'], args['n_heads'])[a] for a in (0, 2, 1, 3))}.")),
    Misconception(
        "number of heads and head size swapped",
        "cut the last axis into H heads of d = D // H features: reshape(B, T, H, d), with "
        "n_heads before the head size, then transpose(0, 2, 1, 3).",
        variants=(lambda x, n_heads: x.reshape(
            *x.shape[:2], x.shape[-1] // n_heads, n_heads).transpose(0, 2, 1, 3),),
        detail=lambda args, i: (
            f"Your result has {_sizes(args['x'], args['n_heads'])[3]} 'heads' of "
            f"{args['n_heads']} features: reshape(B, T, d, H) instead of (B, T, H, d).")),
]


# ---------------------------------------------------------------- layer_attention

def layer_weights(seed, n_heads, head_dim, dtype=np.float64):
    """Random AttentionWeights of one layer: four (D, D) matrices and four biases."""
    width = n_heads * head_dim
    rng = np.random.default_rng(seed)
    matrices = [rng.standard_normal((width, width)) * 1.2 / np.sqrt(width) for _ in range(4)]
    biases = [0.5 * rng.standard_normal(width) for _ in range(4)]
    parts = [a.astype(dtype) for pair in zip(matrices, biases) for a in pair]
    return bert.AttentionWeights(*parts, n_heads)


def layer_arguments(seed, lengths, n_heads, head_dim, dtype=np.float64):
    """Hidden states (B, T, D) of sentences with these numbers of real tokens, right-padded
    to the longest, the weights of a layer, and Hugging Face's attention_mask (1 = real)."""
    tokens = max(lengths)
    (hidden,) = arrays(seed, (len(lengths), tokens, n_heads * head_dim), dtype=dtype)
    mask = (np.arange(tokens) < np.array(lengths)[:, None]).astype(np.int64)
    return {"hidden": hidden, "weights": layer_weights(seed + 100, n_heads, head_dim, dtype),
            "attention_mask": mask}


def _plural(n, word):
    return f"{n} {word}{'s' if n > 1 else ''}"


def _layer_case(seed, lengths, n_heads, head_dim, dtype=np.float64, what=""):
    longest = max(lengths)
    sentences = ", ".join(_plural(n, "real token") + (f" + {_plural(longest - n, 'pad')}"
                                                      if n < longest else "") for n in lengths)
    text = (f"{_plural(len(lengths), 'sentence')} ({sentences}), {n_heads} heads "
            f"of size {head_dim} (D = {n_heads * head_dim})"
            f"{', float32' if dtype == np.float32 else ''}{': ' + what if what else ''}")
    return Case(text, lambda: layer_arguments(seed, lengths, n_heads, head_dim, dtype))


LAYER_CASES = {
    "basic": [
        _layer_case(1, [3], 2, 2, what="no padding"),
        _layer_case(2, [4], 2, 3, what="no padding"),
    ],
    "padding": [
        _layer_case(3, [4, 2], 2, 2),
        _layer_case(4, [5, 3], 3, 3),
    ],
    "hidden": [
        _layer_case(5, [4, 4], 2, 4, what="no padding"),
        _layer_case(6, [6, 1], 4, 2, what="a sentence of one token"),
        _layer_case(7, [6, 4], 4, 4, dtype=np.float32),
    ],
}


def _projected(args):
    """q, k, v (B, H, T, d) of the arguments, with attncore.bert's own split."""
    hidden, w = args["hidden"], args["weights"]
    return [bert.split_heads(hidden @ W + b, w.n_heads)
            for W, b in ((w.W_q, w.b_q), (w.W_k, w.b_k), (w.W_v, w.b_v))]


def _masked_by_multiplying(after_softmax):
    """The layer with the 0/1 attention_mask multiplied into the scores, or into the
    weights after the softmax."""
    def layer(hidden, weights, attention_mask):
        args = {"hidden": hidden, "weights": weights}
        q, k, v = _projected(args)
        keys = np.asarray(attention_mask)[:, None, None, :].astype(hidden.dtype)
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(_head_dim(args))
        A = attncore.softmax(scores) * keys if after_softmax else attncore.softmax(scores * keys)
        return bert.merge_heads(A @ v) @ weights.W_o + weights.b_o, A
    return layer


def _weighted_by(weights_of, keys_as_given=False):
    """The layer with A = weights_of(scores, keep, d) in place of the masked softmax of the
    scaled scores; keys_as_given: scores from q @ k, without k's transpose."""
    def layer(hidden, weights, attention_mask):
        args = {"hidden": hidden, "weights": weights}
        q, k, v = _projected(args)
        d = _head_dim(args)
        raw = q @ (k if keys_as_given else np.swapaxes(k, -1, -2))
        A = weights_of(raw, bert.key_padding_mask(attention_mask), d)
        return bert.merge_heads(A @ v) @ weights.W_o + weights.b_o, A
    return layer


def _keys_not_transposed_error(args, error_type, error_message):
    """q @ k for (B, H, T, d) heads: the matmul's inner sizes d and T differ."""
    t, d = args["hidden"].shape[1], _head_dim(args)
    sizes = re.search(r"core dimension.*\(size (\d+) is different from (\d+)\)", error_message)
    if error_type != "ValueError" or not sizes or {int(sizes[1]), int(sizes[2])} != {t, d}:
        return None
    return (f"Your q and k are (B, H, T, d) = (.., .., {t}, {d}): q @ k puts the d = {d} numbers "
            f"of each query against the T = {t} rows of k, its keys, which is why the product "
            f"failed. Rows of q must meet rows of k: q @ k.transpose(0, 1, 3, 2).")


def _head_dim(args):
    return args["hidden"].shape[-1] // args["weights"].n_heads


def _learner_weights(args, got):
    """The attention weights A (B, H, T, T) the learner returned, as float, or None."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return None
    b, t, _ = args["hidden"].shape
    with np.errstate(all="ignore"):
        A = np.asarray(got[1], dtype=float)
    return A if A.shape == (b, args["weights"].n_heads, t, t) else None


def _padded(args):
    """[(sentence, number of real tokens)] of the sentences that have pads."""
    lengths = np.asarray(args["attention_mask"]).sum(axis=-1)
    width = np.shape(args["attention_mask"])[-1]
    return [(b, int(n)) for b, n in enumerate(lengths) if n < width]


def _blocked(rows):
    """Rows that hold no distribution: all zero or not finite."""
    return bool(np.all(~np.isfinite(rows) | (rows == 0)))


def _unsplit(split_by_reshape, merge_by_reshape):
    """The layer with a bare reshape in place of split_heads and/or merge_heads."""
    def layer(hidden, weights, attention_mask):
        w = weights
        b, t, width = hidden.shape
        h, d = w.n_heads, width // w.n_heads

        def split(x):
            return x.reshape(b, h, t, d) if split_by_reshape else bert.split_heads(x, h)

        q, k, v = (split(hidden @ W + bias) for W, bias in ((w.W_q, w.b_q), (w.W_k, w.b_k),
                                                           (w.W_v, w.b_v)))
        A = attncore.attention_weights(q, k, mask=bert.key_padding_mask(attention_mask))
        context = (A @ v).reshape(b, t, width) if merge_by_reshape else bert.merge_heads(A @ v)
        return context @ w.W_o + w.b_o, A
    return layer


def _with(**change):
    """The layer computed from weights changed by change[name](weights)."""
    def layer(hidden, weights, attention_mask):
        changed = replace(weights, **{name: f(weights) for name, f in change.items()})
        return bert.layer_attention(hidden, changed, attention_mask)
    return layer


def _zero(name):
    return lambda w: np.zeros_like(getattr(w, name))


def _identity(w):
    return np.eye(len(w.b_o), dtype=w.W_o.dtype)


# The scale factors learners use instead of 1/sqrt(d): (name, factor(d, D)).
OTHER_SCALES = (
    ("no scale at all", lambda d, width: 1.0),
    ("1/d: the 1/sqrt(d) applied twice", lambda d, width: 1 / d),
    ("sqrt(d): multiplied instead of divided", lambda d, width: np.sqrt(d)),
    ("1/D: the hidden size, without the square root", lambda d, width: 1 / width),
)


def _fitted_scale(args, got):
    """c with the learner's weights of sentence 0 = softmax(c q k^T), or None."""
    A = _learner_weights(args, got)
    if A is None:
        return None
    q, k, _ = _projected(args)
    return softmax_scale((q @ np.swapaxes(k, -1, -2))[0], A[0])


def _hidden_scale_detect(args, got, expected):
    c, d = _fitted_scale(args, got), _head_dim(args)
    width = args["hidden"].shape[-1]
    if c is None or not np.isclose(c, 1 / np.sqrt(width), rtol=1e-3):
        return None
    return (f"Your weights are softmax({c:.4g} * q k^T), and {c:.4g} = 1/sqrt(D) with the hidden "
            f"size D = {width}. Each head's dot product runs over its own d = D / H = {d} "
            f"numbers, so the scale is 1/sqrt(d) = {1 / np.sqrt(d):.4g}.")


def _scale_detect(args, got, expected):
    c, d = _fitted_scale(args, got), _head_dim(args)
    if c is None or np.isclose(c, 1 / np.sqrt(d), rtol=1e-3):
        return None
    names = [name for name, factor in OTHER_SCALES
             if np.isclose(c, factor(d, args["hidden"].shape[-1]), rtol=1e-3)]
    return (f"Your weights are softmax({c:.4g} * q k^T)"
            f"{' (' + ' or '.join(names) + ')' if names else ''}; with heads of size d = {d} "
            f"the scale is 1/sqrt(d) = {1 / np.sqrt(d):.4g}.")


def _axis_detect(args, got, expected):
    A = _learner_weights(args, got)
    if A is None:
        return None
    q, k, _ = _projected(args)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(_head_dim(args))
    for axis, what in ((-2, "the queries (axis -2): every column sums to 1"),
                       (1, "the heads (axis 1): each entry sums to 1 across the heads")):
        if same(A[0], attncore.softmax(scores, axis=axis)[0]):
            return f"In sentence 0 your weights are normalised over {what}, not over the keys."
    return None


def _polarity_detect(args, got, expected):
    A = _learner_weights(args, got)
    if A is None:
        return None
    padded = _padded(args)
    if not padded and _blocked(A):
        return ("Every sentence here is all real tokens (attention_mask all 1), and your weights "
                "are all 0 or NaN: every key was blocked, as when 1 is read as 'blocked'.")
    for b, n in padded:
        real, pads = A[b, :, :n, :n], A[b, :, :n, n:]
        if np.all(np.isfinite(pads)) and np.allclose(real, 0, atol=1e-6) and np.allclose(
                pads.sum(axis=-1), 1, rtol=1e-3):
            return (f"In sentence {b} ({n} real tokens, then pads) your real queries give the real "
                    f"keys weight 0 and the pads all of it: attention_mask 1 was read as "
                    f"'blocked'.")
    return None


def _pad_rows(args, got, expected):
    """[(sentence, real tokens, learner's A of that sentence, the weights its real queries
    give its pad keys)] where the real queries' rows are right over the real keys of
    sentence 0, for the mask detectors."""
    A = _learner_weights(args, got)
    if A is None or not same(A[0], expected[1][0]):
        return []
    return [(b, n, A[b], A[b][:, :n, n:]) for b, n in _padded(args)]


def _queries_detect(args, got, expected):
    for b, n, A, pads in _pad_rows(args, got, expected):
        if _blocked(A[:, n:]) and np.all(np.isfinite(pads)) and pads.max() > 1e-6:
            return (f"In sentence {b} ({n} real tokens, then pads) the rows of the pad queries "
                    f"{n} to {A.shape[-1] - 1} are all 0 or NaN, and the real queries give the pad "
                    f"keys weight up to {pads.max():.3g}: your mask hides rows (queries) instead "
                    f"of columns (keys).")
    return None


def _pad_keys_detect(args, got, expected):
    for b, n, A, pads in _pad_rows(args, got, expected):
        if np.all(np.isfinite(A)) and pads.max() > 1e-6:
            return (f"In sentence {b} ({n} real tokens, then pads) the real queries give the pad "
                    f"keys weight up to {pads.max():.3g}. Either no mask was applied, or a mask "
                    f"along the queries, of shape (B, 1, T, 1), was ADDED to the scores: it "
                    f"shifts whole rows, which softmax ignores.")
    return None


def _pad_rows_detect(args, got, expected):
    for b, n, A, _ in _pad_rows(args, got, expected):
        if same(A[:, :n], expected[1][b, :, :n]) and _blocked(A[:, n:]):
            return (f"In sentence {b} ({n} real tokens, then pads) the real queries' rows are "
                    f"right, but the rows of the pad queries {n} to {A.shape[-1] - 1} are all 0 "
                    f"or NaN; attncore.bert and Hugging Face return them as distributions over "
                    f"the real keys.")
    return None


def _mask_without_key_axis(arguments, error_type, error_message):
    """A (B, T) attention_mask broadcast against (B, H, T, T) scores as it is: an error."""
    mask = arguments.get("attention_mask")
    if error_type != "ValueError" or mask is None or np.ndim(mask) != 2:
        return None
    shape = "(" + ", ".join(map(str, np.shape(mask))) + ")"
    if "broadcast" not in error_message or shape.replace(" ", "") not in error_message.replace(
            " ", ""):
        return None
    b, t = np.shape(mask)
    return (f"attention_mask has shape (B, T) = {(b, t)}, one flag per token; the scores have "
            f"shape (B, H, T, T) = ({b}, H, {t}, {t}). NumPy lines up the LAST axes, so the "
            f"mask's batch axis meets the queries' axis and the broadcast fails (or, when "
            f"B = T, mixes sentences up).")


LAYER_MISCONCEPTIONS = [
    Misconception(
        NO_SOFTMAX, NO_SOFTMAX_FIX + " Mask the scores (-inf at the pads) and take the softmax "
        "over the keys: softmax(scores, axis=-1, mask=keep).",
        variants=(_weighted_by(lambda raw, keep, d: raw / np.sqrt(d)),
                  _weighted_by(lambda raw, keep, d: np.where(keep, raw / np.sqrt(d), 0))),
        detail="Your weights are the scaled scores themselves (pads set to 0 or kept): no "
               "softmax was applied to them."),
    Misconception(
        SCALE_AFTER_SOFTMAX, SCALE_AFTER_SOFTMAX_FIX,
        variants=(_weighted_by(lambda raw, keep, d: attncore.softmax(raw, mask=keep) / np.sqrt(d)),
                  _weighted_by(lambda raw, keep, d: attncore.softmax(raw / np.sqrt(d), mask=keep)
                               / np.sqrt(d))),
        detail="Your weights are the softmax of the scores divided by sqrt(d) afterwards: "
               "their rows sum to 1/sqrt(d), not 1."),
    Misconception(
        KEYS_NOT_TRANSPOSED, KEYS_NOT_TRANSPOSED_FIX,
        variants=(_weighted_by(lambda raw, keep, d: attncore.softmax(raw / np.sqrt(d), mask=keep),
                               keys_as_given=True),),
        detail="Your scores are q @ k, without k's transpose: where T = d the product runs, "
               "and pairs each query with the columns of k instead of its rows.",
        on_error=_keys_not_transposed_error),
    Misconception(
        "padding mask without its key axis",
        "give the mask an axis for the heads and one for the queries, so that its token axis "
        "meets the KEYS: keep = attention_mask[:, None, None, :] == 1, of shape (B, 1, 1, T), "
        "which broadcasts against the (B, H, T, T) scores.",
        on_error=_mask_without_key_axis),
    Misconception(RESHAPE, RESHAPE_FIX,
                  variants=(_unsplit(True, True), _unsplit(True, False), _unsplit(False, True)),
                  detail=["Your result matches q, k and v split with reshape(B, H, T, d) and the "
                          "heads merged with reshape(B, T, D), both without a transpose.",
                          "Your result matches q, k and v split with reshape(B, H, T, d), "
                          "without a transpose.",
                          "Your weights are right, but the heads' outputs were merged with "
                          "reshape(B, T, D) without first moving the heads back behind the "
                          "tokens (transpose(0, 2, 1, 3))."]),
    Misconception(
        "weight matrices transposed (x @ W.T)",
        "the matrices of AttentionWeights are stored (in, out) and multiply on the right: "
        "hidden @ W_q + b_q. PyTorch's nn.Linear stores (out, in) and computes x @ W.T; "
        "attncore.bert has already transposed them for you.",
        variants=(_with(W_q=lambda w: w.W_q.T, W_k=lambda w: w.W_k.T, W_v=lambda w: w.W_v.T,
                        W_o=lambda w: w.W_o.T),),
        detail="Your result matches hidden @ W.T for all four matrices."),
    Misconception(
        "output projection forgotten",
        "after merging the heads back to (B, T, D), apply the output projection: "
        "merged @ W_o + b_o. It is what mixes the heads with each other.",
        variants=(_with(W_o=_identity, b_o=_zero("b_o")), _with(W_o=_identity)),
        detail=["Your weights are right, and your output is the merged heads themselves, "
                "without W_o and b_o.",
                "Your weights are right, and your output is the merged heads plus b_o, "
                "without W_o."]),
    Misconception(
        "a projection bias left out",
        "every projection has its bias: q = hidden @ W_q + b_q, and the same for k, v and the "
        "output (merged @ W_o + b_o). (Leaving out b_k alone changes nothing: it adds the same "
        "number q . b_k to every score of a row.)",
        variants=(_with(b_q=_zero("b_q")), _with(b_v=_zero("b_v")), _with(b_o=_zero("b_o")),
                  _with(b_q=_zero("b_q"), b_k=_zero("b_k"), b_v=_zero("b_v")),
                  _with(b_q=_zero("b_q"), b_k=_zero("b_k"), b_v=_zero("b_v"), b_o=_zero("b_o"))),
        detail=[f"Your result matches the layer without {name}." for name in
                ("b_q", "b_v", "b_o", "b_q, b_k and b_v", "any of the four biases")]),
    Misconception(
        "scale by the hidden size instead of the head size",
        "divide each head's scores by sqrt(d), where d = D // n_heads is the size of one head "
        "(q.shape[-1] after the split), not by sqrt(D) of the whole hidden state.",
        detect=_hidden_scale_detect),
    Misconception(SCALE, "divide each head's scores q k^T by sqrt(d), d = D // n_heads the size "
                         "of one head.", detect=_scale_detect),
    Misconception(WRONG_AXIS, WRONG_AXIS_FIX, detect=_axis_detect),
    Misconception(
        "HF mask polarity read as True = blocked",
        "Hugging Face's attention_mask is 1 for a real token: 1 = attend, 0 = padding. It "
        "already has the course's polarity (True = may attend): keep the keys where it is 1, "
        "e.g. scores where attention_mask[:, None, None, :] == 1, -inf elsewhere. The inversion "
        "belongs to PyTorch's key_padding_mask (True = ignore), not here.",
        detect=_polarity_detect),
    Misconception(
        "the mask applied to queries instead of keys",
        "a pad is a KEY nobody may read: mask the columns, with attention_mask reshaped to "
        "(B, 1, 1, T_k) so it broadcasts over heads and queries. Shape (B, 1, T_q, 1) masks "
        "the rows of the pad queries instead.",
        detect=_queries_detect),
    Misconception(
        MASK_WITH_ZERO,
        "0 is an ordinary score, not 'ignore': multiplying the scores by attention_mask turns "
        "a pad's score into 0, which still gets weight exp(0). Set the pad keys' scores to "
        "-inf instead (np.where(mask, scores, -np.inf)), so that exp gives exactly 0.",
        variants=(_masked_by_multiplying(after_softmax=False),),
        detail="Your result matches the scores multiplied by attention_mask before the softmax."),
    Misconception(
        MASK_AFTER,
        "mask the SCORES, before the softmax (np.where(mask, scores, -np.inf)); zeroing the "
        "weights afterwards leaves rows that no longer sum to 1.",
        variants=(_masked_by_multiplying(after_softmax=True),),
        detail="Your result matches the softmax over all keys, pads included, with the pad "
               "columns then set to 0: the rows of padded sentences sum to less than 1."),
    Misconception(
        "pad keys not masked",
        "turn attention_mask (B, T) into a key mask of shape (B, 1, 1, T_k) and keep the scores "
        "only where it is 1 (np.where(mask, scores, -np.inf), or softmax(scores, mask=mask)) "
        "before the softmax.",
        detect=_pad_keys_detect),
    Misconception(
        "pad query rows masked as well",
        "mask only the keys. The pad queries keep a row over the real keys: nothing downstream "
        "reads it, and returning it keeps the weights of the shape and content of "
        "output_attentions (a NaN row would even leak: the next layer multiplies the pad "
        "values by weight 0, and 0 * NaN is NaN).",
        detect=_pad_rows_detect),
]


SPECS = [
    FunctionSpec(
        name="split_heads",
        plain=(stand_ins.split_heads, stand_ins.split_heads_by_split),
        axes={"x": ("B", "T", "D"), "return": ("B", "H", "T", "d")},
        stand_in=stand_ins.split_heads,
        reference=bert.split_heads,
        suites=SPLIT_CASES,
        misconceptions=SPLIT_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="layer_attention",
        plain=(stand_ins.layer_attention,),
        axes={"hidden": ("B", "T", "D"), "attention_mask": ("B", "T"),
              "return": (("B", "T", "D"), ("B", "H", "T_q", "T_k"))},
        reference=bert.layer_attention,
        suites=LAYER_CASES,
        misconceptions=LAYER_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
]
