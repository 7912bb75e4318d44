"""01-convention: attention_scores, attention_weights, attention for 2-D Q, K, V."""
import numpy as np

import attncore

from .. import stand_ins
from ..probe import Case, FunctionSpec, Misconception
from .common import (
    KEYS_AS_VALUES,
    KEYS_AS_VALUES_FIX,
    NO_SOFTMAX,
    NO_SOFTMAX_FIX,
    SCALE_AFTER_SOFTMAX,
    SCALE_AFTER_SOFTMAX_FIX,
    TRANSPOSED,
    TRANSPOSED_FIX,
    arrays,
    effective_scale,
    keys_not_transposed,
    qkv,
    queries_for,
    rows_of_different_scales,
    scale_misconception,
    softmax_misconceptions,
    softmax_scale,
)

ASSIGNMENT = "01-convention"
FORBIDDEN = ("attention_scores", "attention_weights", "attention")


def qk(seed, t_q, t_k, d_k, **kw):
    q, k = arrays(seed, (t_q, d_k), (t_k, d_k), **kw)
    return {"Q": q, "K": k}


def with_row_scales(seed, t_q, t_k, d_k, d_v=None):
    """Q, K whose score rows sit at offsets -1e4, 0, 1e4: a global max would underflow rows."""
    args = qkv(seed, t_q, t_k, d_k, d_v) if d_v else qk(seed, t_q, t_k, d_k)
    target = rows_of_different_scales(seed, t_q, t_k)
    args["Q"] = queries_for(args["K"], target)
    return args


def _fit(to_scale):
    """fit(arguments, got) for scale_misconception: to_scale(Q K^T, got) -> c."""
    return lambda args, got: to_scale(args["Q"] @ args["K"].T, got)


def _attention_with_scale(c):
    return lambda Q, K, V: attncore.softmax(c * (Q @ K.T)) @ V


CASES_QK = {
    "basic": [Case("2 queries, 3 keys, d_k = 4: rectangular", lambda: qk(1, 2, 3, 4))],
    "hidden": [
        Case("4 queries, 4 keys, d_k = 3: square but not symmetric", lambda: qk(2, 4, 4, 3)),
        Case("1 query, 5 keys, d_k = 8: a decoding step", lambda: qk(3, 1, 5, 8)),
        Case("5 queries, 2 keys, d_k = 16, float32", lambda: qk(4, 5, 2, 16, dtype=np.float32)),
    ],
    "extreme": [
        Case("3 queries, 6 keys, d_k = 16, float32, scores in the hundreds",
             lambda: qk(5, 3, 6, 16, dtype=np.float32, scale=12.0)),
        Case("4 queries, 4 keys, d_k = 8: rows at offsets -1e4, 0, 1e4",
             lambda: with_row_scales(6, 4, 4, 8)),
    ],
}
CASES_QKV = {
    "basic": [
        # square first: A^T V runs there, and shows what it computes
        Case("3 queries, 3 keys, d_k = 4, d_v = 2: square", lambda: qkv(7, 3, 3, 4, 2)),
        Case("2 queries, 3 keys, d_k = 4, d_v = 2: rectangular", lambda: qkv(1, 2, 3, 4, 2)),
    ],
    "hidden": [
        Case("4 queries, 4 keys, d_k = 3, d_v = 5: square but not symmetric",
             lambda: qkv(2, 4, 4, 3, 5)),
        Case("1 query, 5 keys, d_k = 8, d_v = 3: a decoding step", lambda: qkv(3, 1, 5, 8, 3)),
        Case("5 queries, 2 keys, d_k = 16, d_v = 4, float32",
             lambda: qkv(4, 5, 2, 16, 4, dtype=np.float32)),
    ],
    "extreme": [
        Case("3 queries, 6 keys, d_k = 16, d_v = 2, float32, scores in the hundreds",
             lambda: qkv(5, 3, 6, 16, 2, dtype=np.float32, scale=12.0)),
        Case("4 queries, 4 keys, d_k = 8, d_v = 3: rows at offsets -1e4, 0, 1e4",
             lambda: with_row_scales(6, 4, 4, 8, 3)),
    ],
}


def _scores(softmax_fn):
    return lambda Q, K: softmax_fn(Q @ K.T / np.sqrt(Q.shape[-1]))


def _outputs(softmax_fn):
    return lambda Q, K, V: softmax_fn(Q @ K.T / np.sqrt(Q.shape[-1])) @ V


def _transposed_weights(Q, K):
    return attncore.softmax(K @ Q.T / np.sqrt(Q.shape[-1]))


