"""05-flash: online_softmax_stats, flash_attention and row_from_lse, written without the
catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- online_softmax_stats
    Unseen("online_softmax_stats", "the correction factor with its sign flipped: exp(m_new - m)",
           ("exp(m_new - m", "sign", "upside down", "inverse"), '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for start in range(0, x.shape[1], block_size):
        tile = x[:, start:start + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        correction = np.where(np.isinf(m), 0.0, np.exp(m_new - m))
        l = l * correction + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Unseen("online_softmax_stats", "one maximum for the whole tile instead of one per row",
           ("whole tile", "per row", "one max", "global"), '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max())
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Unseen("online_softmax_stats", "the correction applied to the new tile's sum instead of the old l",
           ("wrong term", "new tile's", "correction"), '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l + np.exp(tile - m_new[:, None]).sum(axis=1) * np.exp(m - m_new)
        m = m_new
    return m, l
'''),
    Unseen("online_softmax_stats", "the tile slice forgets its offset: the first tile, every time",
           ("first tile", "offset", "k0"), '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, :block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Unseen("online_softmax_stats", "the running maximum never updated (m = m_new forgotten)",
           ("m = m_new", "never updated", "running max", "running maximum"), '''
def online_softmax_stats(x, block_size):
    rows = x.shape[0]
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
    return m_new, l
'''),
    Unseen("online_softmax_stats", "m_new subtracted from the tile without [:, None]: a raw broadcast error",
           ("[:, None]", "broadcast"), '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new).sum(axis=1)
        m = m_new
    return m, l
'''),
    # ------------------------------------------------------------- flash_attention
    Unseen("flash_attention", "the correction applied to the new tile's values instead of acc",
           ("wrong term", "new tile's", "correction"), '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = acc + alpha[:, None] * (p @ V[k0:k0 + block_size])
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Unseen("flash_attention", "the key tile slice forgets its offset: K[:block_size] every time",
           ("first tile", "offset", "k0", "first key tile"), '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            Kb, Vb = K[:block_size], V[:block_size]
            s = q @ Kb.T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ Vb
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Unseen("flash_attention", "every query tile written into the first rows of the output",
           ("rows past the first", "query tile", "q0", "offset", "first rows"), '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        n = q.shape[0]
        m, l, acc = np.full(n, -np.inf), np.zeros(n), np.zeros((n, V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[:n] = acc / l[:, None]
    return out
'''),
    Unseen("flash_attention", "scores scaled by 1/sqrt(block_size) instead of 1/sqrt(d)",
           ("block_size", "scale"), '''
def flash_attention(Q, K, V, block_size):
    scale = 1.0 / np.sqrt(block_size)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = (q @ K[k0:k0 + block_size].T) * scale
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            l = np.exp(m - m_new) * l + p.sum(axis=1)
            acc = np.exp(m - m_new)[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Unseen("flash_attention", "the tile's running maximum subtracted without [:, None]: a raw broadcast error",
           ("[:, None]", "broadcast"), '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new)
            alpha = np.exp(m - m_new)
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Unseen("flash_attention", "m, l and acc set up once, before the loop over query tiles",
           ("first tile", "reset", "query tile", "initialis", "rows past the first"), '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    m = np.full(block_size, -np.inf)
    l = np.zeros(block_size)
    acc = np.zeros((block_size, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        n = q.shape[0]
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m[:n], s.max(axis=1))
            alpha = np.exp(m[:n] - m_new)
            p = np.exp(s - m_new[:, None])
            l[:n] = alpha * l[:n] + p.sum(axis=1)
            acc[:n] = alpha[:, None] * acc[:n] + p @ V[k0:k0 + block_size]
            m[:n] = m_new
        out[q0:q0 + n] = acc[:n] / l[:n, None]
    return out
'''),
    # ------------------------------------------------------------- row_from_lse
    Unseen("row_from_lse", "exp(lse - s): the difference the wrong way round",
           ("exp(lse - s", "sign", "reciprocal", "inverse", "1/"), '''
def row_from_lse(q, K, lse):
    s = K @ q / np.sqrt(len(q))
    return np.exp(lse - s)
'''),
    Unseen("row_from_lse", "the scale applied after the exp",
           ("after the exp", "scale"), '''
def row_from_lse(q, K, lse):
    return np.exp(K @ q - lse) / np.sqrt(q.shape[0])
'''),
    Unseen("row_from_lse", "q @ K: the keys not transposed, a raw matmul error",
           ("K.T", "transpose"), '''
def row_from_lse(q, K, lse):
    return np.exp(q @ K / np.sqrt(q.shape[0]) - lse)
'''),
    Unseen("row_from_lse", "log(lse) subtracted: lse taken for the sum itself",
           ("log(lse)", "log of the lse", "already a log", "divided by the log-sum-exp"), '''
def row_from_lse(q, K, lse):
    s = K @ q / np.sqrt(q.shape[0])
    return np.exp(s - np.log(lse))
'''),
    Unseen("row_from_lse", "scores divided by d_k instead of sqrt(d_k)",
           ("scale", "1/d"), '''
def row_from_lse(q, K, lse):
    d_k = q.shape[0]
    return np.exp(K @ q / d_k - lse)
'''),
]
