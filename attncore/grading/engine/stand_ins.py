"""Right answers in plain NumPy, written as the exercises write them, for every graded function.

Two uses. When a learner's function fails only because it calls a wrong function of the
same notebook (attention_weights calling a wrong attention_scores), the grader grades it
again with the right answer in the wrong one's place (FunctionSpec.stand_in, course.runner):
its source is sent to the worker, which defines it in a namespace holding only `np`. And
the derived mistakes (engine.diagnosis.derived) change their code one place at a time
(FunctionSpec.plain). So each is self-contained, calls no attncore function, and uses the
names of the exercise text (m, l, acc, k0, ...); a function with two styles (a loop and a
vectorised form) has both, since each derives mistakes the other cannot.
"""
import numpy as np


def attention_scores(Q, K):
    """Q (T_q, d_k), K (T_k, d_k) -> scaled scores (T_q, T_k)."""
    return Q @ K.T / np.sqrt(Q.shape[-1])


def attention_scores_by_entry(Q, K):
    """attention_scores one entry at a time: entry (i, j) is q_i . k_j / sqrt(d_k)."""
    T_q, d_k = Q.shape
    S = np.zeros((T_q, K.shape[0]))
    for i in range(T_q):
        for j in range(K.shape[0]):
            S[i, j] = Q[i] @ K[j] / np.sqrt(d_k)
    return S


def attention_weights(Q, K):
    """Q (T_q, d_k), K (T_k, d_k) -> weights (T_q, T_k), every row a stable softmax."""
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention(Q, K, V):
    """Q (T_q, d_k), K (T_k, d_k), V (T_k, d_v) -> (T_q, d_v): weights @ V."""
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    return weights @ V


def attention_by_key(Q, K, V):
    """attention as a sum over the keys: out += weights[:, j] v_j for every key j."""
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = e / np.sum(e, axis=-1, keepdims=True)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for j in range(K.shape[0]):
        out = out + weights[:, j:j + 1] * V[j]
    return out


def softmax(scores):
    """Softmax over the last axis: (..., n) -> (..., n), same dtype."""
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def is_row_stochastic(W, atol=None):
    """W (..., n) -> bool: rows finite, entries in [0, 1], sums within atol of 1."""
    W = np.asarray(W)
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)):
        return False
    if np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(np.sum(W, axis=-1) - 1) <= atol))


def causal_mask(t_q, t_k):
    """Bottom-right causal mask, bool (t_q, t_k): query i may attend to key j <= i + t_k - t_q."""
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q)


def key_padding_mask(lengths, t_k):
    """bool (B, 1, t_k): key j of sequence b is real when j < lengths[b]."""
    lengths = np.asarray(lengths)
    return (np.arange(t_k)[None, :] < lengths[:, None])[:, None, :]


def key_padding_mask_by_row(lengths, t_k):
    """key_padding_mask one sequence at a time: the first lengths[b] keys are real."""
    mask = np.zeros((len(lengths), 1, t_k), dtype=bool)
    for b in range(len(lengths)):
        mask[b, 0, :lengths[b]] = True
    return mask


def sliding_window_mask(t, window):
    """bool (t, t): query i may attend to keys i - window < j <= i."""
    i = np.arange(t)[:, None]
    j = np.arange(t)[None, :]
    return (j <= i) & (j > i - window)


def masked_softmax(scores, mask):
    """Weights (..., T_q, T_k): softmax over the allowed keys, blocked keys and empty rows 0."""
    x = np.where(mask, scores, -np.inf)
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


def kv_head_for(q_head, n_q_heads, n_kv_heads):
    """The kv head (an int) that query head q_head reads."""
    return q_head // (n_q_heads // n_kv_heads)


def grouped_query_attention(Q, K, V):
    """Q (H_q, T_q, d), K (H_kv, T_k, d), V (H_kv, T_k, d_v) -> (H_q, T_q, d_v)."""
    group = Q.shape[0] // K.shape[0]
    K_all = np.repeat(K, group, axis=0)
    V_all = np.repeat(V, group, axis=0)
    S = Q @ np.swapaxes(K_all, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(S - np.max(S, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) @ V_all


def grouped_query_attention_by_head(Q, K, V):
    """grouped_query_attention one query head at a time: head h reads kv head h // group."""
    H_q, T_q, d = Q.shape
    group = H_q // K.shape[0]
    out = np.zeros((H_q, T_q, V.shape[-1]))
    for h in range(H_q):
        j = h // group
        S = Q[h] @ K[j].T / np.sqrt(d)
        e = np.exp(S - np.max(S, axis=-1, keepdims=True))
        out[h] = e / np.sum(e, axis=-1, keepdims=True) @ V[j]
    return out


def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    """Size of the KV cache in bytes (an int)."""
    keys_and_values = 2
    return keys_and_values * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value


def online_softmax_stats(x, block_size):
    """x (T_q, T_k) -> (m, l), each (T_q,): row max and sum of exp(x - m), tile by tile."""
    m = np.full(x.shape[0], -np.inf, dtype=x.dtype)
    l = np.zeros(x.shape[0], dtype=x.dtype)
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l


def flash_attention(Q, K, V, block_size):
    """Q (T_q, d_k), K (T_k, d_k), V (T_k, d_v) -> (T_q, d_v), one tile of scores at a time."""
    T_q, d_k = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d_k)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out


def row_from_lse(q, K, lse):
    """q (d_k,), K (T_k, d_k), lse a float -> the weights (T_k,) of q over the keys of K."""
    s = K @ q / np.sqrt(q.shape[0])
    return np.exp(s - lse)


def softmax_one(x):
    """exp(x_j) / (1 + sum_k exp(x_k)) over the last axis, stabilised by m = max(0, row max)."""
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + np.sum(e, axis=-1, keepdims=True))


def sparsemax(x):
    """max(x_j - tau, 0) over the last axis, tau making each row sum to 1."""
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    c = np.cumsum(z, axis=-1)
    support = np.sum(1 + k * z > c, axis=-1, keepdims=True)
    tau = (np.take_along_axis(c, support - 1, axis=-1) - 1) / support
    return np.maximum(x - tau.astype(x.dtype), 0)


def linear_attention(Q, K, V, feature_map):
    """Normalised linear attention: Q (T_q, d_k), K (T_k, d_k), V (T_k, d_v) -> (T_q, d_v)."""
    phi_q = feature_map(Q)
    phi_k = feature_map(K)
    kv = phi_k.T @ V
    z = phi_k.sum(axis=0)
    return (phi_q @ kv) / (phi_q @ z)[:, None]


def split_heads(x, n_heads):
    """(B, T, H * d) -> (B, H, T, d)."""
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3)


def split_heads_by_split(x, n_heads):
    """split_heads with np.split: the last axis cut into n_heads parts, stacked after the batch."""
    return np.stack(np.split(x, n_heads, axis=-1), axis=1)


def layer_attention(hidden, weights, attention_mask):
    """(B, T, D), an AttentionWeights, (B, T) with 1 = real token -> ((B, T, D), (B, H, T, T))."""
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = (hidden @ weights.W_q + weights.b_q).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    k = (hidden @ weights.W_k + weights.b_k).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    v = (hidden @ weights.W_v + weights.b_v).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    keys = np.asarray(attention_mask)[:, None, None, :] == 1
    x = np.where(keys, scores, -np.inf)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    A = e / np.sum(e, axis=-1, keepdims=True)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
