"""masked_softmax(scores (..., T_q, T_k), mask broadcastable to them) -> weights of the
scores' shape and dtype: the softmax over the allowed keys of each row, 0 on the blocked
keys, and an all-zero row where no key is allowed. Reference: softmax(scores, mask=mask).

The cases put the damage where mistakes differ: fully masked rows, large and negative
scores, a blocked key far above the allowed ones, float32. The detectors that read that
damage are in masked_softmax_detectors.py."""
import numpy as np

import attncore
from attncore import masks

from ... import stand_ins
from ...probe import Case, FunctionSpec, Misconception, ResultDtype
from ..common import (
    GLOBAL_MAX,
    GLOBAL_MAX_FIX,
    MASK_AFTER,
    MASK_WITH_ZERO,
    UNSTABLE,
    UNSTABLE_FIX,
    arrays,
    closer_rows,
    rounded_rows,
    two_d_only,
    written_or_drawn,
)
from .masked_softmax_detectors import (
    fully_masked_detect,
    global_max_detect,
    inverted_detect,
    mask_after_detect,
    mask_with_zero_detect,
    sentinel_detect,
    unstable_detect,
)
from .shared import FORBIDDEN, INVERTED, INVERTED_FIX

FULLY_MASKED = "fully masked row giving NaN or a uniform row"
SENTINEL = "finite sentinel too weak for the scores"
UNBROADCAST_INDEX = "mask used as an index without broadcasting it"
WRONG_AXIS = "masked softmax over the wrong axis"


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
    return scores_and_mask(s + shift, masks.causal(t_q, t_k, causal="bottom_right"), dtype)


def _heads_shared_mask(seed):
    (s,) = arrays(seed, (2, 2, 3, 4), scale=1.5)
    return scores_and_mask(s, masks.causal(3, 4, causal="bottom_right"))


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


def _allowed(rng, t_q, t_k):
    """A drawn (t_q, t_k) mask where each row allows 1 to t_k - 1 keys: some blocked, none
    fully."""
    mask = np.zeros((t_q, t_k), dtype=bool)
    for row in mask:
        row[rng.choice(t_k, int(rng.integers(1, t_k)), replace=False)] = True
    return mask


def _drawn_decoding_step(rng):
    """1 query, 4 to 8 keys, 2 of them (drawn) blocked."""
    t_k = int(rng.integers(4, 9))
    mask = np.ones((1, t_k), dtype=bool)
    mask[0, rng.choice(t_k, 2, replace=False)] = False
    return scores_and_mask(rng.standard_normal((1, t_k)) * 1.2, mask)


def _drawn_near_minus_1e4(rng):
    """2 to 3 queries, 4 to 6 keys, scores -1e4 + N(0, 1.5), a drawn mask (_allowed)."""
    shape = (int(rng.integers(2, 4)), int(rng.integers(4, 7)))
    return scores_and_mask(-1e4 + 1.5 * rng.standard_normal(shape), _allowed(rng, *shape))


def _drawn_rows_at_offsets(rng):
    """4 rows of 4 to 6 keys at offsets -50, 0, +1e4, -1e4 in a drawn order, a drawn mask."""
    t_k = int(rng.integers(4, 7))
    offsets = rng.permutation([-50.0, 0.0, 1e4, -1e4])[:, None]
    return scores_and_mask(rng.standard_normal((4, t_k)) + offsets, _allowed(rng, 4, t_k))


def _drawn_dominant_blocked_key(rng):
    """3 rows of 4 to 6 keys; in the first two a drawn blocked key scores 11000 to 13000,
    the last row allows every key."""
    t_k = int(rng.integers(4, 7))
    s, mask = rng.standard_normal((3, t_k)), np.ones((3, t_k), dtype=bool)
    mask[:2] = _allowed(rng, 2, t_k)
    for row in range(2):
        s[row, rng.choice(np.flatnonzero(~mask[row]))] = rng.uniform(11000.0, 13000.0)
    return scores_and_mask(s, mask)


