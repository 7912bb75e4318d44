"""Inputs and misconceptions that several assignments share."""
import numpy as np

import attncore

from ..probe import Misconception, shows


def arrays(seed, *shapes, dtype=np.float64, scale=1.0):
    """Reproducible normal arrays with distinct entries (no accidental symmetry)."""
    rng = np.random.default_rng(seed)
    return [(scale * rng.standard_normal(shape)).astype(dtype) for shape in shapes]


def rows_of_different_scales(seed, t_q, t_k, dtype=np.float64):
    """Scores whose rows live at wildly different offsets: -1e4, 0, +1e4, ..."""
    (base,) = arrays(seed, (t_q, t_k), dtype=dtype)
    offsets = np.resize(np.array([-1e4, 0.0, 1e4, -50.0]), t_q)[:, None]
    return (base + offsets).astype(dtype)


def naive_softmax(x, axis=-1):
    return np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)


def global_max_softmax(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


WRONG_AXIS = "softmax over the wrong axis"
WRONG_AXIS_FIX = ("normalise over the keys, the last axis: every ROW (one query) must sum to 1. "
                  "Use axis=-1, not axis=0.")
UNSTABLE = "unstable softmax (overflow)"
UNSTABLE_FIX = ("subtract each row's maximum before exp: softmax(x) = softmax(x - max(x)), "
                "so the largest exponent is exp(0) = 1 and nothing overflows.")
GLOBAL_MAX = "a global instead of per-row maximum"
GLOBAL_MAX_FIX = ("take the maximum of each row (x.max(axis=-1, keepdims=True)), not of the "
                  "whole array: a row far below the global maximum underflows to 0/0.")
SCALE = "missing or wrong scale"
SCALE_FIX = "divide the scores Q K^T by sqrt(d_k), where d_k = Q.shape[-1]."
TRANSPOSED = "transposed score matrix (K Q^T)"
TRANSPOSED_FIX = ("rows are queries and columns are keys: the scores are Q @ K.T (shape "
                  "(T_q, T_k)), not K @ Q.T.")


def describe_factor(c, d_k):
    """Name a scale factor c in terms of d_k."""
    names = {1.0: "no scale at all", 1 / d_k: "1/d_k", np.sqrt(d_k): "sqrt(d_k)",
             1 / np.sqrt(d_k): "1/sqrt(d_k)", float(d_k): "d_k"}
    name = next((n for v, n in names.items() if np.isclose(c, v, rtol=1e-3)), None)
    return f"{c:.4g}" + (f" ({name})" if name else "")


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


def scale_misconception(raw_of, to_scores):
    """SCALE detector: raw_of(args) = Q K^T; to_scores(got) recovers the learner's scores' scale."""

    def detect(args, got, expected):
        raw = raw_of(args)
        d_k = next(iter(args.values())).shape[-1]
        c = to_scores(raw, got)
        if c is None or np.isclose(c, 1 / np.sqrt(d_k), rtol=1e-3):
            return None
        return (f"Your scores are Q K^T times {describe_factor(c, d_k)}; with d_k = {d_k} the "
                f"scale must be 1/sqrt(d_k) = {1 / np.sqrt(d_k):.4g}.")

    return Misconception(SCALE, SCALE_FIX, detect=detect)


def softmax_misconceptions(apply):
    """The softmax mistakes, each as a wrong implementation: apply(softmax_fn) builds it."""
    return [
        Misconception(WRONG_AXIS, WRONG_AXIS_FIX, wrong=apply(lambda x: attncore.softmax(x, axis=0))),
        Misconception(UNSTABLE, UNSTABLE_FIX, wrong=apply(naive_softmax)),
        Misconception(GLOBAL_MAX, GLOBAL_MAX_FIX, wrong=apply(global_max_softmax)),
    ]


def matching(*variants, detail="", finite=False):
    """A detector for Misconception(detect=...) built from several wrong implementations.

    It fires when the learner's output equals variant(*args) for one of the variants
    (tried in order) and that variant's output is not the expected one. detail is a
    string, or a function (args, index of the matching variant) -> string. With
    finite=True a variant whose output has no finite entry is skipped: an all-inf
    result says "overflow", not which formula overflowed.
    """
    def detect(args, got, expected):
        for index, variant in enumerate(variants):
            if shows(variant, args, got, expected, finite=finite):
                return detail(args, index) if callable(detail) else detail
        return None

    return detect


def other_axes(reference, what):
    """A detector: the learner's output is reference(x, axis=a) for an axis a other than the last.

    reference takes the first argument of the case and an axis; what names it in the detail.
    """

    def detect(args, got, expected):
        x = next(iter(args.values()))
        axes = list(range(np.ndim(x) - 1))
        return matching(
            *[lambda x, a=a: reference(x, axis=a) for a in axes],
            detail=lambda args, i: (f"Your result is {what} along axis {axes[i]} of an input "
                                    f"of shape {np.shape(x)}, not along the rows (the last "
                                    f"axis)."),
        )(args, got, expected)

    return detect
