"""03-masking: causal_mask, key_padding_mask, sliding_window_mask, masked_softmax.

References are attncore's own: masks.causal(t_q, t_k, align="bottom_right"),
masks.key_padding, masks.sliding_window and softmax(scores, mask=mask).

The three mask builders return booleans, so a wrong mask is recognised by
comparing it exactly with the masks a learner with that mistake builds (the variants;
one returns None where it would say nothing, an all-True or all-False mask).
masked_softmax mistakes that differ between learners in how the damage looks
(NaN, zeros, a uniform row) are recognised by the pattern of the damage: which
rows are wrong, and what those rows' scores make of exp.
"""
import numpy as np

import attncore
from attncore import masks

from ..probe import SHAPE_OR_DTYPE, Case, FunctionSpec, Misconception, same, tolerances
from .common import (DRAWN, GLOBAL_MAX, GLOBAL_MAX_FIX, UNSTABLE, UNSTABLE_FIX, arrays, integers,
                     two_d_only)

ASSIGNMENT = "03-masking"

# What the learner writes, so the attncore versions trip when called (numpy only).
FORBIDDEN = ("softmax", "log_softmax", "logsumexp", "softmax_one", "attention_weights",
             "attention", "grouped_query_attention", "masks.causal", "masks.key_padding",
             "masks.sliding_window", "masks.sink_window", "masks.to_additive")

MASK_AFTER = "mask applied after softmax"
MASK_WITH_ZERO = "masking with 0 or multiplying by the mask"
INVERTED = "inverted mask polarity"
OFF_BY_ONE = "causal mask off by one"
TOP_LEFT = "top-left instead of bottom-right causal alignment"
QUERY_PADDING = "padding mask on queries instead of keys"
FULLY_MASKED = "fully masked row giving NaN or a uniform row"
SENTINEL = "finite sentinel too weak for the scores"
WRONG_SIGN = "bottom-right offset with the wrong sign"
NEGATIVE_SLICE = "negative slice index wraps around"
PADDING_OFF_BY_ONE = "padding boundary off by one"
WINDOW_NOT_CAUSAL = "window not causal (future keys allowed)"
WINDOW_WIDTH = "window one key too wide or too narrow"
WINDOW_FORWARD = "window looks forward (transposed: keys after the query)"
UNBROADCAST_INDEX = "mask used as an index without broadcasting it"
TRIU = "upper instead of lower triangle (triu instead of tril)"
PADDING_SIDE = "padding on the wrong side"
WRONG_AXIS = "masked softmax over the wrong axis"

INVERTED_FIX = ("in this course True means 'this query MAY attend to this key' (the convention "
                "of PyTorch's scaled_dot_product_attention); True = blocked is the opposite "
                "convention of nn.MultiheadAttention. Swap the condition (or drop the ~).")


def _offset(c):
    """' + 2', ' - 1' or '' for writing j <= i + c."""
    return f" + {c}" if c > 0 else f" - {-c}" if c < 0 else ""


def _informative(mask):
    """Not all True and not all False: on tiny inputs many mistakes give such masks."""
    return bool(mask.any() and not mask.all())


def shape_or_dtype(layout):
    """SHAPE_OR_DTYPE for a mask: say what the dtype or the shape should be."""

    def detect(args, got, expected):
        got = np.asarray(got)
        if got.shape != expected.shape:
            detail = (f"Your mask has shape {got.shape}; the expected shape is "
                      f"{expected.shape}, that is {layout}.")
            if got.ndim == expected.ndim + 1 and got.shape[1:] == expected.shape:
                detail += " There is an extra leading axis."
            elif got.shape == expected.shape[::-1] and got.ndim == 2:
                detail += " Rows are queries and columns are keys, not the other way round."
            elif expected.ndim == 3 and got.shape == (expected.shape[0], expected.shape[2]):
                detail += (" The singleton query axis is missing: without it the mask does "
                           "not broadcast against scores of shape (B, T_q, T_k).")
            return detail
        if got.dtype != bool:
            pattern = "right" if np.issubdtype(got.dtype, np.number) and np.array_equal(
                got != 0, expected) else "also wrong"
            return (f"Your mask has dtype {got.dtype}, not bool (its pattern, read as "
                    f"nonzero = True, is {pattern}). A mask is a boolean array, True = may "
                    f"attend: an integer array used as an index picks positions 0 and 1 "
                    f"instead of masking, and a float 0/1 array is easily taken for an "
                    f"additive 0/-inf mask.")
        return None

    return detect


def _shape_fix(layout):
    return (f"return a boolean array of shape {layout}: comparisons such as j <= i give "
            f"booleans directly (np.tri and np.ones give floats unless you pass dtype=bool "
            f"or finish with .astype(bool)).")


# ---------------------------------------------------------------- causal_mask

def causal_reference(t_q, t_k):
    return masks.causal(t_q, t_k, align="bottom_right")


def _tri(t_q, t_k, c):
    return np.tri(t_q, t_k, k=c, dtype=bool)


def _off_by_one_detail(args, i):
    off = args["t_k"] - args["t_q"]
    return [f"Your mask lets query i see keys j <= i{_offset(off - 1)}, that is "
            f"j < i{_offset(off)}: one key short. The diagonal key j = i{_offset(off)} is the "
            f"query's own position (the newest key it may read), so it must be allowed: "
            f"j <= i + t_k - t_q.",
            f"Your mask lets query i see keys j <= i{_offset(off + 1)}: one key too many, the "
            f"next token in the future. The condition is j <= i + t_k - t_q = "
            f"i{_offset(off)}."][i]


