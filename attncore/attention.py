"""Scaled dot-product attention, written so each line is one formula.

Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); scores and
weights (..., T_q, T_k), where row i is query i and column j is key j.
Leading dimensions (batch, heads) broadcast.

Every function here, flash_attention and attncore.jit enter through one front door,
prepare_attention (defined in _checks, re-exported here): it validates once and resolves
the batch shape, sizes, scale, causal offset and mask; the private cores trust it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import FloatArray, causal_allowed, kv_groups, positive_int, prepare_attention, scores
from ._checks import Prepared as Prepared  # re-exported: the front door's result, beside prepare_attention
from .softmax import _masked_softmax

FeatureMapLike = Callable[[FloatArray], FloatArray]  # phi: (..., d) -> (..., r)


def attention_scores(q: ArrayLike, k: ArrayLike, scale: float | None = None) -> FloatArray:
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
    p = prepare_attention(q, k, scale=scale)
    return scores(p.q, p.k, p.scale)


def attention_weights(q: ArrayLike, k: ArrayLike, mask: ArrayLike | None = None,
                      scale: float | None = None) -> FloatArray:
    """A = softmax(S) over keys, shape (..., T_q, T_k): every row is on the simplex.

    Masked keys get weight exactly 0; a query with no allowed key gets a zero row.
    float16 is computed in float32 and returned in float16.

    Raises
    ------
    ValueError
        As attention_scores; also if mask is not boolean or does not broadcast to the
        scores (..., T_q, T_k).

    Examples
    --------
    >>> from attncore import attention_weights, masks
    >>> q = k = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> A = attention_weights(q, k, mask=masks.causal(3), scale=1.0)
    >>> A.round(3).tolist()  # query i sees keys 0..i
    [[1.0, 0.0, 0.0], [0.269, 0.731, 0.0], [0.212, 0.212, 0.576]]
    >>> A.sum(axis=-1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    p = prepare_attention(q, k, mask=mask, scale=scale)
    return _weights(p.q, p.k, p.mask, p).astype(p.dtype, copy=False)


def attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None,
              scale: float | None = None,
              return_weights: bool = False) -> FloatArray | tuple[FloatArray, FloatArray]:
    """out_i = sum_j A_ij v_j, shape (..., T_q, d_v); optionally also A.

    A fully masked query has zero weights and a zero output (as PyTorch's SDPA since 2.5).
    float16 is computed in float32 and returned in float16.

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
    """
    p = prepare_attention(q, k, v, mask=mask, scale=scale)
    weights = _weights(p.q, p.k, p.mask, p)
    out = weights @ p.v.astype(p.work, copy=False)
    out, weights = out.astype(p.dtype, copy=False), weights.astype(p.dtype, copy=False)
    return (out, weights) if return_weights else out


def _weights(q: FloatArray, k: FloatArray, mask: NDArray[np.bool_] | None, p: Prepared) -> FloatArray:
    """The core of the three functions above and of grouped-query attention: the weights
    (..., T_q, T_k) in p.work of q and k, trusted (p = prepare_attention of the call), with
    mask (None, or boolean, broadcasting to the scores) and p's causal offset."""
    if p.offset is not None:  # query i sees key j when j <= i + offset
        causal = causal_allowed(np.arange(p.t_q), np.arange(p.t_k), p.offset)
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


def grouped_query_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None,
                            scale: float | None = None,
                            return_weights: bool = False) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Grouped-query attention: q (..., H_q, T_q, d), k and v (..., H_kv, T_k, d).

    H_kv = H_q is multi-head attention, H_kv = 1 multi-query attention. Query head
    h reads kv head h // (H_q // H_kv). The kv heads are never copied: query heads
    are grouped as (..., H_kv, G, T_q, d) and each group meets its one kv head.
    Returns (..., H_q, T_q, d_v), and the weights (..., H_q, T_q, T_k) on request.

    Raises
    ------
    ValueError
        As attention; also if q, k or v lacks a head axis (-3), k and v differ in their
        number of kv heads, or H_kv does not divide H_q.

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
    p = prepare_attention(q, k, v, mask=mask, scale=scale, grouped=True)
    n_q_heads, n_kv_heads = p.q.shape[-3], p.k.shape[-3]
    grouped_q = p.q.reshape(*p.q.shape[:-3], n_kv_heads, p.group, p.t_q, p.d_k)
    k, v = p.k[..., :, None, :, :], p.v[..., :, None, :, :]  # (..., H_kv, 1, T_k, d)
    mask = None if p.mask is None else p.mask.reshape(*p.batch[:-1], n_kv_heads, p.group, p.t_q, p.t_k)
    weights = _weights(grouped_q, k, mask, p)  # (..., H_kv, G, T_q, T_k)
    out = (weights @ v.astype(p.work, copy=False)).astype(p.dtype, copy=False)
    out = out.reshape(*out.shape[:-4], n_q_heads, p.t_q, p.d_v)
    if not return_weights:
        return out
    return out, weights.astype(p.dtype, copy=False).reshape(*weights.shape[:-4], n_q_heads, p.t_q, p.t_k)