def _drawn_beyond_1e9(rng):
    """3 rows of 4 to 6 keys and a drawn mask: the first row's scores lowered by 2.5e9 to
    3.5e9, a drawn blocked key of the second scoring as much above 0."""
    t_k = int(rng.integers(4, 7))
    s, mask = rng.standard_normal((3, t_k)), _allowed(rng, 3, t_k)
    s[0] -= rng.uniform(2.5e9, 3.5e9)
    s[1, rng.choice(np.flatnonzero(~mask[1]))] = rng.uniform(2.5e9, 3.5e9)
    return scores_and_mask(s, mask)


def _drawn_float32_near_1000(rng):
    """float32 scores 1000 + N(0, 3), 2 to 4 queries, 1 to 3 more keys, bottom-right causal."""
    t_q = int(rng.integers(2, 5))
    t_k = t_q + int(rng.integers(1, 4))
    return scores_and_mask(1000.0 + 3.0 * rng.standard_normal((t_q, t_k)),
                           masks.causal(t_q, t_k, causal="bottom_right"), np.float32)


def _float32_near_1000():
    """float32 scores around +1000, every row at the same level: exp overflows, a max does not."""
    (s,) = arrays(13, (3, 5), scale=3.0)
    return scores_and_mask(s + 1000.0, masks.causal(3, 5, causal="bottom_right"), np.float32)


SOFTMAX_CASES = {
    "basic": [
        Case("3 queries, 4 keys, all scores negative, some keys blocked in every row",
             _basic_negative),
        Case("batch of 2: scores (2, 2, 4) with a key-padding mask (2, 1, 4), lengths [4, 2]",
             lambda: _batch_with_padding(1, [4, 2], 2, 4)),
    ],
    "hidden": [
        Case("bottom-right causal mask (3, 5), mixed-sign scores", lambda: _causal_scores(2, 3, 5)),
        Case("1 query, 4 to 8 keys: a decoding step, 2 keys blocked",
             lambda: written_or_drawn(71, _decoding_step, _drawn_decoding_step)),
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
        Case("float32 scores around +1000, 2 to 4 queries, 1 to 3 more keys, bottom-right "
             "causal", lambda: written_or_drawn(72, _float32_near_1000, _drawn_float32_near_1000)),
        Case("scores near -1e4, as with a large negative bias, 2 to 3 queries, 4 to 6 keys",
             lambda: written_or_drawn(73, _near_minus_1e4, _drawn_near_minus_1e4)),
        Case("rows at offsets -50, 0, +1e4, -1e4, in a drawn order, 4 to 6 keys",
             lambda: written_or_drawn(74, _rows_at_offsets, _drawn_rows_at_offsets)),
        Case("blocked keys scoring 11000 to 13000, far above the allowed keys, 3 queries, 4 to "
             "6 keys", lambda: written_or_drawn(75, _dominant_blocked_key,
                                                _drawn_dominant_blocked_key)),
        Case("scores beyond 1e9: allowed keys near -3e9, a blocked key scoring 3e9, 3 queries, "
             "4 to 6 keys", lambda: written_or_drawn(76, _beyond_1e9, _drawn_beyond_1e9)),
    ],
}


def masked_softmax_reference(scores, mask):
    return attncore.softmax(scores, mask=mask)


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
                                "such rows become uniform, and zeroing them afterwards is not "
                                "enough: a score below the sentinel still defeats it (the "
                                "hidden cases have such scores). Use -inf.",
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
    rounded_rows("scores"),
]


SPEC = FunctionSpec(
    name="masked_softmax",
    plain=(stand_ins.masked_softmax,),
    axes={"scores": ("...", "T_q", "T_k"), "mask": ("...", "T_q", "T_k"),
          "return": ("...", "T_q", "T_k")},
    reference=masked_softmax_reference,
    suites=SOFTMAX_CASES,
    misconceptions=SOFTMAX_MISCONCEPTIONS,
    advice=closer_rows("scores"),
    result_dtype=ResultDtype.INPUT_FLOAT,
    forbidden=FORBIDDEN,
)
