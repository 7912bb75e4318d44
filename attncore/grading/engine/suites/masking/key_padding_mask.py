"""key_padding_mask(lengths (B,), t_k) -> (B, 1, t_k) bool: key j of sequence b is real
(may be attended to) when j < lengths[b]. Reference: masks.key_padding(lengths, t_k)."""
import numpy as np

from attncore import masks

from ... import stand_ins
from ...probe import SHAPE_OR_DTYPE, Case, FunctionSpec, Misconception
from ..common import DRAWN, integers, written_or_drawn
from .shared import FORBIDDEN, INVERTED, INVERTED_FIX, shape_fix, shape_or_dtype

QUERY_PADDING = "padding mask on queries instead of keys"
PADDING_OFF_BY_ONE = "padding boundary off by one"
PADDING_SIDE = "padding on the wrong side"


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


def _drawn_lengths(seed, shortest=0, longest=0, sequences=(2, 5), keys=(1, 9)):
    """lengths of 2 to 5 sequences (sequences), each from shortest (0) to t_k + longest
    (t_k), and t_k from 1 to 9 (keys)."""
    batch, t_k = integers(seed, *sequences, 1)[0], integers(seed + 1, *keys, 1)[0]
    return {"lengths": _lengths(*integers(seed + 2, shortest, t_k + longest, batch)), "t_k": t_k}


def _full_and_empty(rng):
    """lengths of 3 to 5 sequences of t_k (3 to 9) keys: one t_k, one 0, the others from 1
    to t_k - 1, in a drawn order."""
    t_k = int(rng.integers(3, 10))
    inside = rng.integers(1, t_k, int(rng.integers(1, 4)))
    return {"lengths": rng.permutation(np.concatenate([[t_k, 0], inside])), "t_k": t_k}


def _one_int32_length(rng):
    """One sequence of t_k (3 to 9) keys, its length from 1 to t_k - 1, as int32."""
    t_k = int(rng.integers(3, 10))
    return {"lengths": _lengths(int(rng.integers(1, t_k)), dtype=np.int32), "t_k": t_k}


PADDING_OFF_BY_ONE_VARIANTS = (
    lambda lengths, t_k: np.arange(t_k)[None, None, :] <= np.asarray(lengths)[:, None, None],
    lambda lengths, t_k: np.arange(t_k)[None, None, :] < np.asarray(lengths)[:, None, None] - 1,
)


PADDING_CASES = {
    "basic": [
        Case("2 sequences, lengths [3, 1], t_k = 4", lambda: {"lengths": _lengths(3, 1), "t_k": 4}),
        Case(f"2 sequences, each padded (lengths from 1 to t_k - 1), t_k from 3 to 6: {DRAWN}",
             lambda: _drawn_lengths(32, shortest=1, longest=-1, sequences=(2, 2), keys=(3, 6))),
    ],
    "hidden": [
        Case("3 to 5 sequences of t_k from 3 to 9 keys, one full, one empty, the others in "
             "between, in a drawn order", lambda: written_or_drawn(
                 65, lambda: {"lengths": _lengths(2, 4, 0), "t_k": 4}, _full_and_empty)),
        Case("1 sequence, its length (1 to t_k - 1) as int32, t_k from 3 to 9",
             lambda: written_or_drawn(66, lambda: {"lengths": _lengths(5, dtype=np.int32), "t_k": 7},
                                      _one_int32_length)),
        Case(f"2 to 5 sequences, t_k from 1 to 9: {DRAWN}", lambda: _drawn_lengths(14)),
    ],
}

PADDING_MISCONCEPTIONS = [
    Misconception(QUERY_PADDING, "compare the KEY index with the lengths: key j of sequence b "
                                 "is real when j < lengths[b]; shape (B, 1, t_k), for example "
                                 "(np.arange(t_k) < lengths[:, None])[:, None, :].",
                  detect=query_padding_detect),
    Misconception(SHAPE_OR_DTYPE, shape_fix("(B, 1, t_k)") + " Keep the singleton query "
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


SPEC = FunctionSpec(
    name="key_padding_mask",
    plain=(stand_ins.key_padding_mask, stand_ins.key_padding_mask_by_row),
    axes={"lengths": ("B",), "return": ("B", "T_q", "T_k")},
    reference=lambda lengths, t_k: masks.key_padding(lengths, t_k),
    suites=PADDING_CASES,
    misconceptions=PADDING_MISCONCEPTIONS,
    forbidden=FORBIDDEN,
)
