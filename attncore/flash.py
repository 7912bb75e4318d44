"""FlashAttention in NumPy: the online softmax over key tiles, never the full matrix.

Read it next to Dao et al. (2022, 2023) and Milakov & Gimelshein (2018). For one
block of queries we keep, per query row,
    m    the running maximum of the scores seen so far,
    l    the running sum of exp(score - m),
    acc  the running sum of exp(score - m) * v_j (the unnormalised output),
and fold in one key tile at a time. Merging two partial states rescales both
to the larger maximum, so the merge is associative and the tile order does not
matter. At the end out = acc / l and the log-sum-exp of the row is m + log(l),
from which any row of the weight matrix can be recovered exactly.

Memory: each step holds one (block_q, block_k) tile, never (T_q, T_k).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ._checks import (
    Causal,
    FloatArray,
    Prepared,
    as_float_array,
    causal_allowed,
    finite_or_zero,
    positive_int,
    prepare_attention,
    scores,
    value_headroom,
)
from ._checks import causal_offset as causal_offset  # re-exported: attncore.flash's name before the front door


class PartialSoftmax(NamedTuple):
    """Online-softmax state of a block of query rows over the keys seen so far."""

    m: FloatArray  # (rows,)       running max; -inf while no key is seen
    l: FloatArray  # (rows,)       running sum of exp(s - m)
    acc: FloatArray  # (rows, d_v)  running sum of exp(s - m) v


def empty_state(rows: int, d_v: int, dtype: DTypeLike) -> PartialSoftmax:
    """The state before any key: m = -inf, l = 0, acc = 0."""
    return PartialSoftmax(
        np.full(rows, -np.inf, dtype), np.zeros(rows, dtype), np.zeros((rows, d_v), dtype)
    )


# m with -inf replaced by 0, so exp(s - m) of a row with no key is 0, not NaN (the library's
# one -inf guard, _checks.finite_or_zero)
_safe = finite_or_zero


def tile_state(s: FloatArray, v_tile: FloatArray) -> PartialSoftmax:
    """State of one score tile s (rows, n) (masked entries -inf) with its values (n, d_v)."""
    m = np.max(s, axis=-1, initial=-np.inf).astype(s.dtype, copy=False)
    p = np.exp(s - _safe(m)[:, None])
    return PartialSoftmax(m, p.sum(axis=-1), p @ v_tile)


def merge(a: PartialSoftmax, b: PartialSoftmax) -> PartialSoftmax:
    """Combine the states of two disjoint sets of keys: rescale both to the larger max."""
    m = np.maximum(a.m, b.m)
    alpha, beta = np.exp(a.m - _safe(m)), np.exp(b.m - _safe(m))
    return PartialSoftmax(
        m, alpha * a.l + beta * b.l, alpha[:, None] * a.acc + beta[:, None] * b.acc
    )


def finalize(state: PartialSoftmax) -> tuple[FloatArray, FloatArray]:
    """out = acc / l and lse = m + log(l); a row that saw no key gets out 0, lse -inf."""
    seen = state.l > 0
    out = state.acc / np.where(seen, state.l, 1)[:, None]
    with np.errstate(divide="ignore"):
        lse = np.where(seen, state.m + np.log(np.where(seen, state.l, 1)), -np.inf)
    return out, lse.astype(state.m.dtype, copy=False)


def _flash_one(q, k, v, scale, offset, block_q, block_k, index=(), window=None):
    """Tiled attention of one head: q (T_q, d), k (T_k, d), v (T_k, d_v); index: its batch entry."""
    t_q, t_k = q.shape[0], k.shape[0]
    out = np.empty((t_q, v.shape[1]), dtype=q.dtype)
    lse = np.empty(t_q, dtype=q.dtype)
    for q0 in range(0, t_q, block_q):  # outer loop over query blocks (FlashAttention 2)
        q1 = min(q0 + block_q, t_q)
        rows = np.arange(q0, q1)
        state = empty_state(q1 - q0, v.shape[1], q.dtype)
        # causal: the last row of this block sees keys j <= q1 - 1 + offset, so stop there;
        # a window: the first row sees keys j > q0 + offset - window, so start there
        k_end = t_k if offset is None else max(0, min(t_k, q1 + offset))
        k_start = 0 if window is None else max(0, q0 + offset - window + 1)
        for k0 in range(k_start, k_end, block_k):  # inner loop streams key blocks
            k1 = min(k0 + block_k, t_k)
            allowed = None
            crosses_window = window is not None and k0 <= q1 - 1 + offset - window  # hidden from the last row
            if offset is not None and (k1 - 1 > q0 + offset or crosses_window):  # a boundary runs through it
                allowed = causal_allowed(rows, np.arange(k0, k1), offset, window)
            s = scores(q[q0:q1], k[k0:k1], scale, allowed, origin=(*index, q0, k0))  # -inf where not allowed
            state = merge(state, tile_state(s, v[k0:k1]))
        out[q0:q1], lse[q0:q1] = finalize(state)
    return out, lse


def flash_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: Causal = False, block_q: int = 64,
                    block_k: int = 64, scale: float | None = None, return_lse: bool = False,
                    window: int | None = None) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Exact attention computed tile by tile; same result as attention(q, k, v).

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    and with return_lse also the log-sum-exp of every scaled score row (..., T_q).
    causal: False, True (square), "top_left" or "bottom_right"; blocks entirely
    above the diagonal are skipped, never computed. window (with causal): a sliding
    window, each query sees only the last `window` keys up to the diagonal, as
    masks.sliding_window; blocks entirely before the window are skipped too.
    float16 is computed in float32; a score that overflows raises, naming q and k
    (tests/test_contract.py).

    Raises
    ------
    ValueError
        As attention (bad shapes or dtypes, NaN or inf, leading dimensions that do not
        broadcast, a bad scale, overflowing scores); also if causal=True with T_q != T_k or
        causal is not one of False, True, "top_left", "bottom_right"; if block_q, block_k
        or window is not a positive integer, or window is given without causal.

    Examples
    --------
    >>> from attncore import attention, flash_attention, masks
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 2, 10, 4))  # 2 heads, 10 positions, d = 4
    >>> out, lse = flash_attention(q, k, v, causal=True, block_q=4, block_k=3, return_lse=True)
    >>> out.shape, lse.shape
    ((2, 10, 4), (2, 10))
    >>> bool(np.allclose(out, attention(q, k, v, mask=masks.causal(10))))
    True
    >>> local = flash_attention(q, k, v, causal=True, window=3, block_q=4, block_k=2)
    >>> bool(np.allclose(local, attention(q, k, v, mask=masks.sliding_window(10, 3))))
    True
    >>> flash_attention(q, k[:, :6], v[:, :6], causal=True)
    Traceback (most recent call last):
    ...
    ValueError: causal=True is ambiguous for T_q = 10 != T_k = 6: pass causal='bottom_right' ...
    """
    p = prepare_attention(q, k, v, causal=causal, scale=scale)
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    window = _window(window, p)
    unit = p.work.type(value_headroom(p.v, p.t_k, p.work))  # acc sums up to T_k rows of v: keep it finite
    q, k, v = (np.broadcast_to(x.astype(p.work, copy=False), (*p.batch, *x.shape[-2:]))
               for x in (p.q, p.k, p.v if unit == 1 else p.v.astype(p.work) / unit))
    out = np.empty((*p.batch, p.t_q, p.d_v), p.work)
    lse = np.empty((*p.batch, p.t_q), p.work)
    for index in np.ndindex(*p.batch):
        out[index], lse[index] = _flash_one(q[index], k[index], v[index], p.scale, p.offset, block_q, block_k,
                                            index, window)
    out, lse = (out * unit).astype(p.dtype, copy=False), lse.astype(p.dtype, copy=False)
    return (out, lse) if return_lse else out


