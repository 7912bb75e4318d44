"""causal_mask(t_q, t_k) -> (t_q, t_k) bool: query i may attend to key j when
j <= i + t_k - t_q (bottom-right alignment). Reference: masks.causal(t_q, t_k,
causal="bottom_right")."""
import numpy as np

from attncore import masks

from ... import stand_ins
from ...probe import SHAPE_OR_DTYPE, Case, FunctionSpec, Misconception
from ..common import DRAWN, integers, written_or_drawn
from .shared import FORBIDDEN, INVERTED, INVERTED_FIX, NEGATIVE_SLICE, OFF_BY_ONE, shape_fix, shape_or_dtype

TOP_LEFT = "top-left instead of bottom-right causal alignment"
WRONG_SIGN = "bottom-right offset with the wrong sign"
TRIU = "upper instead of lower triangle (triu instead of tril)"


def _offset(c):
    """' + 2', ' - 1' or '' for writing j <= i + c."""
    return f" + {c}" if c > 0 else f" - {-c}" if c < 0 else ""


def _informative(mask):
    """Not all True and not all False: on tiny inputs many mistakes give such masks."""
    return bool(mask.any() and not mask.all())


def causal_reference(t_q, t_k):
    return masks.causal(t_q, t_k, causal="bottom_right")


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
        Case(f"t queries and t keys, t from 2 to 6: square, {DRAWN}",
             lambda: dict.fromkeys(("t_q", "t_k"), integers(31, 2, 6, 1)[0])),
    ],
    # Every hidden case draws its sizes when graded (written_or_drawn), of the kind it is about.
    "hidden": [
        # (4, 7) before (1, 5): on (1, 5) several mistakes give the same all-False row
        Case("4 to 7 queries and from 3 more keys to one fewer than twice as many (4 and 7 "
             "as written)", lambda: written_or_drawn(
                 61, lambda: {"t_q": 4, "t_k": 7}, lambda rng: _more_keys(rng))),
        Case("1 query and 3 to 9 keys: one decoding step with a KV cache", lambda: written_or_drawn(
             62, lambda: {"t_q": 1, "t_k": 5}, lambda rng: {"t_q": 1, "t_k": _int(rng, 3, 9)})),
        Case("3 to 5 keys and at least 2 more queries, up to 9: more queries than keys, so the "
             "first t_q - t_k queries see nothing", lambda: written_or_drawn(
                 63, lambda: {"t_q": 5, "t_k": 3}, lambda rng: _more_queries(rng))),
        Case("a single key and 1 to 16 queries: only the last query sees it", lambda: written_or_drawn(
             64, lambda: {"t_q": 1, "t_k": 1}, lambda rng: {"t_q": _int(rng, 1, 16), "t_k": 1})),
        Case(f"1 to 9 queries and keys: {DRAWN}",
             lambda: dict(zip(("t_q", "t_k"), integers(13, 1, 9, 2)))),
    ],
}


def _int(rng, low, high):
    """A drawn int from low to high, both included."""
    return int(rng.integers(low, high + 1))


def _more_keys(rng):
    """t_q from 4 to 7 queries and t_k from t_q + 3 to 2 t_q - 1 keys: every mistake's
    diagonal (off by one, top-left, the wrong sign) cuts the mask somewhere else."""
    t_q = _int(rng, 4, 7)
    return {"t_q": t_q, "t_k": _int(rng, t_q + 3, 2 * t_q - 1)}


def _more_queries(rng):
    """t_k from 3 to 5 keys and t_q from t_k + 2 to 9 queries (with 2 keys a top-left mask
    shifted by one is all True)."""
    t_k = _int(rng, 3, 5)
    return {"t_q": _int(rng, t_k + 2, 9), "t_k": t_k}

CAUSAL_MISCONCEPTIONS = [
    Misconception(SHAPE_OR_DTYPE, shape_fix("(t_q, t_k)"),
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


SPEC = FunctionSpec(
    name="causal_mask",
    plain=(stand_ins.causal_mask,),
    axes={"return": ("T_q", "T_k")},
    stand_in=stand_ins.causal_mask,
    reference=causal_reference,
    suites=CAUSAL_CASES,
    misconceptions=CAUSAL_MISCONCEPTIONS,
    forbidden=FORBIDDEN,
)
