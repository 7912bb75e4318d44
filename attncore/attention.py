"""Scaled dot-product attention, written so each line is one formula.

Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); scores and
weights (..., T_q, T_k), where row i is query i and column j is key j.
Leading dimensions (batch, heads) broadcast.

Every function here, flash_attention and attncore.jit enter through one front door,
_checks.prepare_attention: it validates once and resolves the batch shape, sizes, scale,
causal offset, window and mask; the private cores trust it. They share one keyword tail
after q, k, v: mask, causal, window, scale, enable_gqa (grouped-query heads, only when
asked, as torch's scaled_dot_product_attention), then what each returns. *deprecated takes
the old positional form of that tail (mask, scale, return_weights) for one release.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import (
    Causal,
    FloatArray,
    Prepared,
    causal_allowed,
    grouped_views,
    kv_groups,
    old_positional,
    positive_int,
    prepare_attention,
    scores,
)
from .softmax import _masked_softmax

FeatureMapLike = Callable[[FloatArray], FloatArray]  # phi: (..., d) -> (..., r)


def attention_scores(q: ArrayLike, k: ArrayLike, *deprecated: Any, scale: float | None = None) -> FloatArray:
    """S = scale * q k^T, shape (..., T_q, T_k); entry (i, j) = scale * q_i . k_j.

    In the dtype of q and k; scores that overflow it raise, naming q and k.

    Raises
    ------
    ValueError
        If q or k is not a floating-point array, holds NaN or inf, or has fewer than two
        dimensions; if they differ in d_k or their leading dimensions do not broadcast; if
        scale is not a positive finite number; if a score overflows the dtype.

    Examples
    --------
    >>> from attncore import attention_scores
    >>> q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # 3 queries, d_k = 2
    >>> k = np.array([[2.0, 0.0], [0.0, 2.0]])  # 2 keys
    >>> attention_scores(q, k, scale=1.0).tolist()  # row i is query i, column j key j
    [[2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]
    >>> attention_scores(q, np.ones((2, 3)))
    Traceback (most recent call last):
    ...
    ValueError: q and k must share d_k (the last axis): q has shape (3, 2), k has shape (2, 3)
    """
    if deprecated:  # the old positional scale, for one release
        (scale,) = old_positional(attention_scores, deprecated, scale=scale)
    p = prepare_attention(q, k, scale=scale)
    return scores(p.q, p.k, p.scale)


def attention_weights(q: ArrayLike, k: ArrayLike, *deprecated: Any, mask: ArrayLike | None = None,
                      causal: Causal = False, window: int | None = None, scale: float | None = None,
                      enable_gqa: bool = False) -> FloatArray:
    """A = softmax(S) over keys, shape (..., T_q, T_k): every row is on the simplex.

    Masked keys get weight exactly 0; a query with no allowed key gets a zero row.
    mask (boolean, True = may attend, broadcasting to (..., T_q, T_k)), causal and window
    combine: a key is allowed where all of them allow it. causal: False, True (square),
    "top_left" or "bottom_right" (masks.causal); window (with causal): each query sees only
    the last `window` keys up to the diagonal, as masks.sliding_window. enable_gqa: q
    (..., H_q, T_q, d), k (..., H_kv, T_k, d), query head h reading kv head h // (H_q // H_kv),
    as grouped_query_attention. float16 is computed in float32 and returned in float16.

    Raises
    ------
    ValueError
        As attention_scores; also if mask is not boolean or does not broadcast to the
        scores (..., T_q, T_k); if causal=True with T_q != T_k or causal is not one of False,
        True, "top_left", "bottom_right"; if window is not a positive integer or comes
        without causal; with enable_gqa, as grouped_query_attention.

    Examples
    --------
    >>> from attncore import attention_weights
    >>> q = k = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> A = attention_weights(q, k, causal=True, scale=1.0)
    >>> A.round(3).tolist()  # query i sees keys 0..i
    [[1.0, 0.0, 0.0], [0.269, 0.731, 0.0], [0.212, 0.212, 0.576]]
    >>> A.sum(axis=-1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    if deprecated:  # the old positional mask and scale, for one release
        mask, scale = old_positional(attention_weights, deprecated, mask=mask, scale=scale)
    p = prepare_attention(q, k, mask=mask, causal=causal, window=window, scale=scale, grouped=enable_gqa)
    return _heads_out(_weights(p), p).astype(p.dtype, copy=False)


def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *deprecated: Any, mask: ArrayLike | None = None,
              causal: Causal = False, window: int | None = None, scale: float | None = None,
              enable_gqa: bool = False, return_weights: bool = False) -> FloatArray | tuple[FloatArray, FloatArray]:
    """out_i = sum_j A_ij v_j, shape (..., T_q, d_v); optionally also A (..., T_q, T_k).

    mask, causal, window and enable_gqa as attention_weights: every attention function of
    attncore and attncore.jit takes them by these names. A fully masked query has zero
    weights and a zero output (as PyTorch's SDPA since 2.5). float16 is computed in float32
    and returned in float16.

    Raises
    ------
    ValueError
        As attention_weights; also if v is not a floating-point array, holds NaN or inf,
        or does not share T_k with k.

    Examples
    --------
    >>> from attncore import attention
    >>> q, k = np.zeros((1, 2)), np.zeros((3, 2))  # equal scores: uniform weights
    >>> v = np.array([[0.0, 3.0], [3.0, 0.0], [6.0, 3.0]])
    >>> attention(q, k, v).round(6).tolist()  # the mean of the rows of v
    [[3.0, 2.0]]
    >>> out, A = attention(q, k, v, mask=np.array([True, False, True]), return_weights=True)
    >>> A.round(6).tolist(), out.round(6).tolist()
    ([[0.5, 0.0, 0.5]], [[3.0, 3.0]])
    >>> attention(q, k, v, mask=np.zeros(3, bool)).tolist()  # no key allowed: 0, not NaN
    [[0.0, 0.0]]
    >>> attention(q, k, v, causal="bottom_right").round(6).tolist()  # the last query sees every key
    [[3.0, 2.0]]
    >>> attention(np.ones((4, 1, 2)), k, v, enable_gqa=True)
    Traceback (most recent call last):
    ...
    ValueError: k must have shape (..., H_kv, T_k, d), got shape (3, 2)
    """
    if deprecated:  # the old positional mask, scale and return_weights, for one release
        mask, scale, return_weights = old_positional(attention, deprecated, mask=mask, scale=scale,
                                                     return_weights=return_weights)
    p = prepare_attention(q, k, v, mask=mask, causal=causal, window=window, scale=scale, grouped=enable_gqa)
    weights = _weights(p)
    out = weights @ grouped_views(p)[2].astype(p.work, copy=False)
    out, weights = _heads_out(out, p).astype(p.dtype, copy=False), _heads_out(weights, p).astype(p.dtype, copy=False)
    return (out, weights) if return_weights else out


def _heads_out(x: FloatArray, p: Prepared) -> FloatArray:
    """A result of grouped heads (grouped_views: (..., H_kv, G, T_q, n)) as (..., H_q, T_q, n)."""
    return x if p.group == 1 else x.reshape(*x.shape[:-4], x.shape[-4] * x.shape[-3], *x.shape[-2:])


def _weights(p: Prepared) -> FloatArray:
    """The core of the functions above: the weights in p.work of the trusted call p
    (p = prepare_attention of it), from its mask, causal offset and window; with grouped
    heads shaped as grouped_views says, (..., H_kv, G, T_q, T_k)."""
    q, k, _, mask = grouped_views(p)
    if p.offset is not None:  # query i sees key j when j <= i + offset (and j > i + offset - window)
        causal = causal_allowed(np.arange(p.t_q), np.arange(p.t_k), p.offset, p.window)
        mask = causal if mask is None else mask & causal
    s = scores(q.astype(p.work, copy=False), k.astype(p.work, copy=False), p.scale, mask)  # -inf where masked
    return _masked_softmax(s)


def linear_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, feature_map: FeatureMapLike) -> FloatArray:
    """Normalised, non-causal linear attention (Katharopoulos et al., 2020) -> (..., T_q, d_v).

    out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)), with phi =
    feature_map applied to each row. The sums over keys are formed once, so no (T_q, T_k)
    matrix is built. Its implicit rows are on the simplex only when phi >= 0.
    """
    p = prepare_attention(q, k, v)
    q, k, v = p.q, p.k, p.v
    _check_feature_map(feature_map)
    phi_q, phi_k = feature_map(q), feature_map(k)  # (..., T_q, r), (..., T_k, r)
    kv = np.swapaxes(phi_k, -1, -2) @ v  # (..., r, d_v): sum_j phi(k_j) v_j^T, once
    normaliser = phi_q @ phi_k.sum(axis=-2)[..., None]  # (..., T_q, 1): phi(q_i) . sum_j phi(k_j)
    if np.any(normaliser == 0):
        raise ValueError(
            "feature_map gives some query a zero normaliser phi(q_i) . sum_j phi(k_j); "
            "use a positive feature map such as elu(x) + 1"
        )
    return (phi_q @ kv) / normaliser