def _informative_tri(c):
    """The variant np.tri(t_q, t_k, k=c), None when it is all True or all False."""
    return lambda t_q, t_k: _tri(t_q, t_k, c) if _informative(_tri(t_q, t_k, c)) else None


def _inverted_top_left(t_q, t_k):
    """True on the keys after the query's own position, as if t_q == t_k."""
    mask = _tri(t_q, t_k, 0)
    return ~mask if _informative(mask) else None


TOP_LEFT_SHIFTS = (0, -1, 1)


def _top_left_detail(args, i):
    t_q, t_k, c = args["t_q"], args["t_k"], TOP_LEFT_SHIFTS[i]
    off = t_k - t_q
    if off > 0:
        where = (f"the queries are the LAST {t_q} of the {t_k} positions, so query i sees keys "
                 f"j <= i + t_k - t_q = i{_offset(off)} and the last query sees every key.")
    else:
        where = (f"the last query lines up with the last key, so query i sees keys "
                 f"j <= i + t_k - t_q = i{_offset(off)}: the first t_q - t_k = {-off} queries "
                 f"see no key at all (fully masked rows) and the last query sees every key.")
    return (f"Your mask is aligned top-left: query i sees keys j <= i{_offset(c)}. With "
            f"t_q = {t_q} queries and t_k = {t_k} keys, {where}")


def _wrong_sign_detail(args, i):
    off = args["t_k"] - args["t_q"]
    return (f"Your mask lets query i see keys j <= i{_offset(-off)}, an offset of t_q - t_k = "
            f"{-off}; the bottom-right offset is t_k - t_q = {off}, so query i sees keys "
            f"j <= i{_offset(off)}.")


def _triu(c):
    """np.triu of ones with diagonal c (a function of t_q, t_k), None when uninformative."""
    def variant(t_q, t_k):
        mask = np.triu(np.ones((t_q, t_k), dtype=bool), k=c(t_q, t_k))
        return mask if _informative(mask) else None
    return variant


def _causal_negative_slice(t_q, t_k):
    """The loop `mask[i, :i + t_k - t_q + 1] = True`: a negative stop counts from the end."""
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        mask[i, :i + t_k - t_q + 1] = True
    return mask


NEGATIVE_STOP = ("Some rows of your mask are True where they should be all False: a slice "
                 "such as mask[i, :stop] with a negative stop (i + t_k - t_q + 1 < 0 when "
                 "t_q > t_k) does not mean 'no key', it counts from the END of the row.")


CAUSAL_CASES = {
    "basic": [
        Case("3 queries, 3 keys: square", lambda: {"t_q": 3, "t_k": 3}),
        Case("2 queries, 4 keys: fewer queries than keys", lambda: {"t_q": 2, "t_k": 4}),
    ],
    "hidden": [
        # (4, 7) before (1, 5): on (1, 5) several mistakes give the same all-False row
        Case("4 queries, 7 keys", lambda: {"t_q": 4, "t_k": 7}),
        Case("1 query, 5 keys: one decoding step with a KV cache", lambda: {"t_q": 1, "t_k": 5}),
        Case("5 queries, 3 keys: more queries than keys, so the first 2 queries see nothing",
             lambda: {"t_q": 5, "t_k": 3}),
        Case("1 query, 1 key", lambda: {"t_q": 1, "t_k": 1}),
        Case(f"1 to 9 queries and keys: {DRAWN}",
             lambda: dict(zip(("t_q", "t_k"), integers(13, 1, 9, 2)))),
    ],
}

CAUSAL_MISCONCEPTIONS = [
    Misconception(SHAPE_OR_DTYPE, _shape_fix("(t_q, t_k)"),
                  detect=shape_or_dtype("(t_q, t_k): one row per query, one column per key")),
    Misconception(TRIU, "np.triu keeps the entries on and ABOVE a diagonal: the future keys. "
                        "The keys a query may see are on and below it: "
                        "np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q), or the "
                        "comparison j <= i + t_k - t_q.",
                  variants=(_triu(lambda t_q, t_k: t_k - t_q), _triu(lambda t_q, t_k: 0)),
                  detail="Your mask lets query i see keys j >= i (on and after its own "
                         "position): the upper triangle, where the lower one is meant."),
    Misconception(INVERTED, INVERTED_FIX,
                  variants=(lambda t_q, t_k: ~causal_reference(t_q, t_k),
                            _inverted_top_left),
                  detail="True in your mask marks the keys a query must NOT see (the future "
                         "keys), and False the keys it may see."),
    Misconception(OFF_BY_ONE, "query i may attend to key j exactly when j <= i + (t_k - t_q): "
                              "use <= (np.tri(..., k=t_k - t_q)), not < and not an extra + 1.",
                  variants=(lambda t_q, t_k: _tri(t_q, t_k, t_k - t_q - 1),
                            lambda t_q, t_k: _tri(t_q, t_k, t_k - t_q + 1)),
                  detail=_off_by_one_detail),
    Misconception(TOP_LEFT, "shift the diagonal by t_k - t_q: query i may attend to key j when "
                            "j <= i + t_k - t_q (np.tri(t_q, t_k, k=t_k - t_q, dtype=bool)). "
                            "The last query lines up with the last key, as when decoding with "
                            "a KV cache; this holds when t_k < t_q too (the offset is "
                            "negative), so do not clip it at 0.",
                  variants=tuple(_informative_tri(c) if c else
                                 (lambda t_q, t_k: _tri(t_q, t_k, 0)) for c in TOP_LEFT_SHIFTS),
                  detail=_top_left_detail),
    Misconception(WRONG_SIGN, "the offset is t_k - t_q (keys minus queries): it is positive "
                              "when there are more keys than queries, so the last query sees "
                              "every key.",
                  variants=(lambda t_q, t_k: _tri(t_q, t_k, t_q - t_k),),
                  detail=_wrong_sign_detail),
    Misconception(NEGATIVE_SLICE, "a row with stop <= 0 must stay all False: clip the stop "
                                  "with max(stop, 0) in the loop, or build the mask from a "
                                  "comparison of index grids, j <= i + t_k - t_q, which needs "
                                  "no special case.",
                  variants=(_causal_negative_slice,), detail=NEGATIVE_STOP),
]


