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
    BoolArray,
    Causal,
    FloatArray,
    Prepared,
    as_float_array,
    causal_allowed,
    finite_or_zero,
    grouped_views,
    positive_int,
    prepare_attention,
    scores,
    value_headroom,
)


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


def tile_state(s: FloatArray, v_tile: FloatArray) -> PartialSoftmax:
    """State of one score tile s (rows, n) (masked entries -inf) with its values (n, d_v)."""
    m = np.max(s, axis=-1, initial=-np.inf).astype(s.dtype, copy=False)
    p = np.exp(s - finite_or_zero(m)[:, None])  # a row with no key: exp(-inf - 0) = 0, not NaN
    return PartialSoftmax(m, p.sum(axis=-1), p @ v_tile)


def merge(a: PartialSoftmax, b: PartialSoftmax) -> PartialSoftmax:
    """Combine the states of two disjoint sets of keys: rescale both to the larger max."""
    m = np.maximum(a.m, b.m)
    alpha, beta = np.exp(a.m - finite_or_zero(m)), np.exp(b.m - finite_or_zero(m))
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


def _flash_one(q, k, v, scale, offset, block_q, block_k, index=(), window=None, mask=None):
    """Tiled attention of one head: q (T_q, d), k (T_k, d), v (T_k, d_v); index: its batch entry;
    mask: None or boolean (T_q, T_k), cut into the same tiles."""
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
            allowed = None if mask is None else mask[q0:q1, k0:k1]
            crosses_window = window is not None and k0 <= q1 - 1 + offset - window  # hidden from the last row
            if offset is not None and (k1 - 1 > q0 + offset or crosses_window):  # a boundary runs through it
                causal = causal_allowed(rows, np.arange(k0, k1), offset, window)
                allowed = causal if allowed is None else allowed & causal
            s = scores(q[q0:q1], k[k0:k1], scale, allowed, origin=(*index, q0, k0))  # -inf where not allowed
            state = merge(state, tile_state(s, v[k0:k1]))
        out[q0:q1], lse[q0:q1] = finalize(state)
    return out, lse


