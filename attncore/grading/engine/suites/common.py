"""Inputs and misconceptions that several assignments share."""
import re

import numpy as np

import attncore
from attncore.invariants import default_atol

from ..probe import Misconception, drawn_with, same


def generator(seed):
    """A reproducible random generator; while a hidden suite draws its cases
    (probe.drawing), it depends on that draw too."""
    return np.random.default_rng(seed if drawn_with() is None else [seed, drawn_with()])


def arrays(seed, *shapes, dtype=np.float64, scale=1.0):
    """Reproducible normal arrays with distinct entries (no accidental symmetry)."""
    rng = generator(seed)
    return [(scale * rng.standard_normal(shape)).astype(dtype) for shape in shapes]


def score_rows(seed, *shape, dtype=np.float64, scale=1.0, offset=0.0):
    """Normal scores of `shape` times scale, plus offset: one number, or one per row of a
    2-D shape."""
    (x,) = arrays(seed, shape, scale=scale)
    offset = np.asarray(offset, dtype=np.float64)
    if offset.ndim:
        offset = offset[:, None]
    return (x + offset).astype(dtype)


def qkv(seed, t_q, t_k, d_k, d_v, **kw):
    """{"Q": (t_q, d_k), "K": (t_k, d_k), "V": (t_k, d_v)}, drawn like arrays (kw: its)."""
    q, k, v = arrays(seed, (t_q, d_k), (t_k, d_k), (t_k, d_v), **kw)
    return {"Q": q, "K": k, "V": v}


def integers(seed, low, high, count):
    """count reproducible integers in [low, high], drawn like arrays."""
    return [int(v) for v in generator(seed).integers(low, high + 1, size=count)]


DRAWN = "sizes drawn when graded, so no table of fixed cases can answer them"


def written_or_drawn(seed, written, draw):
    """A hidden case's arguments: written() as the suite writes them, for a learner's own
    check (no draw active), or, while the grade that counts draws (probe.drawing),
    draw(rng) with rng = generator(seed): sizes, values and positions drawn when graded,
    of the kind the case is about, so that no table of the written inputs answers them."""
    return written() if drawn_with() is None else draw(generator(seed))


def rows_of_different_scales(seed, t_q, t_k, dtype=np.float64):
    """Scores whose rows live at wildly different offsets: -1e4, 0, +1e4, ..."""
    (base,) = arrays(seed, (t_q, t_k), dtype=dtype)
    offsets = np.resize(np.array([-1e4, 0.0, 1e4, -50.0]), t_q)[:, None]
    return (base + offsets).astype(dtype)


def queries_for(K, target):
    """Q (T_q, d_k) with Q K^T / sqrt(d_k) = target (T_q, T_k): least squares, exact when
    d_k >= T_k. K is (T_k, d_k)."""
    return np.linalg.lstsq(K, target.T * np.sqrt(K.shape[-1]), rcond=None)[0].T


def naive_softmax(x, axis=-1):
    return np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)