# ---------------------------------------------------------------- key_padding_mask

def _lengths(*values, dtype=np.int64):
    return np.array(values, dtype=dtype)


def _query_padding(lengths, t_k):
    real = np.arange(t_k)[None, :] < np.asarray(lengths)[:, None]  # (B, t_k): real positions
    detail = ("Your mask marks which QUERIES (rows) are real. Padding belongs to the keys "
              "(columns): every query, real or not, must be blocked from the padded keys, so "
              "the mask is (B, 1, t_k) with the singleton axis on the queries.")
    batch = len(real)
    return [(real[:, :, None], detail),
            (np.broadcast_to(real[:, :, None], (batch, t_k, t_k)), detail)]


def query_padding_detect(args, got, expected):
    """QUERY_PADDING: the learner's mask (of any dtype) is one of the query-padding masks."""
    got = np.asarray(got)
    if not np.issubdtype(got.dtype, np.number) and got.dtype != bool:
        return None
    for wrong, detail in _query_padding(**args):
        if got.shape == wrong.shape and np.array_equal(got != 0, wrong):
            return detail + (f" Your result has shape {got.shape}." if got.shape != expected.shape
                             else "")
    return None


def _left_padded(lengths, t_k):
    """Real keys at the END of each row: padding put on the left."""
    return np.arange(t_k)[None, None, :] >= t_k - np.asarray(lengths)[:, None, None]


def _drawn_lengths(seed):
    """lengths of 2 to 5 sequences, each from 0 to t_k, and t_k from 1 to 9."""
    batch, t_k = integers(seed, 2, 5, 1)[0], integers(seed + 1, 1, 9, 1)[0]
    return {"lengths": _lengths(*integers(seed + 2, 0, t_k, batch)), "t_k": t_k}


PADDING_OFF_BY_ONE_VARIANTS = (
    lambda lengths, t_k: np.arange(t_k)[None, None, :] <= np.asarray(lengths)[:, None, None],
    lambda lengths, t_k: np.arange(t_k)[None, None, :] < np.asarray(lengths)[:, None, None] - 1,
)


PADDING_CASES = {
    "basic": [
        Case("2 sequences, lengths [3, 1], t_k = 4", lambda: {"lengths": _lengths(3, 1), "t_k": 4}),
    ],
    "hidden": [
        Case("3 sequences, lengths [2, 4, 0], t_k = 4: one full, one empty",
             lambda: {"lengths": _lengths(2, 4, 0), "t_k": 4}),
        Case("1 sequence, lengths [5] as int32, t_k = 7",
             lambda: {"lengths": _lengths(5, dtype=np.int32), "t_k": 7}),
        Case(f"2 to 5 sequences, t_k from 1 to 9: {DRAWN}", lambda: _drawn_lengths(14)),
    ],
}

PADDING_MISCONCEPTIONS = [
    Misconception(QUERY_PADDING, "compare the KEY index with the lengths: key j of sequence b "
                                 "is real when j < lengths[b]; shape (B, 1, t_k), for example "
                                 "(np.arange(t_k) < lengths[:, None])[:, None, :].",
                  detect=query_padding_detect),
    Misconception(SHAPE_OR_DTYPE, _shape_fix("(B, 1, t_k)") + " Keep the singleton query "
                                  "axis: mask[:, None, :] turns (B, t_k) into (B, 1, t_k).",
                  detect=shape_or_dtype("(B, 1, t_k): one row of keys per sequence, shared by "
                                        "every query")),
    Misconception(INVERTED, INVERTED_FIX,
                  variants=(lambda lengths, t_k: ~masks.key_padding(lengths, t_k),),
                  detail="True in your mask marks the padded keys (the nn.MultiheadAttention "
                         "key_padding_mask convention, True = ignore); here True means the key "
                         "is real and may be attended to."),
    Misconception(PADDING_SIDE, "the real tokens come first and the padding after them "
                                "(right padding): key j of sequence b is real when "
                                "j < lengths[b], not when j >= t_k - lengths[b].",
                  variants=(_left_padded,),
                  detail="Your mask allows the LAST lengths[b] keys of each row, as if the "
                         "padding came before the tokens (left padding)."),
    Misconception(PADDING_OFF_BY_ONE, "a sequence of length n has real keys 0, ..., n - 1: "
                                      "the condition is j < lengths[b] (strict).",
                  variants=PADDING_OFF_BY_ONE_VARIANTS,
                  detail=["Your mask also allows key j = lengths[b], the first padded key: "
                          "with lengths[b] real keys their indices are 0, ..., lengths[b] - 1.",
                          "Your mask hides the last real key, j = lengths[b] - 1: with "
                          "lengths[b] real keys their indices are 0, ..., lengths[b] - 1."]),
]