def _window(window: int | None, p: Prepared) -> int | None:
    """window as a positive int, or None; it needs the diagonal that causal places."""
    if window is None:
        return None
    window = positive_int("window", window)
    if p.offset is None:
        raise ValueError(f"window={window} needs causal: the window is the last {window} keys up to the "
                         f"diagonal, and causal ('top_left' or 'bottom_right') says where the diagonal is")
    return window


def weights_from_lse(q: ArrayLike, k: ArrayLike, lse: ArrayLike, rows: ArrayLike | None = None, *,
                     causal: Causal = False, scale: float | None = None, window: int | None = None) -> FloatArray:
    """Recover rows of the weight matrix exactly: A_ij = exp(scale q_i . k_j - lse_i).

    q (..., T_q, d_k) and lse (..., T_q) are the full query block returned with
    return_lse; rows selects query indices (default all); causal and window as given to
    flash_attention. Returns (..., len(rows), T_k).
    This is how one inspects attention that a fused kernel never materialised.

    Raises
    ------
    ValueError
        As attention_scores for q and k, and for causal and window as flash_attention; also if lse is
        not a floating-point array, holds NaN or +inf, does not end in T_q or has leading
        dimensions that do not broadcast with those of q and k; if rows are not integer
        query indices in [-T_q, T_q).

    Examples
    --------
    >>> from attncore import attention_weights, flash_attention, weights_from_lse
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 2, 10, 4))
    >>> _, lse = flash_attention(q, k, v, return_lse=True)
    >>> first_and_last = weights_from_lse(q, k, lse, rows=[0, -1])  # (2 heads, 2 rows, T_k)
    >>> first_and_last.shape
    (2, 2, 10)
    >>> bool(np.allclose(first_and_last, attention_weights(q, k)[:, [0, -1]]))
    True
    >>> weights_from_lse(q, k, lse[:, :5])
    Traceback (most recent call last):
    ...
    ValueError: lse must have shape (..., T_q) with T_q = 10 as q (2, 10, 4), got (2, 5)
    """
    p = prepare_attention(q, k, causal=causal, scale=scale)
    window = _window(window, p)
    lse = _check_lse(lse, p)
    rows = _row_indices(rows, p.t_q)
    allowed = None if p.offset is None else causal_allowed(rows, np.arange(p.t_k), p.offset, window)
    s = scores(p.q[..., rows, :].astype(p.work, copy=False), p.k.astype(p.work, copy=False), p.scale, allowed,
               rows=rows)
    lse_rows = lse[..., rows, None]
    weights = np.where(np.isneginf(lse_rows), 0, np.exp(s - _safe(lse_rows)))
    return weights.astype(np.result_type(p.dtype, lse), copy=False)