def min_softmax(x, axis=-1):
    e = np.exp(x - x.min(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def global_max_softmax(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


WRONG_AXIS = "softmax over the wrong axis"
MASK_AFTER = "mask applied after softmax"  # 03's masked_softmax and 07's layer both name these
MASK_WITH_ZERO = "masking with 0 or multiplying by the mask"
WRONG_AXIS_FIX = ("normalise over the keys, the last axis: every ROW (one query) must sum to 1. "
                  "Use axis=-1; axis=0 (or axis=-2 for heads of shape (H, T_q, T_k)) "
                  "normalises over the queries or the heads instead.")
UNSTABLE = "unstable softmax (overflow)"
UNSTABLE_FIX = ("subtract each row's maximum before exp: softmax(x) = softmax(x - max(x)), "
                "so the largest exponent is exp(0) = 1 and nothing overflows.")
MIN_SUBTRACTED = "minimum subtracted instead of the maximum"
MIN_SUBTRACTED_FIX = ("subtract each row's MAXIMUM, x.max(axis=-1, keepdims=True): then every "
                      "exponent is <= 0 and the largest is exp(0) = 1. After subtracting the "
                      "minimum every exponent is >= 0, and a row whose scores spread over more "
                      "than about 709 (88 in float32) overflows.")
GLOBAL_MAX = "a global instead of per-row maximum"
GLOBAL_MAX_FIX = ("take the maximum of each row (x.max(axis=-1, keepdims=True)), not of the "
                  "whole array: a row far below the global maximum underflows to 0/0.")
SCALE = "missing or wrong scale"
SCALE_FIX = "divide the scores Q K^T by sqrt(d_k), where d_k = Q.shape[-1]."
TRANSPOSED = "transposed score matrix (K Q^T)"
TRANSPOSED_FIX = ("rows are queries and columns are keys: the scores are Q @ K.T (shape "
                  "(T_q, T_k)), not K @ Q.T.")


def _dims(arguments):
    """(d_k, d_v, T_k) of the arguments (Q, K, V, ...) or (q, K, lse); d_v None without V."""
    values = [*arguments.values(), None]
    keys, third = values[1], values[2]
    d_v = third.shape[-1] if isinstance(third, np.ndarray) and third.ndim >= 2 else None
    return keys.shape[-1], d_v, keys.shape[-2]


# The scale factors learners use instead of 1/sqrt(d_k): (name, factor(d_k, d_v, T_k)).
WRONG_SCALES = (
    ("no scale at all", lambda d_k, d_v, t_k: 1.0),
    ("1/d_k: the 1/sqrt(d_k) applied twice", lambda d_k, d_v, t_k: 1 / d_k),
    ("sqrt(d_k): multiplied instead of divided", lambda d_k, d_v, t_k: np.sqrt(d_k)),
    ("1/sqrt(d_v): the size of the values, not of the keys",
     lambda d_k, d_v, t_k: d_v and 1 / np.sqrt(d_v)),
    ("1/sqrt(T_k): the number of keys, not their size", lambda d_k, d_v, t_k: 1 / np.sqrt(t_k)),
)


def describe_factor(c, arguments):
    """'0.25 (1/d_k: ...)': a scale factor and the names of the wrong scales it equals."""
    dims = _dims(arguments)
    names = [name for name, factor in WRONG_SCALES
             if factor(*dims) and np.isclose(c, factor(*dims), rtol=1e-3)]
    return f"{c:.4g}" + (f" ({' or '.join(names)})" if names else "")


def effective_scale(raw_scores, got_scores):
    """c with got = c * raw (least squares), or None when got is not proportional to raw."""
    raw, got = np.asarray(raw_scores, float).ravel(), np.asarray(got_scores, float).ravel()
    if raw.shape != got.shape or not raw.any():
        return None
    c = float(raw @ got / (raw @ raw))
    return c if np.allclose(got, c * raw, rtol=1e-4, atol=1e-6 * np.abs(got).max()) else None


def softmax_scale(raw_scores, weights):
    """c with weights = softmax(c * raw) row by row (fit on log-ratios), or None."""
    raw, w = np.asarray(raw_scores, float), np.asarray(weights, float)
    if raw.shape != w.shape or np.any(w <= 0):
        return None
    log_ratio = np.log(w) - np.log(w[..., :1])
    diff = raw - raw[..., :1]
    return effective_scale(diff, log_ratio)


def searched_scale(with_scale):
    """fit(arguments, got) -> c for scale_misconception, when no formula recovers c: the
    factor whose with_scale(c) output is closest to got, on a log grid from 1e-3 to 1e3
    refined by golden-section search, if that output matches got."""
    def fit(arguments, got):
        values = list(arguments.values())

        def loss(log_c):
            output = np.asarray(with_scale(np.exp(log_c))(*values), dtype=float)
            return float(np.sum((output - got) ** 2)) if output.shape == np.shape(got) else np.inf

        grid = np.linspace(np.log(1e-3), np.log(1e3), 61)
        losses = [loss(g) for g in grid]
        if np.all(np.isnan(losses)):  # got holds NaN: no factor reproduces it
            return None
        best = int(np.nanargmin(losses))
        low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        for _ in range(40):
            a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
            low, high = (low, b) if loss(a) < loss(b) else (a, high)
        c = float(np.exp((low + high) / 2))
        return c if same(with_scale(c)(*values), got) else None

    return fit


def scale_misconception(with_scale=None, fit=None, fix=SCALE_FIX):
    """SCALE: the learner's scores are Q K^T times a factor c other than 1/sqrt(d_k).

    fit(arguments, got) -> c recovers c from the output (scores, weights). Otherwise
    with_scale(c) is the graded function computed with scores times c: it is tried for each
    of WRONG_SCALES, then for any factor (searched_scale). The feedback reports the
    effective factor, and names it when it is one of WRONG_SCALES.
    """
    def report(arguments, c):
        d_k = _dims(arguments)[0]
        return (f"Your scores are Q K^T times {describe_factor(c, arguments)}; with "
                f"d_k = {d_k} the scale is 1/sqrt(d_k) = {1 / np.sqrt(d_k):.4g}.")

    fit = fit or searched_scale(with_scale)

    def detect(arguments, got, expected):
        c = fit(arguments, got)
        d_k = _dims(arguments)[0]
        return None if c is None or np.isclose(c, 1 / np.sqrt(d_k), rtol=1e-3) else report(
            arguments, c)

    def variant(factor):
        def run(*values):
            c = factor(*_dims(dict(enumerate(values))))
            return with_scale(c)(*values) if c else None
        return run

    return Misconception(
        SCALE, fix, variants=tuple(variant(factor) for _, factor in WRONG_SCALES) if with_scale
        else (), detect=detect, finite=True,
        detail=lambda arguments, i: report(arguments, WRONG_SCALES[i][1](*_dims(arguments))))


WHOLE = "normalised over the whole array instead of each row"
WHOLE_FIX = ("divide each row by its own sum: e.sum(axis=-1, keepdims=True), not e.sum() (which "
             "adds up every entry of the array, or of a whole matrix when you loop over the "
             "first axis of a 3-D input).")
KEEPDIMS = "row maximum or row sum without keepdims"
KEEPDIMS_FIX = ("reduce with keepdims=True: x.max(axis=-1, keepdims=True) and "
                "e.sum(axis=-1, keepdims=True) have shape (..., 1), so they line up with the "
                "rows. Without keepdims the shape is (...,), and NumPy lines it up with the last "
                "axis instead (or refuses to broadcast).")
UNNORMALISED = "exp of the scores not divided by the row sum"
UNNORMALISED_FIX = ("the softmax divides each exp by its row's sum: e = np.exp(x - m); "
                    "e / e.sum(axis=-1, keepdims=True). Without the division the weights do not "
                    "sum to 1, and each output is not an average of the values.")
EXP2 = "exp2 instead of exp"
EXP2_FIX = ("use np.exp. Kernels such as Triton's use exp2 only after multiplying the scores "
            "(and the maximum) by log2(e) = 1.4427, because exp(x) = exp2(x * log2(e)); "
            "exp2 on the plain scores computes a softmax of s * ln(2), a different distribution.")
EXP2_DETAIL = "Your result matches 2 ** (s - m) in place of exp(s - m)."


def exp_rows(x, axis=-1, exp=np.exp):
    return exp(x - x.max(axis=axis, keepdims=True))


def whole_sum_softmax(x, axis=-1):
    e = exp_rows(x, axis)
    return e / e.sum()


def whole_array_softmax(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum()


def max_without_keepdims(x, axis=-1):
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis, keepdims=True)


def sum_without_keepdims(x, axis=-1):
    e = exp_rows(x, axis)
    return e / e.sum(axis=axis)


def exp2_softmax(x, axis=-1):
    e = exp_rows(x, axis, exp=np.exp2)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_misconceptions(apply, axes=(0,)):
    """The softmax mistakes, each as a wrong implementation: apply(softmax_fn) builds it
    (softmax_fn(x, axis=-1)); axes: the wrong axes a learner may normalise over."""
    return [
        Misconception(WRONG_AXIS, WRONG_AXIS_FIX, variants=tuple(
            apply(lambda x, a=a: attncore.softmax(x, axis=a)) for a in axes),
            detail=lambda arguments, i: (
                f"Your weights are normalised over axis {axes[i]}"
                f"{' (the queries)' if axes[i] == -2 else ''} of the scores, not over the keys "
                f"(the last axis): each row must sum to 1.")),
        Misconception(MIN_SUBTRACTED, MIN_SUBTRACTED_FIX, variants=(apply(min_softmax),)),
        Misconception(UNSTABLE, UNSTABLE_FIX, variants=(apply(naive_softmax),)),
        Misconception(GLOBAL_MAX, GLOBAL_MAX_FIX, variants=(apply(global_max_softmax),)),
        Misconception(WHOLE, WHOLE_FIX,
                      variants=(apply(whole_sum_softmax), apply(whole_array_softmax)),
                      detail="Your weights add up to 1 over the whole matrix, not row by row."),
        Misconception(UNNORMALISED, UNNORMALISED_FIX,
                      variants=(apply(exp_rows), apply(lambda x, axis=-1: np.exp(x))),
                      detail="Your weights are exp of the scores (less each row's maximum, or "
                             "not), never divided by the row's sum."),
        Misconception(KEEPDIMS, KEEPDIMS_FIX,
                      variants=(apply(max_without_keepdims), apply(sum_without_keepdims)),
                      detail="Your row maxima or row sums were applied along the wrong axis: "
                             "entry (i, j) was shifted or divided by the value of row j."),
        Misconception(EXP2, EXP2_FIX, variants=(apply(exp2_softmax),), detail=EXP2_DETAIL),
    ]


def along_other_axes(function):
    """Variants: function(x, axis=a) for a = 0, 1, 2 where a is not the last axis of x."""
    return tuple(lambda x, *rest, a=a: function(x, axis=a) if a < np.ndim(x) - 1 else None
                 for a in (0, 1, 2))


def along_axis_detail(what):
    """The detail for along_other_axes: which axis the learner's result was taken along."""
    return lambda arguments, a: (f"Your result is {what} along axis {a} of an input of shape "
                                 f"{np.shape(next(iter(arguments.values())))}, not along the "
                                 f"rows (the last axis).")


TWO_D = "your code assumes 2-D input"
TWO_D_FIX = ("write the function for any number of leading axes, (..., n): reduce with "
             "axis=-1 and keepdims=True, index the last axis with [..., j] or x[..., None], "
             "and do not unpack x.shape into two names or loop over x as rows.")


def two_d_only(along_axis_1=None):
    """TWO_D: code written for 2-D input, given an input with more axes.

    along_axis_1 (optional) is the graded function taken along axis 1 (the last axis of a
    2-D array, not of a 3-D one); errors that such code raises on an input with three or
    more axes (a shape that does not unpack or broadcast, an index too many) are
    recognised too.
    """
    def on_error(arguments, error_type, error_message):
        shape = np.shape(next(iter(arguments.values())))
        if (len(shape) < 3 or error_type not in ("ValueError", "IndexError", "AxisError")
                or "boolean index" in error_message):  # a mask used as an index: not 2-D code
            return None
        return (f"The input has shape {shape}: {len(shape)} axes. Code written for a 2-D "
                f"(T_q, T_k) array (two names unpacked from x.shape, x[:, None], axis=1, a loop "
                f"over the rows) breaks on it.")

    def variant(x, *rest):
        return along_axis_1(x, *rest) if np.ndim(x) >= 3 else None

    return Misconception(
        TWO_D, TWO_D_FIX, variants=(variant,) if along_axis_1 else (), on_error=on_error,
        detail=lambda arguments, i: (
            f"Your result is taken along axis 1 of an input of shape "
            f"{np.shape(next(iter(arguments.values())))}: axis=1 is the last axis of a 2-D "
            f"array only. The rows run along axis=-1."))


KEYS_NOT_TRANSPOSED = "K not transposed (rows of Q meet rows of K)"
KEYS_NOT_TRANSPOSED_FIX = ("each score is a dot product of a query ROW with a key ROW: "
                           "Q has shape (T_q, d_k) and K has shape (T_k, d_k), so the product is "
                           "Q @ K.T (or np.swapaxes(K, -1, -2) for stacked heads). Q @ K puts "
                           "d_k against T_k: it fails, or computes nonsense when they happen to "
                           "be equal.")


def keys_not_transposed(with_keys_as_given=None):
    """KEYS_NOT_TRANSPOSED: the product Q @ K where Q @ K^T is meant.

    Recognised from the error it raises (a matmul, dot or einsum whose inner sizes, d_k and
    T_k, differ) and, when with_keys_as_given is given (the graded function computed with
    K.T in place of K, so Q @ K runs), from the output where d_k = T_k.
    """
    def on_error(arguments, error_type, error_message):
        values = list(arguments.values())
        Q, K = values[0], values[1]
        if error_type != "ValueError" or not all(isinstance(a, np.ndarray) for a in (Q, K)):
            return None
        d_k = Q.shape[-1]
        core = re.search(r"core dimension.*\(size (\d+) is different from (\d+)\)", error_message)
        dot = re.search(r"not aligned: (\d+) \(dim \d+\) != (\d+)", error_message)
        if core:  # operand 1's rows (keys, or a tile of them) against the d_k columns of Q
            inner_fits = int(core.group(2)) == d_k and int(core.group(1)) != d_k
        elif dot:
            inner_fits = int(dot.group(1)) == d_k and int(dot.group(2)) != d_k
        else:  # einsum written for 2-D Q and K ("... with remapped shapes ...")
            inner_fits = Q.ndim == K.ndim == 2 and "remapped shapes" in error_message
        if Q.shape[-1] == K.shape[-2] or not inner_fits:
            return None
        return (f"Q has shape {Q.shape} and K has shape {K.shape}: Q @ K puts the "
                f"d_k = {d_k} numbers of each query against the rows of K (its keys, "
                f"T_k = {K.shape[-2]} of them, or a tile of them), which is why the product "
                f"failed. Rows of Q must meet rows of K: Q @ K.T (swapaxes(K, -1, -2) for "
                f"stacked heads).")

    def variant(*values):
        Q, K = values[0], values[1]
        if Q.shape[-1] != K.shape[-2]:
            return None
        return with_keys_as_given(Q, np.swapaxes(K, -1, -2), *values[2:])

    return Misconception(KEYS_NOT_TRANSPOSED, KEYS_NOT_TRANSPOSED_FIX,
                         variants=(variant,) if with_keys_as_given else (), on_error=on_error)


NO_SOFTMAX = "softmax left out (scores used as weights)"
NO_SOFTMAX_FIX = ("the weights are softmax(Q K^T / sqrt(d_k)) row by row: without the softmax "
                  "the 'weights' are raw scores, negative and unnormalised, so each output is "
                  "not an average of the values. Apply the softmax over the keys (axis=-1) "
                  "before multiplying by V.")
SCALE_AFTER_SOFTMAX = "scale applied after the softmax"
SCALE_AFTER_SOFTMAX_FIX = ("divide the SCORES by sqrt(d_k), before the softmax: "
                           "softmax(Q K^T / sqrt(d_k)). Dividing the weights (or the output) "
                           "afterwards leaves rows that sum to 1/sqrt(d_k) instead of 1, and "
                           "the softmax itself sees unscaled scores, so it is too peaked.")


ROWS_OFF = "rows that miss 1 by more than rounding allows"
ROWS_OFF_FIX = ("divide each row by its own sum and by nothing else: e = np.exp(x - m); "
                "e / e.sum(axis=-1, keepdims=True), with no epsilon and no other constant in the "
                "denominator. exp(x - lse) is right too, with lse = m + log(sum(exp(x - m))) "
                "computed in the scores' dtype or wider.")


def _rows_off(arguments, argument, got, expected, at_most_one):
    """(the worst row's index, its sum minus 1 (or above 1), the plain slack, the slack with
    the rows' lse) of a result within tolerance of the reference, or None. Rows the
    reference leaves all 0 (nothing to attend to) promise nothing."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape or not same(got, expected) or not got.size:
        return None
    scores = np.asarray(arguments[argument], dtype=np.float64)
    mask = arguments.get("mask")
    lse = attncore.logsumexp(scores, mask=mask) if mask is not None else attncore.logsumexp(scores)
    n, dtype = got.shape[-1], got.dtype
    sums = got.astype(np.float64).sum(axis=-1)
    off = np.maximum(sums - 1, 0) if at_most_one else np.where(
        np.asarray(expected, np.float64).sum(axis=-1) > 0, sums - 1, 0)
    worst = np.unravel_index(int(np.argmax(np.abs(off))), off.shape)
    return tuple(map(int, worst)), float(off[worst]), default_atol(n, dtype), \
        default_atol(n, dtype, lse=lse)


def rounded_rows(argument, at_most_one=False, name=ROWS_OFF, fix=ROWS_OFF_FIX):
    """ROWS_OFF, for a softmax whose text promises rows that sum to 1 (at_most_one: to at
    most 1, as softmax-1's) within the slack rounding allows: values within tolerance of
    the reference, and a row further from its promise than default_atol(n, dtype, lse),
    the slack of attncore.invariants that covers a row divided by its computed sum and a
    row recovered from a computed log-sum-exp alike. argument: the scores' name."""
    def detect(arguments, got, expected):
        found = _rows_off(arguments, argument, got, expected, at_most_one)
        if found is None or abs(found[1]) <= found[3]:
            return None
        worst, off, _, slack = found
        n, dtype = np.shape(got)[-1], np.asarray(got).dtype
        return (f"Entry by entry your values are close to the reference, but row {worst} sums "
                f"to 1 {off:+.3g}: {abs(off) / slack:.0f} times the slack rounding allows for "
                f"rows of n = {n} in {dtype} with these scores (max(4 n, 8) eps + |lse| eps = "
                f"{slack:.3g}){' (its rows sum to at most 1)' if at_most_one else ''}. Something "
                f"besides rounding moves every row: an epsilon in the denominator, a constant, "
                f"a sum taken in a lower precision.")

    return Misconception(name, fix, detect=detect, close_too=True)


def closer_rows(argument, at_most_one=False):
    """advice(arguments, got, expected) for FunctionSpec.advice: a note when right rows sum
    to 1 only within the slack of a computed lse, not within the tighter one of rows
    divided by their own sum (max(4 n, 8) eps). It costs nothing."""
    def advice(arguments, got, expected):
        found = _rows_off(arguments, argument, got, expected, at_most_one)
        if found is None or abs(found[1]) <= found[2] or abs(found[1]) > found[3]:
            return None
        worst, off, plain, slack = found
        return (f"your rows sum to 1 within the slack that the rounding of a computed "
                f"log-sum-exp allows (row {worst}: 1 {off:+.3g}, within {slack:.3g}), which is "
                f"right; dividing each row by its own sum keeps rows closer to 1, within "
                f"max(4 n, 8) eps = {plain:.3g} (this costs no points)")
    return advice


KEYS_AS_VALUES = "keys in place of the values (weights @ K)"
KEYS_AS_VALUES_FIX = ("the output averages the VALUES: weights @ V. K only enters the scores "
                      "(Q K^T); it never appears in the weighted sum.")
OUTPUT_LIKE_QUERIES = "output allocated with the shape of Q"
OUTPUT_LIKE_QUERIES_FIX = ("the output has one row per query and one column per VALUE feature: "
                           "allocate it as np.empty((..., T_q, V.shape[-1])), not np.zeros_like(Q) "
                           "or Q's shape, which has d_k columns; d_v may differ from d_k.")


def output_like_queries():
    """OUTPUT_LIKE_QUERIES: recognised from NumPy's error when a (T_q, d_v) block goes into an
    output of Q's shape, whose rows have d_k entries."""
    def on_error(arguments, error_type, error_message):
        Q, V = list(arguments.values())[0], list(arguments.values())[2]
        sizes = re.search(r"from shape \(([\d, ]+)\) into shape \(([\d, ]+)\)", error_message)
        if error_type != "ValueError" or sizes is None or not isinstance(V, np.ndarray):
            return None
        into = tuple(int(n) for n in sizes[2].replace(" ", "").split(",") if n)
        given = tuple(int(n) for n in sizes[1].replace(" ", "").split(",") if n)
        if not into or into[-1] != Q.shape[-1] or not given or given[-1] != V.shape[-1]:
            return None
        return (f"A block of {given} (rows of d_v = {V.shape[-1]} value features) did not fit "
                f"into your output, whose rows have d_k = {Q.shape[-1]} entries, as Q's do.")

    return Misconception(OUTPUT_LIKE_QUERIES, OUTPUT_LIKE_QUERIES_FIX, on_error=on_error)