def _weights_transposed_in_output(Q, K, V):
    return attncore.attention_weights(Q, K).T @ V


def _values_on_the_left(Q, K, V):
    return V.T @ attncore.attention_weights(Q, K).T


def _raw(Q, K):
    return Q @ K.T


def _scaled(Q, K):
    return Q @ K.T / np.sqrt(Q.shape[-1])


NO_SOFTMAX_DETAIL = "Your weights are the scores themselves: no softmax was applied to them."
SCALE_AFTER_DETAIL = ("Your result is the softmax of the scores, divided by sqrt(d_k) only "
                      "afterwards: its rows sum to 1/sqrt(d_k), not to 1.")

SPECS = [
    FunctionSpec(
        name="attention_scores",
        plain=(stand_ins.attention_scores, stand_ins.attention_scores_by_entry),
        axes={"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "return": ("T_q", "T_k")},
        stand_in=stand_ins.attention_scores,
        reference=lambda Q, K: attncore.attention_scores(Q, K),
        suites={"basic": CASES_QK["basic"], "hidden": CASES_QK["hidden"]},
        misconceptions=[
            Misconception(TRANSPOSED, TRANSPOSED_FIX,
                          variants=(lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1]),)),
            keys_not_transposed(attncore.attention_scores),
            scale_misconception(fit=_fit(effective_scale)),
        ],
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="attention_weights",
        plain=(stand_ins.attention_weights,),
        axes={"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "return": ("T_q", "T_k")},
        stand_in=stand_ins.attention_weights,
        reference=lambda Q, K: attncore.attention_weights(Q, K),
        suites=CASES_QK,
        misconceptions=[
            Misconception(TRANSPOSED, TRANSPOSED_FIX, variants=(_transposed_weights,)),
            *softmax_misconceptions(_scores),
            Misconception(NO_SOFTMAX, NO_SOFTMAX_FIX, variants=(_scaled, _raw),
                          detail=NO_SOFTMAX_DETAIL),
            Misconception(SCALE_AFTER_SOFTMAX, SCALE_AFTER_SOFTMAX_FIX, variants=(
                lambda Q, K: attncore.softmax(_raw(Q, K)) / np.sqrt(Q.shape[-1]),
                lambda Q, K: attncore.softmax(_scaled(Q, K)) / np.sqrt(Q.shape[-1])),
                detail=SCALE_AFTER_DETAIL),
            keys_not_transposed(attncore.attention_weights),
            scale_misconception(fit=_fit(softmax_scale)),
        ],
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="attention",
        plain=(stand_ins.attention, stand_ins.attention_by_key),
        axes={"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "V": ("T_k", "d_v"), "return": ("T_q", "d_v")},
        reference=lambda Q, K, V: attncore.attention(Q, K, V),
        suites=CASES_QKV,
        misconceptions=[
            Misconception(TRANSPOSED, TRANSPOSED_FIX,
                          variants=(lambda Q, K, V: _transposed_weights(Q, K) @ V,)),
            Misconception("weights transposed in the output (A^T V)",
                          "output row i is sum_j A[i, j] v_j, that is A @ V with A of shape "
                          "(T_q, T_k); A.T @ V mixes the values with a column of A instead.",
                          variants=(_weights_transposed_in_output,)),
            Misconception("values multiplied on the wrong side (V^T A^T)",
                          "the output has one row per query: A @ V with shape (T_q, d_v).",
                          variants=(_values_on_the_left,)),
            *softmax_misconceptions(_outputs),
            Misconception(NO_SOFTMAX, NO_SOFTMAX_FIX, variants=(
                lambda Q, K, V: _scaled(Q, K) @ V, lambda Q, K, V: _raw(Q, K) @ V),
                detail="Your output is the scores times V: no softmax turned the scores into "
                       "weights first."),
            Misconception(SCALE_AFTER_SOFTMAX, SCALE_AFTER_SOFTMAX_FIX, variants=(
                lambda Q, K, V: attncore.softmax(_raw(Q, K)) @ V / np.sqrt(Q.shape[-1]),
                lambda Q, K, V: attncore.softmax(_scaled(Q, K)) @ V / np.sqrt(Q.shape[-1])),
                detail=SCALE_AFTER_DETAIL.replace("Your result", "Your weights")),
            Misconception(KEYS_AS_VALUES, KEYS_AS_VALUES_FIX, variants=(
                lambda Q, K, V: attncore.attention_weights(Q, K) @ K,)),
            keys_not_transposed(attncore.attention),
            scale_misconception(_attention_with_scale),
        ],
        forbidden=FORBIDDEN,
    ),
]
