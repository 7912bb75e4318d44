"""Scaled dot-product attention, written so each line is one formula.

Shapes: q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); scores and
weights (..., T_q, T_k), where row i is query i and column j is key j.
Leading dimensions (batch, heads) broadcast.
"""
import numpy as np

from ._checks import as_mask, check_qk, check_qkv, leading_shape, positive_int, require_ndim, resolve_scale
from .softmax import softmax


def attention_scores(q, k, scale=None):
    """S = scale * q k^T, shape (..., T_q, T_k); entry (i, j) = scale * q_i . k_j."""
    q, k = check_qk(q, k)
    leading_shape(q=q, k=k)
    scale = resolve_scale(scale, q.shape[-1])
    return (q @ np.swapaxes(k, -1, -2)) * np.asarray(scale, dtype=np.result_type(q, k))


def attention_weights(q, k, mask=None, scale=None):
    """A = softmax(S) over keys, shape (..., T_q, T_k): every row is on the simplex.

    Masked keys get weight exactly 0; a query with no allowed key gets a zero row.
    """
    return softmax(attention_scores(q, k, scale), axis=-1, mask=mask)


def attention(q, k, v, mask=None, scale=None, return_weights=False):
    """out_i = sum_j A_ij v_j, shape (..., T_q, d_v); optionally also A.

    A fully masked query has zero weights and a zero output (as PyTorch's SDPA since 2.5).
    """
    q, k, v = check_qkv(q, k, v)
    leading_shape(q=q, k=k, v=v)
    weights = attention_weights(q, k, mask, scale)
    out = weights @ v
    return (out, weights) if return_weights else out


def linear_attention(q, k, v, feature_map):
    """Normalised, non-causal linear attention (Katharopoulos et al., 2020) -> (..., T_q, d_v).

    out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j)), with phi =
    feature_map applied to each row. The sums over keys are formed once, so no (T_q, T_k)
    matrix is built. Its implicit rows are on the simplex only when phi >= 0.
    """
    q, k, v = check_qkv(q, k, v)
    leading_shape(q=q, k=k, v=v)
    phi_q, phi_k = feature_map(q), feature_map(k)  # (..., T_q, r), (..., T_k, r)
    kv = np.swapaxes(phi_k, -1, -2) @ v  # (..., r, d_v): sum_j phi(k_j) v_j^T, once
    normaliser = phi_q @ phi_k.sum(axis=-2)[..., None]  # (..., T_q, 1): phi(q_i) . sum_j phi(k_j)
    if np.any(normaliser == 0):
        raise ValueError(
            "feature_map gives some query a zero normaliser phi(q_i) . sum_j phi(k_j); "
            "use a positive feature map such as elu(x) + 1"
        )
    return (phi_q @ kv) / normaliser


def causal_linear_attention(q, k, v, feature_map):
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
    q, k, v = check_qkv(q, k, v)
    leading = leading_shape(q=q, k=k, v=v)
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


def kv_head_map(n_q_heads, n_kv_heads):
    """Index of the kv head each query head reads: h // (n_q_heads // n_kv_heads).

    Query heads come in n_kv_heads consecutive groups ("repeat", not "tile"):
    with 8 query heads over 2 kv heads, heads 0-3 read kv head 0, heads 4-7 kv head 1.
    """
    n_q_heads = positive_int("n_q_heads", n_q_heads)
    n_kv_heads = positive_int("n_kv_heads", n_kv_heads)
    if n_q_heads % n_kv_heads != 0:
        raise ValueError(
            f"the number of kv heads must divide the number of query heads, got "
            f"H_q = {n_q_heads} and H_kv = {n_kv_heads}"
        )
    return np.arange(n_q_heads) // (n_q_heads // n_kv_heads)


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    """Bytes a KV cache holds: 2 (keys and values) x layers x kv heads x head_dim x tokens x batch x bytes.

    It grows with the kv heads, never the query heads: that is what GQA and MQA save.
    """
    sizes = dict(n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=seq_len,
                 batch=batch, bytes_per_value=bytes_per_value)
    total = 2
    for name, value in sizes.items():
        total *= positive_int(name, value)
    return total


def grouped_query_attention(q, k, v, mask=None, scale=None, return_weights=False):
    """Grouped-query attention: q (..., H_q, T_q, d), k and v (..., H_kv, T_k, d).

    H_kv = H_q is multi-head attention, H_kv = 1 multi-query attention. Query head
    h reads kv head h // (H_q // H_kv). The kv heads are never copied: query heads
    are grouped as (..., H_kv, G, T_q, d) and each group meets its one kv head.
    Returns (..., H_q, T_q, d_v), and the weights (..., H_q, T_q, T_k) on request.
    """
    q, k, v = check_qkv(q, k, v)
    require_ndim("q", q, 3, "(..., H_q, T_q, d)")
    require_ndim("k", k, 3, "(..., H_kv, T_k, d)")
    require_ndim("v", v, 3, "(..., H_kv, T_k, d_v)")
    if k.shape[-3] != v.shape[-3]:
        raise ValueError(
            f"k and v must have the same number of kv heads (axis -3): k has shape "
            f"{k.shape}, v has shape {v.shape}"
        )
    n_q_heads, t_q = q.shape[-3], q.shape[-2]
    n_kv_heads, t_k = k.shape[-3], k.shape[-2]
    if n_q_heads % n_kv_heads != 0:
        raise ValueError(
            f"the kv heads (axis -3 of k) must divide the query heads (axis -3 of q): "
            f"q has shape {q.shape} (H_q = {n_q_heads}), k has shape {k.shape} (H_kv = {n_kv_heads})"
        )
    group = n_q_heads // n_kv_heads
    batch = leading_shape(q=q[..., 0, :, :], k=k[..., 0, :, :], v=v[..., 0, :, :])

    grouped_q = q.reshape(*q.shape[:-3], n_kv_heads, group, t_q, q.shape[-1])
    k, v = k[..., :, None, :, :], v[..., :, None, :, :]  # (..., H_kv, 1, T_k, d)
    if mask is not None:
        mask = as_mask(mask, (*batch, n_q_heads, t_q, t_k))
        mask = mask.reshape(*batch, n_kv_heads, group, t_q, t_k)
    out, weights = attention(grouped_q, k, v, mask, scale, return_weights=True)
    out = out.reshape(*out.shape[:-4], n_q_heads, t_q, v.shape[-1])
    if not return_weights:
        return out
    return out, weights.reshape(*weights.shape[:-4], n_q_heads, t_q, t_k)