# ---------------------------------------------------------------- sliding_window_mask

def _on_grid(condition):
    """A variant (t, window) -> condition(i, j, window) over the query (i) and key (j) indices."""
    def variant(t, window):
        i, j = np.indices((t, t))
        return condition(i, j, window)
    return variant


WINDOW_NOT_CAUSAL_VARIANTS = (
    _on_grid(lambda i, j, window: np.abs(i - j) < window),
    _on_grid(lambda i, j, window: np.abs(i - j) <= window),
    _on_grid(lambda i, j, window: j > i - window),
)

WINDOW_OFF_BY_ONE_VARIANTS = (
    _on_grid(lambda i, j, window: (j < i) & (j >= i - window)),
    _on_grid(lambda i, j, window: (j < i) & (j > i - window)),
)

WINDOW_WIDTH_VARIANTS = (
    _on_grid(lambda i, j, window: (j <= i) & (j >= i - window)),
    _on_grid(lambda i, j, window: (j <= i) & (j > i - window + 1)),
)


WINDOW_FORWARD_VARIANTS = (  # the window (and its off-by-ones) over keys i, ..., i + window - 1
    _on_grid(lambda i, j, window: (j >= i) & (j < i + window)),
    _on_grid(lambda i, j, window: (j >= i) & (j <= i + window)),
    _on_grid(lambda i, j, window: (j > i) & (j <= i + window)),
)


def _window_width_detail(args, i):
    window = args["window"]
    return [f"Your window holds window + 1 = {window + 1} keys (i - window <= j <= i): one too "
            f"many. It should hold exactly `window` keys, the query's own included: "
            f"i - window < j <= i.",
            f"Your window holds window - 1 = {window - 1} keys: one too few. It should hold "
            f"exactly `window` keys, the query's own included: i - window < j <= i."][i]


def _window_negative_slice(t, window):
    """The loop `mask[i, i - window + 1:i + 1] = True`: a negative start counts from the end."""
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        mask[i, i - window + 1:i + 1] = True
    return mask


WINDOW_CASES = {
    "basic": [
        Case("t = 5, window = 2", lambda: {"t": 5, "window": 2}),
    ],
    "hidden": [
        Case("t = 6, window = 3", lambda: {"t": 6, "window": 3}),
        Case("t = 4, window = 1: each query sees only itself", lambda: {"t": 4, "window": 1}),
        Case("t = 3, window = 5: the window is longer than the sequence",
             lambda: {"t": 3, "window": 5}),
        Case("t = 1, window = 1", lambda: {"t": 1, "window": 1}),
        Case(f"t and window from 1 to 9: {DRAWN}",
             lambda: dict(zip(("t", "window"), integers(15, 1, 9, 2)))),
    ],
}

WINDOW_MISCONCEPTIONS = [
    Misconception(SHAPE_OR_DTYPE, _shape_fix("(t, t)"),
                  detect=shape_or_dtype("(t, t): one row per query, one column per key")),
    Misconception(WINDOW_NOT_CAUSAL, "combine both bounds: (j <= i) & (j > i - window), "
                                     "with i the query (row) and j the key (column).",
                  variants=WINDOW_NOT_CAUSAL_VARIANTS,
                  detail="Your window also lets query i see keys AFTER it (j > i): a sliding "
                         "window is causal, query i sees only keys i - window < j <= i."),
    Misconception(WINDOW_FORWARD, "row i is the query, column j the key: query i sees the "
                                  "`window` keys that END at it, i - window < j <= i, that is "
                                  "(j <= i) & (j > i - window). Yours is the transpose: rows "
                                  "and columns (or i and j, or the signs) are swapped.",
                  variants=WINDOW_FORWARD_VARIANTS,
                  detail="Your mask lets query i see keys i, i + 1, ... (the future) and "
                         "hides the keys before it: it is the transpose of the sliding window, "
                         "which looks BACK over the most recent keys."),
    Misconception(OFF_BY_ONE, "the upper bound is j <= i (the query sees itself), not j < i.",
                  variants=WINDOW_OFF_BY_ONE_VARIANTS,
                  detail="Your mask hides the diagonal: query i does not see key i, its own "
                         "position. The window is the `window` most recent keys INCLUDING the "
                         "query's own."),
    Misconception(WINDOW_WIDTH, "the lower bound is strict: j > i - window, so that exactly "
                                "`window` keys i - window + 1, ..., i are allowed.",
                  variants=WINDOW_WIDTH_VARIANTS, detail=_window_width_detail),
    Misconception(INVERTED, INVERTED_FIX,
                  variants=(lambda t, window: ~masks.sliding_window(t, window),),
                  detail="True in your mask marks the keys a query must NOT see, and False "
                         "the window."),
    Misconception(NEGATIVE_SLICE, "clip the start at 0 (max(i - window + 1, 0)), or build "
                                  "the mask from index grids, (j <= i) & (j > i - window), "
                                  "which needs no special case.",
                  variants=(_window_negative_slice,),
                  detail="The first rows of your mask are wrong: in mask[i, start:i + 1] a "
                         "negative start (i - window + 1 < 0 for the first queries) does not "
                         "mean 'from 0', it counts from the END of the row, so the slice is "
                         "empty."),
]