def _check_lse(lse: ArrayLike, p: Prepared) -> FloatArray:
    """lse as a float array (..., T_q) for the prepared q (..., T_q, d_k) and k (..., T_k, d_k):
    T_q as q's, and leading dimensions that broadcast with those of q and k."""
    q, k, batch, t_q = p.q, p.k, p.batch, p.t_q
    lse = as_float_array("lse", lse, allow_neg_inf=True)
    if lse.ndim < 1 or lse.shape[-1] != t_q:
        raise ValueError(f"lse must have shape (..., T_q) with T_q = {t_q} as q {q.shape}, got {lse.shape}")
    try:
        np.broadcast_shapes(lse.shape[:-1], batch)
    except ValueError:
        raise ValueError(
            f"lse with shape {lse.shape} does not fit q {q.shape} and k {k.shape}: its leading (batch, head) "
            f"dimensions must broadcast with theirs, {batch}; flash_attention(q, k, v, return_lse=True) "
            f"returns lse of shape {(*batch, t_q)}"
        ) from None
    return lse


def _row_indices(rows: ArrayLike | None, t_q: int) -> np.ndarray:
    """rows as non-negative query indices (negative ones count from the end, as in NumPy)."""
    if rows is None:
        return np.arange(t_q)
    rows = np.atleast_1d(np.asarray(rows))
    if not np.issubdtype(rows.dtype, np.integer) or np.any((rows < -t_q) | (rows >= t_q)):
        raise ValueError(f"rows must be integer query indices in [-{t_q}, {t_q}), got {rows.tolist()}")
    return rows % t_q