def causal_linear_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike,
                            feature_map: FeatureMapLike) -> FloatArray:
    """Causal linear attention as a recurrence (Katharopoulos et al., 2020) -> (..., T, d_v).

    q (..., T, d_k), k (..., T, d_k), v (..., T, d_v): query i is position i and sees keys
    0..i. A state of fixed size is carried along the sequence, S (..., r, d_v) and
    z (..., r) for r features:

        S_i = S_{i-1} + phi(k_i) v_i^T,   z_i = z_{i-1} + phi(k_i),
        out_i = phi(q_i)^T S_i / (phi(q_i)^T z_i),

    which equals the causally masked quadratic form with weights
    phi(q_i) . phi(k_j) / sum_{j' <= i} phi(q_i) . phi(k_j') for j <= i. Each step costs
    O(r d_v), whatever i is: a transformer layer run as an RNN.
    """
    p = prepare_attention(q, k, v)
    q, k, v, leading = p.q, p.k, p.v, p.batch
    _check_feature_map(feature_map)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"causal linear attention needs one query per position, T_q = T_k: q has shape "
            f"{q.shape}, k has shape {k.shape}"
        )
    phi_q, phi_k = feature_map(q), feature_map(k)  # (..., T, r)
    state = np.zeros((*leading, phi_k.shape[-1], v.shape[-1]), np.result_type(phi_k, v))  # S
    norm = np.zeros((*leading, phi_k.shape[-1]), phi_k.dtype)  # z
    out = np.empty((*leading, q.shape[-2], v.shape[-1]), state.dtype)
    for i in range(q.shape[-2]):
        state = state + phi_k[..., i, :, None] * v[..., i, None, :]  # S_i = S_{i-1} + phi(k_i) v_i^T
        norm = norm + phi_k[..., i, :]  # z_i = z_{i-1} + phi(k_i)
        denominator = np.sum(phi_q[..., i, :] * norm, axis=-1, keepdims=True)
        if np.any(denominator == 0):
            raise ValueError(
                f"feature_map gives query {i} a zero normaliser phi(q_i) . z_i; "
                "use a positive feature map such as elu(x) + 1"
            )
        out[..., i, :] = np.einsum("...r,...rd->...d", phi_q[..., i, :], state) / denominator
    return out