# ---------------------------------------------------------------- masked_softmax

def scores_and_mask(scores, mask, dtype=np.float64):
    return {"scores": np.asarray(scores, dtype=dtype), "mask": np.asarray(mask, dtype=bool)}


def _basic_negative():
    return scores_and_mask([[-1.2, -0.4, -2.5, -3.1],
                            [-2.0, -0.7, -1.5, -4.2],
                            [-0.9, -3.3, -1.8, -2.6]],
                           [[True, True, False, True],
                            [True, False, True, False],
                            [False, False, True, True]])


def _batch_with_padding(seed, lengths, t_q, t_k, dtype=np.float64, shift=-2.0):
    (s,) = arrays(seed, (len(lengths), t_q, t_k))
    return scores_and_mask(s + shift, masks.key_padding(np.array(lengths), t_k), dtype)


def _causal_scores(seed, t_q, t_k, dtype=np.float64, scale=2.0, shift=0.0):
    (s,) = arrays(seed, (t_q, t_k), scale=scale)
    return scores_and_mask(s + shift, masks.causal(t_q, t_k, align="bottom_right"), dtype)


def _heads_shared_mask(seed):
    (s,) = arrays(seed, (2, 2, 3, 4), scale=1.5)
    return scores_and_mask(s, masks.causal(3, 4, align="bottom_right"))


def _band(seed, t_q, t_k, width, dtype):
    """A bottom-right causal band: each query sees its `width` most recent keys."""
    (s,) = arrays(seed, (t_q, t_k))
    i, j = np.indices((t_q, t_k))
    off = t_k - t_q
    return scores_and_mask(s, (j <= i + off) & (j > i + off - width), dtype)


def _decoding_step():
    return scores_and_mask([[0.3, -1.1, 2.2, 0.8, -0.5]], [[True, False, True, True, False]])


def _near_minus_1e4():
    """Scores near -1e4 (a large negative bias): a -1e4 sentinel is not below them."""
    return scores_and_mask([[-10000.0, -10001.5, -9999.2, -10002.0],
                            [-10003.1, -9998.4, -10000.6, -9999.9]],
                           [[True, True, False, False],
                            [False, True, True, False]])


def _rows_at_offsets():
    """Rows at offsets -50, 0, +1e4, -1e4: a global maximum underflows the low rows."""
    (base,) = arrays(11, (4, 5))
    offsets = np.array([[-50.0], [0.0], [1e4], [-1e4]])
    mask = np.array([[True, True, False, True, True],
                     [False, True, True, True, False],
                     [True, False, True, False, True],
                     [True, True, True, False, False]])
    return scores_and_mask(base + offsets, mask)


def _dominant_blocked_key():
    """A blocked key 1.2e4 above the allowed ones: only -inf (or removing it) blocks it."""
    (s,) = arrays(12, (3, 4))
    mask = np.array([[True, True, False, True],
                     [True, False, True, True],
                     [True, True, True, True]])
    s[0, 2], s[1, 1] = 12000.0, 12500.0
    return scores_and_mask(s, mask)


def _beyond_1e9():
    """Allowed scores near -3e9 (below a -1e9 sentinel) and a blocked score of 3e9 (which
    survives an added -1e9): only -inf, or a sentinel near the dtype's minimum, blocks them."""
    (s,) = arrays(14, (3, 4))
    mask = np.array([[True, False, True, False],
                     [True, True, False, True],
                     [False, True, True, True]])
    s[0] -= 3e9
    s[1, 2] = 3e9
    return scores_and_mask(s, mask)


def _float32_near_1000():
    """float32 scores around +1000, every row at the same level: exp overflows, a max does not."""
    (s,) = arrays(13, (3, 5), scale=3.0)
    return scores_and_mask(s + 1000.0, masks.causal(3, 5, align="bottom_right"), np.float32)


SOFTMAX_CASES = {
    "basic": [
        Case("3 queries, 4 keys, all scores negative, some keys blocked in every row",
             _basic_negative),
        Case("batch of 2: scores (2, 2, 4) with a key-padding mask (2, 1, 4), lengths [4, 2]",
             lambda: _batch_with_padding(1, [4, 2], 2, 4)),
    ],
    "hidden": [
        Case("bottom-right causal mask (3, 5), mixed-sign scores", lambda: _causal_scores(2, 3, 5)),
        Case("1 query, 5 keys: a decoding step, 2 keys blocked", _decoding_step),
        Case("scores (B, H, T_q, T_k) = (2, 2, 3, 4) with one (3, 4) causal mask for all",
             lambda: _heads_shared_mask(3)),
        Case("float32, 4 queries, 6 keys, each query sees its 3 most recent keys",
             lambda: _band(4, 4, 6, 3, np.float32)),
    ],
    "empty": [
        Case("4 queries, 3 keys, bottom-right causal: query 0 may attend to no key",
             lambda: _causal_scores(5, 4, 3, scale=1.0, shift=-1.0)),
        Case("float32 batch (2, 3, 4), key padding lengths [0, 3]: sequence 0 has no key at all",
             lambda: _batch_with_padding(6, [0, 3], 3, 4, np.float32, shift=0.0)),
    ],
    "extreme": [
        Case("float32 scores around +1000, bottom-right causal (3, 5)", _float32_near_1000),
        Case("scores near -1e4, as with a large negative bias (2, 4)", _near_minus_1e4),
        Case("rows at offsets -50, 0, +1e4, -1e4 (4, 5)", _rows_at_offsets),
        Case("blocked keys scoring 12000 and 12500, far above the allowed keys (3, 4)",
             _dominant_blocked_key),
        Case("scores beyond 1e9: allowed keys near -3e9, a blocked key scoring 3e9 (3, 4)",
             _beyond_1e9),
    ],
}


