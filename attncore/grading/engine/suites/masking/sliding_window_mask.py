"""sliding_window_mask(t, window) -> (t, t) bool: query i sees its `window` most recent
keys, its own included: i - window < j <= i. Reference: masks.sliding_window(t, window)."""
import numpy as np

from attncore import masks

from ... import stand_ins
from ...probe import SHAPE_OR_DTYPE, Case, FunctionSpec, Misconception
from ..common import DRAWN, integers, written_or_drawn
from .shared import FORBIDDEN, INVERTED, INVERTED_FIX, NEGATIVE_SLICE, OFF_BY_ONE, shape_fix, shape_or_dtype

WINDOW_NOT_CAUSAL = "window not causal (future keys allowed)"
WINDOW_WIDTH = "window one key too wide or too narrow"
WINDOW_FORWARD = "window looks forward (transposed: keys after the query)"


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


def _drawn_window(seed):
    """t from 4 to 8 and a window from 2 to t - 1: the window starts inside every row past it."""
    t = integers(seed, 4, 8, 1)[0]
    return {"t": t, "window": integers(seed + 1, 2, t - 1, 1)[0]}


def _int(rng, low, high):
    """A drawn int from low to high, both included."""
    return int(rng.integers(low, high + 1))


def _window_inside(rng):
    """t from 6 to 10 and a window from 3 to t - 3: it starts inside the rows past it."""
    t = _int(rng, 6, 10)
    return {"t": t, "window": _int(rng, 3, t - 3)}


def _window_longer(rng):
    """t from 2 to 6 and a window from t + 1 to 2 t - 1: longer than the sequence, and a
    slice that starts at i - window + 1 still counts from the end in the last row."""
    t = _int(rng, 2, 6)
    return {"t": t, "window": _int(rng, t + 1, 2 * t - 1)}


WINDOW_CASES = {
    "basic": [
        Case("t = 5, window = 2", lambda: {"t": 5, "window": 2}),
        Case(f"t from 4 to 8, window from 2 to t - 1: {DRAWN}", lambda: _drawn_window(33)),
    ],
    "hidden": [
        Case("t from 6 to 10, window from 3 to t - 3", lambda: written_or_drawn(
             67, lambda: {"t": 6, "window": 3}, _window_inside)),
        Case("t from 2 to 16, window = 1: each query sees only itself", lambda: written_or_drawn(
             68, lambda: {"t": 4, "window": 1}, lambda rng: {"t": _int(rng, 2, 16), "window": 1})),
        Case("t from 2 to 6, window from t + 1 to 2 t - 1: the window is longer than the "
             "sequence",
             lambda: written_or_drawn(69, lambda: {"t": 3, "window": 5}, _window_longer)),
        Case("t = 1, window from 1 to 5: a single token", lambda: written_or_drawn(
             70, lambda: {"t": 1, "window": 1}, lambda rng: {"t": 1, "window": _int(rng, 1, 5)})),
        Case(f"t and window from 1 to 9: {DRAWN}",
             lambda: dict(zip(("t", "window"), integers(15, 1, 9, 2)))),
    ],
}

WINDOW_MISCONCEPTIONS = [
    Misconception(SHAPE_OR_DTYPE, shape_fix("(t, t)"),
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


SPEC = FunctionSpec(
    name="sliding_window_mask",
    plain=(stand_ins.sliding_window_mask,),
    axes={"return": ("T_q", "T_k")},
    reference=lambda t, window: masks.sliding_window(t, window),
    suites=WINDOW_CASES,
    misconceptions=WINDOW_MISCONCEPTIONS,
    forbidden=FORBIDDEN,
)
