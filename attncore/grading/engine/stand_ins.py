"""Right answers, in plain NumPy, for the graded functions that other graded functions call.

When a learner's function fails only because it calls a wrong function of the same
notebook (attention_weights calling a wrong attention_scores), the grader grades it again
with one of these in the wrong one's place (course.runner). Their source is sent to the
worker, which defines them in a namespace holding only `np`: each is self-contained, and
none calls attncore, whose functions the exercise forbids there.
"""
import numpy as np


def attention_scores(Q, K):
    """Q (T_q, d_k), K (T_k, d_k) -> scaled scores (T_q, T_k)."""
    return Q @ K.T / np.sqrt(Q.shape[-1])


def attention_weights(Q, K):
    """Q (T_q, d_k), K (T_k, d_k) -> weights (T_q, T_k), every row a stable softmax."""
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def causal_mask(t_q, t_k):
    """Bottom-right causal mask, bool (t_q, t_k): query i may attend to key j <= i + t_k - t_q."""
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q)


def kv_head_for(q_head, n_q_heads, n_kv_heads):
    """The kv head (an int) that query head q_head reads."""
    return q_head // (n_q_heads // n_kv_heads)


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


def split_heads(x, n_heads):
    """(B, T, H * d) -> (B, H, T, d)."""
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3)
