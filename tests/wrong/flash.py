"""05-flash: wrong online_softmax_stats, flash_attention and row_from_lse."""
from . import Wrong

WRONG = [
    # online softmax without rescaling
    Wrong("online_softmax_stats", "online softmax without rescaling", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for start in range(0, x.shape[1], block_size):
        tile = x[:, start:start + block_size]
        m = np.maximum(m, tile.max(axis=1))
        l += np.exp(tile - m[:, None]).sum(axis=1)
    return m, l
'''),
    Wrong("online_softmax_stats", "online softmax without rescaling", '''
def online_softmax_stats(x, block_size):
    T_q, T_k = x.shape
    m = np.array([-np.inf] * T_q)
    l = np.zeros(T_q)
    for i in range(T_q):
        for k0 in range(0, T_k, block_size):
            tile = x[i, k0:k0 + block_size]
            l[i] += np.sum(np.exp(tile - tile.max()))   # each tile with its own max
            m[i] = max(m[i], tile.max())
    return m, l
'''),
        Wrong("flash_attention", "online softmax without rescaling", '''
def flash_attention(Q, K, V, block_size):
    T_q, d_k = Q.shape
    out = np.empty((T_q, V.shape[1]))
    for i in range(0, T_q, block_size):
        rows = slice(i, i + block_size)
        m = np.full(Q[rows].shape[0], -np.inf)
        l = np.zeros(Q[rows].shape[0])
        acc = np.zeros((Q[rows].shape[0], V.shape[1]))
        for j in range(0, K.shape[0], block_size):
            S = Q[rows] @ K[j:j + block_size].T / np.sqrt(d_k)
            new_m = np.maximum(m, S.max(1))
            P = np.exp(S - new_m[:, None])
            l = np.exp(m - new_m) * l + P.sum(1)
            acc = acc + P @ V[j:j + block_size]      # forgot to rescale acc
            m = new_m
        out[rows] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "online softmax without rescaling", '''
def flash_attention(Q, K, V, block_size):
    scale = Q.shape[1] ** -0.5
    out = []
    for q in Q:                                   # one query row at a time
        total, acc = 0.0, np.zeros(V.shape[1])
        for k0 in range(0, len(K), block_size):
            s = K[k0:k0 + block_size] @ q * scale
            p = np.exp(s - s.max())               # stable within the tile
            total += p.sum()
            acc += p @ V[k0:k0 + block_size]
        out.append(acc / total)
    return np.array(out)
'''),
    # last partial tile dropped
    Wrong("online_softmax_stats", "last partial tile dropped", '''
def online_softmax_stats(x, block_size):
    T_q, T_k = x.shape
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    for t in range(T_k // block_size):
        tile = x[:, t * block_size:(t + 1) * block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Wrong("online_softmax_stats", "last partial tile dropped", '''
def online_softmax_stats(x, block_size):
    m = np.full(len(x), -np.inf)
    l = np.zeros(len(x))
    for k0 in range(0, x.shape[1] - block_size + 1, block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, np.max(tile, axis=-1))
        l = np.exp(m - m_new) * l + np.sum(np.exp(tile - m_new[:, None]), axis=-1)
        m = m_new
    return m, l
'''),
    Wrong("flash_attention", "last partial tile dropped", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    n_k = K.shape[0] // block_size             # number of key tiles
    out = np.empty((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for t in range(n_k):
            k = K[t * block_size:(t + 1) * block_size]
            v = V[t * block_size:(t + 1) * block_size]
            s = q @ k.T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            a = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = a * l + p.sum(axis=1)
            acc = a[:, None] * acc + p @ v
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "last partial tile dropped", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q - block_size + 1, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(block_size, -np.inf)
        l = np.zeros(block_size)
        acc = np.zeros((block_size, V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            l = np.exp(m - m_new) * l + p.sum(axis=1)
            acc = np.exp(m - m_new)[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    # the full (T_q, T_k) matrix materialised
    Wrong("flash_attention", "the full (T_q, T_k) matrix materialised", '''
def flash_attention(Q, K, V, block_size):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    S = S - S.max(axis=1, keepdims=True)
    P = np.exp(S)
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''),
    Wrong("flash_attention", "the full (T_q, T_k) matrix materialised", '''
def flash_attention(Q, K, V, block_size):
    # compute all scores once, then walk over them tile by tile
    S = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[1])
    m, l = online_softmax_stats(S, block_size)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for k0 in range(0, K.shape[0], block_size):
        P = np.exp(S[:, k0:k0 + block_size] - m[:, None])
        out += P @ V[k0:k0 + block_size]
    return out / l[:, None]
'''),
    # running max started at 0 instead of -inf
    Wrong("online_softmax_stats", "running max started at 0 instead of -inf", '''
def online_softmax_stats(x, block_size):
    m = np.zeros(x.shape[0])
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Wrong("flash_attention", "running max started at 0 instead of -inf", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        n = q.shape[0]
        m, l, acc = np.zeros(n), np.zeros(n), np.zeros((n, V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            scale = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = scale * l + p.sum(axis=1)
            acc = scale[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + n] = acc / l[:, None]
    return out
'''),
    # dividing by l inside the loop
    Wrong("flash_attention", "normalised per tile instead of once at the end", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        o = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, len(K), block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            o = (alpha[:, None] * o + p @ V[k0:k0 + block_size]) / l[:, None]
            m = m_new
        out[q0:q0 + block_size] = o
    return out
'''),
    # missing or wrong scale
    Wrong("flash_attention", "missing or wrong scale", '''
def flash_attention(Q, K, V, block_size):
    out = np.empty((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    # unstable softmax (overflow)
    Wrong("online_softmax_stats", "no maximum subtracted in the tiles", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    total = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m = np.maximum(m, tile.max(axis=1))
        total += np.exp(tile).sum(axis=1)
    return m, total / np.exp(m)
'''),
    Wrong("row_from_lse", "unstable softmax (overflow)", '''
def row_from_lse(q, K, lse):
    scores = K @ q / np.sqrt(len(q))
    return np.exp(scores) / np.exp(lse)
'''),
    # log-sum-exp row recovery without the scale
    Wrong("row_from_lse", "log-sum-exp row recovery without the scale", '''
def row_from_lse(q, K, lse):
    return np.exp(K @ q - lse)
'''),
    Wrong("row_from_lse", "log-sum-exp row recovery without the scale", '''
def row_from_lse(q, K, lse):
    weights = np.empty(K.shape[0])
    for j in range(K.shape[0]):
        weights[j] = np.exp(np.dot(q, K[j]) - lse)
    return weights
'''),
    Wrong("row_from_lse", "missing or wrong scale", '''
def row_from_lse(q, K, lse):
    d_k = q.shape[-1]
    return np.exp(np.einsum("d,kd->k", q, K) / d_k - lse)
'''),
    # divided by the log-sum-exp instead of subtracting it
    Wrong("row_from_lse", "divided by the log-sum-exp instead of subtracting it", '''
def row_from_lse(q, K, lse):
    s = q @ K.T / np.sqrt(q.size)
    return np.exp(s) / lse
'''),
    # row renormalised instead of using the log-sum-exp
    Wrong("row_from_lse", "row renormalised instead of using the log-sum-exp", '''
def row_from_lse(q, K, lse):
    s = K @ q / np.sqrt(q.shape[0])
    w = np.exp(s - lse)
    return w / w.sum()          # make sure the row sums to 1
'''),
    # input modified in place
    Wrong("online_softmax_stats", "input modified in place", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]          # a view into x
        m_new = np.maximum(m, tile.max(axis=1))
        tile -= m_new[:, None]
        l = l * np.exp(m - m_new) + np.exp(tile).sum(axis=1)
        m = m_new
    return m, l
'''),
        # wrong output shape or dtype
    Wrong("online_softmax_stats", "wrong output shape or dtype", '''
def online_softmax_stats(x, block_size):
    m = np.full((x.shape[0], 1), -np.inf)
    l = np.zeros((x.shape[0], 1))
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1, keepdims=True))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new).sum(axis=1, keepdims=True)
        m = m_new
    return m, l
'''),
    # no maximum subtracted: exp(m) of a raw maximum
    Wrong("flash_attention", "no maximum subtracted in the tiles", '''
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
            alpha = np.exp(m) / np.exp(m_new)          # e^{m_old} / e^{m_new}
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    # no maximum subtracted in the tiles
    Wrong("flash_attention", "no maximum subtracted in the tiles", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            p = np.exp(q @ K[k0:k0 + block_size].T / np.sqrt(d))   # no max needed: we divide by l
            l += p.sum(axis=1)
            acc += p @ V[k0:k0 + block_size]
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "no maximum subtracted in the tiles", '''
def flash_attention(Q, K, V, block_size):
    out = np.empty((Q.shape[0], V.shape[1]))
    scale = Q.shape[1] ** -0.5
    for q0 in range(0, Q.shape[0], block_size):
        num, den = 0.0, 0.0
        for k0 in range(0, K.shape[0], block_size):
            w = np.exp(scale * Q[q0:q0 + block_size] @ K[k0:k0 + block_size].T)
            num = num + w @ V[k0:k0 + block_size]
            den = den + w.sum(axis=1, keepdims=True)
        out[q0:q0 + block_size] = num / den
    return out
'''),
    # rescale factor upside down
    Wrong("flash_attention", "rescale factor upside down", '''
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
            alpha = np.exp(m_new - m)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "rescale factor upside down", '''
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
            alpha = np.where(np.isinf(m), 1.0, np.exp(m_new - m))   # first tile: nothing to rescale
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("online_softmax_stats", "rescale factor upside down", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m_new - m) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    # normalised per tile instead of once at the end
    Wrong("flash_attention", "normalised per tile instead of once at the end", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p = p / p.sum(axis=1, keepdims=True)       # softmax of this tile
            out[q0:q0 + block_size] += p @ V[k0:k0 + block_size]
    return out
'''),
    Wrong("flash_attention", "normalised per tile instead of once at the end", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    n_tiles = 0
    for k0 in range(0, K.shape[0], block_size):
        n_tiles += 1
        for q0 in range(0, T_q, block_size):
            s = Q[q0:q0 + block_size] @ K[k0:k0 + block_size].T / np.sqrt(d)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            w /= w.sum(axis=1, keepdims=True)
            out[q0:q0 + block_size] += w @ V[k0:k0 + block_size]
    return out / n_tiles                                 # average of the tiles
'''),
    # exp2 instead of exp
    Wrong("flash_attention", "exp2 instead of exp", '''
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
            alpha = np.exp2(m - m_new)          # exp2 is cheaper, as in Triton
            p = np.exp2(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("online_softmax_stats", "exp2 instead of exp", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], -np.inf)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * 2.0 ** (m - m_new) + (2.0 ** (tile - m_new[:, None])).sum(axis=1)
        m = m_new
    return m, l
'''),
    Wrong("row_from_lse", "exp2 instead of exp", '''
def row_from_lse(q, K, lse):
    return np.exp2(K @ q / np.sqrt(q.shape[0]) - lse)
'''),
    # missing or wrong scale: sqrt(d_v), sqrt(T_k), twice
    Wrong("flash_attention", "missing or wrong scale", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(V.shape[1])
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "missing or wrong scale", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(K.shape[0])
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("row_from_lse", "missing or wrong scale", '''
def row_from_lse(q, K, lse):
    T_k = K.shape[0]
    return np.exp(K @ q / np.sqrt(T_k) - lse)
'''),
    Wrong("row_from_lse", "missing or wrong scale", '''
def row_from_lse(q, K, lse):
    q = q / np.sqrt(len(q))              # scale the query ...
    s = K @ q / np.sqrt(len(q))          # ... and the scores
    return np.exp(s - lse)
'''),
    # no maximum subtracted (online statistics)
    Wrong("online_softmax_stats", "no maximum subtracted in the tiles", '''
def online_softmax_stats(x, block_size):
    total = np.zeros(x.shape[0])
    m = np.full(x.shape[0], -np.inf)
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        total = total + np.exp(tile).sum(axis=1)
        m = np.maximum(m, tile.max(axis=1))
    return m, total * np.exp(-m)
'''),
]

WRONG += [
    # online softmax without rescaling: each tile against its own maximum, m overwritten by the
    # last tile's (issue 21: generic "wrong values" on the hidden cases before)
    Wrong("online_softmax_stats", "online softmax without rescaling", '''
def online_softmax_stats(x, block_size):
    m, l = None, 0.0
    for start in range(0, x.shape[1], block_size):
        tile = x[:, start:start + block_size]
        m = tile.max(axis=1)                      # this tile's maximum
        l = l + np.exp(tile - m[:, None]).sum(axis=1)
    return m, l
'''),
    Wrong("online_softmax_stats", "online softmax without rescaling", '''
def online_softmax_stats(x, block_size):
    sums = []
    for start in range(0, x.shape[1], block_size):
        tile = x[:, start:start + block_size]
        tile_max = np.max(tile, axis=-1, keepdims=True)
        sums.append(np.sum(np.exp(tile - tile_max), axis=-1))
    return tile_max[:, 0], np.sum(sums, axis=0)
'''),
]

WRONG += [
    # K not transposed (rows of Q meet rows of K), as in 01: a tile of keys against Q's rows
    Wrong("flash_attention", "K not transposed (rows of Q meet rows of K)", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size] / np.sqrt(d)
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            alpha = np.exp(m - m_new)
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Wrong("flash_attention", "K not transposed (rows of Q meet rows of K)", '''
def flash_attention(Q, K, V, block_size):
    scale = 1 / np.sqrt(Q.shape[1])
    m = np.full(Q.shape[0], -np.inf)
    l = np.zeros(Q.shape[0])
    acc = np.zeros((Q.shape[0], V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        Kt, Vt = K[start:start + block_size], V[start:start + block_size]
        S = np.dot(Q, Kt) * scale
        m_new = np.maximum(m, S.max(axis=1))
        P = np.exp(S - m_new[:, None])
        l = np.exp(m - m_new) * l + P.sum(axis=1)
        acc = np.exp(m - m_new)[:, None] * acc + P @ Vt
        m = m_new
    return acc / l[:, None]
'''),
]

WRONG += [
    # a (block_size, T_k) slab of scores materialised: tiles of queries, every key at once
    # (issue 21: it was called "the full (T_q, T_k) matrix")
    Wrong("flash_attention", "a (block_size, T_k) slab of scores materialised", '''
def flash_attention(Q, K, V, block_size):
    out = np.empty((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block_size):
        s = Q[q0:q0 + block_size] @ K.T          # (block_size, T_k): one tile of queries
        s *= 1 / np.sqrt(Q.shape[1])
        s -= s.max(axis=1, keepdims=True)
        np.exp(s, out=s)
        out[q0:q0 + block_size] = (s @ V) / s.sum(axis=1, keepdims=True)
    return out
'''),
    Wrong("flash_attention", "a (block_size, T_k) slab of scores materialised", '''
def flash_attention(Q, K, V, block_size):
    T_q, d = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    slab = np.empty((block_size, K.shape[0]))
    for q0 in range(0, T_q, block_size):
        rows = min(block_size, T_q - q0)
        np.matmul(Q[q0:q0 + rows], K.T, out=slab[:rows])
        slab[:rows] /= np.sqrt(d)
        m = slab[:rows].max(axis=1)
        np.exp(slab[:rows] - m[:, None], out=slab[:rows])
        l = slab[:rows].sum(axis=1)
        out[q0:q0 + rows] = slab[:rows] @ V / l[:, None]
    return out
'''),
    # held-out class: sums exp(tile - old max) before updating m (overflow)
    Wrong('online_softmax_stats', 'tile summed against the old maximum', '''
def online_softmax_stats(x, block_size):
    T_q, T_k = x.shape
    m = x[:, :1].max(axis=1)
    l = np.zeros(T_q)
    for k0 in range(0, T_k, block_size):
        tile = x[:, k0:k0 + block_size]
        l = l + np.exp(tile - m[:, None]).sum(axis=1)
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new)
        m = m_new
    return m, l
'''),
    # held-out class: misplaced parentheses: (s_raw - lse) / sqrt(d)
    Wrong('row_from_lse', 'the log-sum-exp inside the scale', '''
def row_from_lse(q, K, lse):
    return np.exp((K @ q - lse) / np.sqrt(q.shape[0]))
'''),
    # held-out class: forgot the exp: returns log-weights
    Wrong('row_from_lse', 'log-weights returned (exp forgotten)', '''
def row_from_lse(q, K, lse):
    return K @ q / np.sqrt(q.shape[0]) - lse
'''),
]