def _check_feature_map(feature_map: object) -> None:
    if not callable(feature_map):
        raise ValueError(
            f"feature_map must be a function (..., d) -> (..., r), e.g. "
            f"attncore.feature_maps.ELU_PLUS_ONE, got {feature_map!r}"
        )


def kv_head_map(n_q_heads: int, n_kv_heads: int) -> NDArray[np.intp]:
    """Index of the kv head each query head reads: h // (n_q_heads // n_kv_heads).

    Query heads come in n_kv_heads consecutive groups ("repeat", not "tile"):
    with 8 query heads over 2 kv heads, heads 0-3 read kv head 0, heads 4-7 kv head 1.

    Raises
    ------
    ValueError
        If either count is not a positive integer, or n_kv_heads does not divide n_q_heads.

    Examples
    --------
    >>> from attncore import kv_head_map
    >>> kv_head_map(8, 2).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    n_q_heads = positive_int("n_q_heads", n_q_heads)
    n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
    return np.arange(n_q_heads) // kv_groups(n_q_heads, n_kv_heads)


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch: int = 1,
                   bytes_per_value: int = 2) -> int:
    """Bytes a KV cache holds: 2 (keys and values) x layers x kv heads x head_dim x tokens x batch x bytes.

    It grows with the kv heads, never the query heads: that is what GQA and MQA save.
    """
    sizes = dict(n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=seq_len,
                 batch=batch, bytes_per_value=bytes_per_value)
    total = 2
    for name, value in sizes.items():
        total *= positive_int(name, value)
    return total


def grouped_query_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *deprecated: Any, mask: ArrayLike | None = None,
                            causal: Causal = False, window: int | None = None, scale: float | None = None,
                            return_weights: bool = False) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Grouped-query attention: q (..., H_q, T_q, d), k and v (..., H_kv, T_k, d); the same as
    attention(q, k, v, enable_gqa=True, ...).

    H_kv = H_q is multi-head attention, H_kv = 1 multi-query attention. Query head
    h reads kv head h // (H_q // H_kv). The kv heads are never copied: query heads
    are grouped as (..., H_kv, G, T_q, d) and each group meets its one kv head.
    Returns (..., H_q, T_q, d_v), and the weights (..., H_q, T_q, T_k) on request.

    Raises
    ------
    ValueError
        As attention; also if q, k or v lacks a head axis (-3), k and v differ in their
        number of kv heads, k has none, or H_kv does not divide H_q.

    Examples
    --------
    >>> from attncore import attention, grouped_query_attention
    >>> rng = np.random.default_rng(0)
    >>> q = rng.normal(size=(8, 5, 4))  # 8 query heads, 5 queries, d = 4
    >>> k, v = rng.normal(size=(2, 2, 7, 4))  # 2 kv heads, 7 keys
    >>> out = grouped_query_attention(q, k, v)
    >>> out.shape
    (8, 5, 4)
    >>> # heads 0-3 read kv head 0 and heads 4-7 kv head 1: attention with kv repeated
    >>> bool(np.allclose(out, attention(q, np.repeat(k, 4, axis=0), np.repeat(v, 4, axis=0))))
    True
    >>> grouped_query_attention(q, np.ones((3, 7, 4)), np.ones((3, 7, 4)))
    Traceback (most recent call last):
    ...
    ValueError: the kv heads (axis -3 of k) must divide the query heads (axis -3 of q): ...
    """
    if deprecated:  # the old positional mask, scale and return_weights, for one release
        mask, scale, return_weights = old_positional(grouped_query_attention, deprecated, mask=mask, scale=scale,
                                                     return_weights=return_weights)
    return attention(q, k, v, mask=mask, causal=causal, window=window, scale=scale, enable_gqa=True,
                     return_weights=return_weights)