def flash_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: ArrayLike | None = None,
                    causal: Causal = False, window: int | None = None, scale: float | None = None,
                    enable_gqa: bool = False, return_lse: bool = False, block_q: int = 64,
                    block_k: int = 64) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Exact attention computed tile by tile; same arguments and result as attention(q, k, v).

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    and with return_lse also the log-sum-exp of every scaled score row (..., T_q).
    mask: boolean (True = may attend), broadcasting to (..., T_q, T_k), cut into the tiles
    (a view, never copied). causal: False, True (square), "top_left" or "bottom_right";
    blocks entirely above the diagonal are skipped, never computed. window (with causal): a
    sliding window, each query sees only the last `window` keys up to the diagonal, as
    masks.sliding_window; blocks entirely before the window are skipped too. enable_gqa:
    grouped-query heads, as attention. float16 is computed in float32; a score that
    overflows raises, naming q and k (tests/test_contract.py).

    Raises
    ------
    ValueError
        As attention (bad shapes or dtypes, NaN or inf, leading dimensions that do not
        broadcast, a bad mask, causal, window or scale, overflowing scores, kv heads that
        do not divide the query heads); also if block_q or block_k is not a positive integer.

    Examples
    --------
    >>> from attncore import attention, flash_attention, masks
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 2, 10, 4))  # 2 heads, 10 positions, d = 4
    >>> out, lse = flash_attention(q, k, v, causal=True, block_q=4, block_k=3, return_lse=True)
    >>> out.shape, lse.shape
    ((2, 10, 4), (2, 10))
    >>> bool(np.allclose(out, attention(q, k, v, causal=True)))
    True
    >>> local = flash_attention(q, k, v, causal=True, window=3, block_q=4, block_k=2)
    >>> bool(np.allclose(local, attention(q, k, v, mask=masks.sliding_window(10, 3))))
    True
    >>> flash_attention(q, k[:, :6], v[:, :6], causal=True)
    Traceback (most recent call last):
    ...
    ValueError: causal=True is ambiguous for T_q = 10 != T_k = 6: pass causal='bottom_right' ...
    """
    p = prepare_attention(q, k, v, mask=mask, causal=causal, window=window, scale=scale, grouped=enable_gqa)
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    unit = p.work.type(value_headroom(p.v, p.t_k, p.work))  # acc sums up to T_k rows of v: keep it finite
    q, k, v, mask = _per_entry(p, p.v if unit == 1 else p.v.astype(p.work) / unit)
    out = np.empty((*q.shape[:-2], p.t_q, p.d_v), p.work)
    lse = np.empty((*q.shape[:-2], p.t_q), p.work)
    for index in np.ndindex(*q.shape[:-2]):
        out[index], lse[index] = _flash_one(q[index], k[index], v[index], p.scale, p.offset, block_q, block_k,
                                            index, p.window, None if mask is None else mask[index])
    out = (out * unit).astype(p.dtype, copy=False).reshape(*p.batch, p.t_q, p.d_v)
    lse = lse.astype(p.dtype, copy=False).reshape(*p.batch, p.t_q)
    return (out, lse) if return_lse else out


def _per_entry(p: Prepared, v: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray | None]:
    """q, k, v (v scaled as the caller needs) and the mask of the call p, in p.work and broadcast
    to one (T, d) entry per index of their common leading shape (views, no copies; with
    grouped-query heads that shape is (..., H_kv, G), as grouped_views)."""
    p = p._replace(v=v)
    q, k, v, mask = grouped_views(p)
    arrays = [x.astype(p.work, copy=False) for x in (q, k, v)]
    lead = np.broadcast_shapes(*(x.shape[:-2] for x in arrays), () if mask is None else mask.shape[:-2])
    arrays = [np.broadcast_to(x, (*lead, *x.shape[-2:])) for x in arrays]
    return (*arrays, None if mask is None else np.broadcast_to(mask, (*lead, p.t_q, p.t_k)))


def weights_from_lse(q: ArrayLike, k: ArrayLike, lse: ArrayLike, rows: ArrayLike | None = None, *,
                     mask: ArrayLike | None = None, causal: Causal = False, window: int | None = None,
                     scale: float | None = None, enable_gqa: bool = False) -> FloatArray:
    """Recover rows of the weight matrix exactly: A_ij = exp(scale q_i . k_j - lse_i).

    q (..., T_q, d_k) and lse (..., T_q) are the full query block returned with
    return_lse; rows: 1-D query indices (default all; negative ones count from the end);
    mask, causal, window, scale and enable_gqa as given to flash_attention. Returns
    (..., len(rows), T_k). This is how one inspects attention that a fused kernel never
    materialised.

    Raises
    ------
    ValueError
        As flash_attention for q, k and the keyword arguments; also if lse is not a
        floating-point array, holds NaN or +inf, does not end in T_q or has leading
        dimensions that do not broadcast with those of q and k; if rows is not a 1-D array
        of integer query indices in [-T_q, T_q).

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
    >>> weights_from_lse(q, k, lse, rows=[]).shape
    (2, 0, 10)
    >>> weights_from_lse(q, k, lse[:, :5])
    Traceback (most recent call last):
    ...
    ValueError: lse must have shape (..., T_q) with T_q = 10 as q (2, 10, 4), got (2, 5)
    """
    p = prepare_attention(q, k, mask=mask, causal=causal, window=window, scale=scale, grouped=enable_gqa)
    lse = _check_lse(lse, p)
    rows = _row_indices(rows, p.t_q)
    q, k, _, mask = grouped_views(p)
    allowed = None if mask is None else mask[..., rows, :]
    if p.offset is not None:
        causal = causal_allowed(rows, np.arange(p.t_k), p.offset, p.window)
        allowed = causal if allowed is None else allowed & causal
    s = scores(q[..., rows, :].astype(p.work, copy=False), k.astype(p.work, copy=False), p.scale, allowed,
               rows=rows)
    if p.group > 1:
        s = s.reshape(*s.shape[:-4], s.shape[-4] * s.shape[-3], *s.shape[-2:])
    lse_rows = lse[..., rows, None]
    weights = np.where(np.isneginf(lse_rows), 0, np.exp(s - finite_or_zero(lse_rows)))
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
    """rows (1-D) as non-negative query indices (negative ones count from the end, as in NumPy)."""
    if rows is None:
        return np.arange(t_q)
    rows = np.asarray(rows)
    if rows.size == 0 and rows.dtype == np.float64:  # [] or np.array([]): no rows, not float rows
        rows = rows.astype(np.intp)
    if rows.ndim != 1:
        raise ValueError(f"rows must be a 1-D array of query indices, got shape {rows.shape}; "
                         f"for one row pass [i]")
    if not np.issubdtype(rows.dtype, np.integer) or np.any((rows < -t_q) | (rows >= t_q)):
        raise ValueError(f"rows must be integer query indices in [-{t_q}, {t_q}), got {rows.tolist()}")
    return rows % t_q