def masked_softmax_reference(scores, mask):
    return attncore.softmax(scores, mask=mask)


def _parts(args, got, expected):
    """(scores, broadcast mask, got as a float array) or None when shapes do not fit."""
    s = np.asarray(args["scores"])
    m = np.broadcast_to(np.asarray(args["mask"]), s.shape)
    got = np.asarray(got)
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.number):
        return None
    return s, m, got.astype(np.float64)


def _row(index):
    """'row 2' or 'row (1, 0, 2)' (the leading indices of a row of the scores)."""
    return f"row {index[0]}" if len(index) == 1 else f"row {tuple(int(i) for i in index)}"


def _wrong_rows(got, expected):
    """Boolean over the rows (leading axes): where got and expected differ."""
    rtol, atol = tolerances(expected)
    close = np.isclose(got, expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return ~close.all(axis=-1)


def _dead(got, expected):
    """Rows that came out NaN, inf or all zero."""
    _, atol = tolerances(expected)
    return ~np.isfinite(got).all(axis=-1) | (np.abs(np.nan_to_num(got)).max(axis=-1) <= atol)


def _allowed_max(s, m):
    return np.where(m, s, -np.inf).max(axis=-1)


def _blocked_max(s, m):
    return np.where(m, -np.inf, s).max(axis=-1)


def _underflow_gap(dtype):
    """A difference of scores beyond which exp(-gap) is 0 (or denormal) in dtype."""
    return float(-np.log(np.finfo(dtype).tiny))


def mask_with_zero_detect(args, got, expected):
    """The learner's rows with an allowed key equal softmax(np.where(mask, scores, 0)) there
    (rows with no allowed key are left out: learners treat them in many ways)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    rows = m.any(axis=-1)
    wrong = attncore.softmax(np.where(m, s, 0).astype(s.dtype))
    if same(got[rows], wrong[rows]) and not same(expected[rows], wrong[rows]):
        index = tuple(np.argwhere(rows & _wrong_rows(got, expected))[0])
        return (f"Your blocked keys get weight: in {_row(index)} they receive "
                f"{np.where(m, 0, got)[index].sum():.1%} of the row. A blocked score of 0 "
                f"still counts, and it is not below the allowed scores here "
                f"(largest {_allowed_max(s, m)[index]:.6g}).")
    return None


def inverted_detect(args, got, expected):
    """INVERTED: in the rows that have both allowed and blocked keys, the learner's weights
    equal the softmax over the BLOCKED keys (rows with no allowed or no blocked key say
    nothing: learners treat them in many ways)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    rows = (~m).any(axis=-1) & m.any(axis=-1)  # rows that have keys under both readings
    if not rows.any():
        return None
    inverted = attncore.softmax(s, mask=~m)
    if same(got[rows], inverted[rows]) and not same(expected[rows], inverted[rows]):
        return ("Your weights sit on the blocked keys, and the allowed keys get 0: your code "
                "treats True as 'blocked'.")
    return None


def mask_after_detect(args, got, expected):
    """MASK_AFTER, two patterns of damage.

    Renormalised: every wrong row is dead (NaN, inf or all zero) and is a row where a
    blocked key scores so far above the allowed ones that exp(allowed - blocked)
    underflows: the softmax, or its maximum, still saw the blocked key. For example the
    row [1, 2, 1000] with the last key blocked gives [0, 0] / 0.
    Not renormalised: the weights equal softmax(scores) * mask, rows summing to less than 1.
    """
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    gap = _blocked_max(s, m) - _allowed_max(s, m)
    dominated = m.any(axis=-1) & (gap > _underflow_gap(s.dtype))
    if wrong.any() and np.all(_dead(got, expected)[wrong] & dominated[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"In {_row(index)} a blocked key scores {_blocked_max(s, m)[index]:.6g}, far "
                f"above the allowed keys (largest {_allowed_max(s, m)[index]:.4g}), and your "
                f"weights for the allowed keys came out {np.array2string(got[index], precision=3)}."
                f" exp(allowed score - {_blocked_max(s, m)[index]:.6g}) underflows to 0: the "
                f"softmax, or the maximum you subtract, still included the blocked key. In "
                f"exact arithmetic 'softmax, zero, renormalise' equals masking first; in "
                f"floating point it does not.")
    no_renorm = attncore.softmax(s) * m
    if same(got, no_renorm) and not same(expected, no_renorm):
        sums = got.sum(axis=-1)
        return (f"Your rows sum to {np.array2string(sums.ravel()[:4], precision=3)}"
                f"{' ...' if sums.size > 4 else ''}, not 1: the softmax was taken over all "
                f"keys and the blocked weights were set to 0 afterwards, so their share of "
                f"each row is lost.")
    return None


def fully_masked_detect(args, got, expected):
    """FULLY_MASKED: every row with an allowed key is right, and a row with none is not
    all zero (NaN from -inf - (-inf) or 0/0, uniform from a finite sentinel, or other)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    empty = ~m.any(axis=-1)
    if not empty.any() or not same(got[~empty], expected[~empty]):
        return None
    index = tuple(np.argwhere(empty & _wrong_rows(got, expected))[0])
    row = got[index]
    if np.isnan(row).any():
        what = ("NaN: with every score -inf, the row maximum is -inf and -inf - (-inf) = NaN "
                "(or the sum is 0 and 0/0 = NaN)")
    elif np.allclose(row, 1.0 / row.size):
        what = (f"uniform (1/{row.size} per key): with a finite sentinel every blocked score is "
                f"the same number, and the softmax of a constant row is uniform, so the query "
                f"reads every blocked key")
    else:
        what = f"{np.array2string(row, precision=3)}, not zeros"
    return f"In {_row(index)} the query may attend to no key at all; your row is {what}."


_SENTINELS = (-1e2, -1e3, -1e4, -3e4, -65504.0, -1e5, -1e6, -1e9)


def _with_sentinel(s, m, c, how, zeroed=False):
    """Weights with sentinel c replacing the blocked scores or added to them; zeroed: the
    blocked weights set to 0 afterwards and the rows renormalised (empty rows 0)."""
    c = np.asarray(c, dtype=s.dtype)
    filled = np.where(m, s, c) if how == "replace" else s + np.where(m, 0, c).astype(s.dtype)
    weights = attncore.softmax(filled.astype(s.dtype))
    if not zeroed:
        return weights
    weights = weights * m
    total = weights.sum(axis=-1, keepdims=True)
    return weights / np.where(total > 0, total, 1)


def sentinel_detect(args, got, expected):
    """SENTINEL: the learner's weights are those of a common finite sentinel (-1e4, -1e9,
    ...) replacing the blocked scores or added to them; failing that, any sentinel: on
    scores of 1e3 or more, every wrong row puts weight on blocked keys."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    mask_after = _with_sentinel(s, m, 0.0, "add", zeroed=True)  # that is MASK_AFTER's
    for how, zeroed in [(how, zeroed) for zeroed in (False, True) for how in ("replace", "add")]:
        if zeroed and same(got, mask_after):
            continue
        fits = []
        for c in _SENTINELS:
            with np.errstate(all="ignore"):
                wrong = _with_sentinel(s, m, c, how, zeroed)
            if same(got, wrong) and not same(expected, wrong):
                fits.append(c)
        if fits:
            c = min(fits)  # on this input, any of them gives these weights
            value = f"{c:g}" if len(fits) == 1 else f"a finite number such as {c:g}"
            verb = (f"replacing the blocked scores by {value}" if how == "replace" else
                    f"adding {value} to the blocked scores")
            if zeroed:
                index = tuple(np.argwhere(_wrong_rows(got, expected))[0])
                return (f"Your weights match {verb} instead of -inf, then setting the blocked "
                        f"weights to 0. In {_row(index)} the allowed scores reach "
                        f"{_allowed_max(s, m)[index]:.6g}, far below the blocked ones after "
                        f"the sentinel, so exp of every allowed score minus the row maximum "
                        f"underflows to 0 and your row came out "
                        f"{np.array2string(got[index], precision=3)}.")
            return f"Your weights match {verb} instead of -inf. " + _leak(
                s, m, got, c if how == "replace" else None, c if how == "add" else None)
    wrong = _wrong_rows(got, expected) & m.any(axis=-1)
    leaked = np.where(m, 0, np.nan_to_num(got)).sum(axis=-1)
    if wrong.any() and np.all(leaked[wrong] > 1e-3) and np.abs(s).max() >= 1e3:
        return "Your weights put mass on blocked keys. " + _leak(s, m, got)
    return None


def _leak(s, m, got, replaced=None, added=None):
    """Where the blocked keys got the most weight, and why the sentinel did not block them."""
    leaked = np.where(m, 0, np.nan_to_num(got)).sum(axis=-1)
    index = tuple(np.argwhere(leaked == leaked.max())[0])
    top, blocked = _allowed_max(s, m)[index], _blocked_max(s, m)[index]
    if replaced is not None:
        why = (f"the largest allowed score is {top:.6g}, not far above the sentinel "
               f"{replaced:g}")
    elif added is not None:
        why = (f"a blocked key scores {blocked:.6g}, and {blocked:.6g} + ({added:g}) = "
               f"{blocked + added:.6g} is still far above the allowed scores (largest {top:.4g})")
    else:
        why = f"the allowed scores reach {top:.6g} and the blocked ones {blocked:.6g}"
    return (f"In {_row(index)} {why}: the blocked keys get {leaked[index]:.1%} of the row. A "
            f"finite sentinel blocks a key only when it ends up far below every allowed score.")


def global_max_detect(args, got, expected):
    """GLOBAL_MAX: every wrong row is dead and its largest allowed score sits more than
    the underflow gap below the largest allowed score of the whole array, so exp of the
    row minus one global maximum is 0 throughout."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    if not wrong.any():
        return None
    top = _allowed_max(s, m)
    low = m.any(axis=-1) & (top < top.max() - _underflow_gap(s.dtype))
    if np.all(_dead(got, expected)[wrong] & low[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"{_row(index).capitalize()} has allowed scores up to {top[index]:.6g}, but "
                f"the largest allowed score in the whole array is {top.max():.6g}: after "
                f"subtracting that one maximum, every exp in the row underflows to 0, and your "
                f"row came out {np.array2string(got[index], precision=3)}.")
    return None


def unstable_detect(args, got, expected):
    """UNSTABLE: every wrong row is dead and has an allowed score above log(dtype max)
    (709.8 in float64, 88.7 in float32), where exp without the maximum subtracted is inf."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    if not wrong.any():
        return None
    top = _allowed_max(s, m)
    overflow = top > np.log(np.finfo(s.dtype).max)
    if np.all(_dead(got, expected)[wrong] & overflow[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"{_row(index).capitalize()} has allowed scores up to {top[index]:.6g}; "
                f"exp of anything above {np.log(np.finfo(s.dtype).max):.1f} overflows to inf "
                f"in {s.dtype}, and inf / inf = NaN.")
    return None


def _index_without_broadcast(scores, mask):
    """The learner's `x[~mask] = -np.inf`: raises IndexError when mask only broadcasts."""
    x = scores.copy()
    x[~mask] = -np.inf
    return attncore.softmax(x)


def _along_axis(a):
    """The masked softmax along axis a of the scores (None where a is the last axis)."""
    def variant(scores, mask):
        if a >= np.ndim(scores) - 1:
            return None
        return attncore.softmax(scores, axis=a, mask=np.broadcast_to(mask, np.shape(scores)))
    return variant


SOFTMAX_MISCONCEPTIONS = [
    two_d_only(_along_axis(1)),
    Misconception(WRONG_AXIS, "normalise over the keys, the last axis: take the maximum and "
                              "the sum with axis=-1, keepdims=True, so that every row (one "
                              "query) sums to 1.",
                  variants=tuple(_along_axis(a) for a in (0, 1, 2)),
                  detail=lambda args, a: (f"Your weights are normalised along axis {a} of "
                                          f"scores of shape {np.shape(args['scores'])}: over "
                                          f"the queries (or the batch), not over the keys.")),
    Misconception(MASK_WITH_ZERO, "0 is an ordinary score, not 'ignore': when the other scores "
                                  "are negative it is the largest in the row. Set blocked scores "
                                  "to -inf instead: np.where(mask, scores, -np.inf), so that "
                                  "exp gives exactly 0.",
                  detect=mask_with_zero_detect),
    Misconception(FULLY_MASKED, "a query with no allowed key must get all-zero weights. With "
                                "-inf the row maximum is -inf: replace it by 0 "
                                "(np.where(np.isfinite(m), m, 0)) so exp gives 0, and divide "
                                "only where the row sum is positive. With a finite sentinel "
                                "such rows become uniform: use -inf, or zero the weights of "
                                "rows with no allowed key at the end.",
                  detect=fully_masked_detect),
    Misconception(SENTINEL, "block keys with -np.inf, not with a finite number: "
                            "np.where(mask, scores, -np.inf). A sentinel such as -1e4 or -1e9 "
                            "is safe only far below every allowed score, and large scores "
                            "(below the sentinel, or a blocked score that survives an added "
                            "sentinel) defeat it.",
                  detect=sentinel_detect),
    Misconception(INVERTED, INVERTED_FIX + " Keep scores where mask is True: "
                                          "np.where(mask, scores, -np.inf).",
                  detect=inverted_detect),
    Misconception(MASK_AFTER, "apply the mask to the SCORES, before exp: set blocked scores to "
                              "-inf (np.where(mask, scores, -np.inf)), subtract each row's "
                              "maximum over the remaining keys, exponentiate and normalise. Do "
                              "not zero the weights afterwards.",
                  detect=mask_after_detect),
    Misconception(GLOBAL_MAX, GLOBAL_MAX_FIX, detect=global_max_detect),
    Misconception(UNSTABLE, UNSTABLE_FIX + " Take that maximum over the allowed keys only "
                                           "(after setting the blocked ones to -inf).",
                  detect=unstable_detect),
    Misconception(UNBROADCAST_INDEX, "a mask may have size-1 axes that broadcast, such as "
                                     "(B, 1, T_k) for scores (B, T_q, T_k); boolean indexing "
                                     "needs the full shape. Use np.where(mask, scores, "
                                     "-np.inf), which broadcasts (and makes a new array).",
                  variants=(_index_without_broadcast,),
                  on_error=lambda args, error_type, error_message: (
                      "Boolean indexing with the mask needs the mask in the scores' full "
                      "shape." if "boolean index did not match" in error_message else None)),
]


SPECS = [
    FunctionSpec(
        name="causal_mask",
        reference=causal_reference,
        suites=CAUSAL_CASES,
        misconceptions=CAUSAL_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="key_padding_mask",
        reference=lambda lengths, t_k: masks.key_padding(lengths, t_k),
        suites=PADDING_CASES,
        misconceptions=PADDING_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="sliding_window_mask",
        reference=lambda t, window: masks.sliding_window(t, window),
        suites=WINDOW_CASES,
        misconceptions=WINDOW_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="masked_softmax",
        reference=masked_softmax_reference,
        suites=SOFTMAX_CASES,
        misconceptions=SOFTMAX_MISCONCEPTIONS,
        keep_dtype=True,
        forbidden=FORBIDDEN,
    ),
]
