"""05-flash: correct online_softmax_stats, flash_attention and row_from_lse, in many styles
(NumPy only: none of attncore's softmax or flash functions, the exercise's rule)."""
import importlib.util

from . import Right

RIGHT = [
    # ------------------------------------------------------------------ online_softmax_stats
    Right("online_softmax_stats", "a finite np.finfo(dtype).min start", '''
def online_softmax_stats(x, block_size):
    m = np.full(x.shape[0], np.finfo(x.dtype).min)
    l = np.zeros(x.shape[0])
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
'''),
    Right("online_softmax_stats", "pure Python per row, math.exp", '''
import math

def online_softmax_stats(x, block_size):
    ms, ls = [], []
    for row in x.tolist():
        m, l = -math.inf, 0.0
        for k0 in range(0, len(row), block_size):
            tile = row[k0:k0 + block_size]
            m_new = max(m, max(tile))
            l = l * math.exp(m - m_new) + sum(math.exp(v - m_new) for v in tile)
            m = m_new
        ms.append(m)
        ls.append(l)
    return np.array(ms), np.array(ls)
'''),
    Right("online_softmax_stats", "float64 then cast back", '''
def online_softmax_stats(x, block_size):
    x64 = x.astype(np.float64)
    rows = x64.shape[0]
    m = np.full(rows, -np.inf)
    l = np.zeros(rows)
    for start in range(0, x64.shape[1], block_size):
        tile = x64[:, start:start + block_size]
        new_m = np.maximum(m, np.max(tile, axis=1))
        l = np.exp(m - new_m) * l + np.sum(np.exp(tile - new_m[:, np.newaxis]), axis=1)
        m = new_m
    return m.astype(x.dtype), l.astype(x.dtype)
'''),
    Right("online_softmax_stats", "recursion over the tiles, a print to stderr", '''
import sys

def _fold_tiles(x, start, block_size, m, l):
    if start >= x.shape[1]:
        return m, l
    tile = x[:, start:start + block_size]
    m_new = np.maximum(m, tile.max(axis=-1))
    l_new = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=-1)
    return _fold_tiles(x, start + block_size, block_size, m_new, l_new)

def online_softmax_stats(x, block_size):
    print(f"{-(-x.shape[1] // block_size)} tiles of at most {block_size}", file=sys.stderr)
    return _fold_tiles(x, 0, block_size, np.full(len(x), -np.inf), np.zeros(len(x)))
''', note="stderr"),
    Right("online_softmax_stats", "per-tile statistics merged, a class with __call__", '''
class OnlineStats:
    @staticmethod
    def merge(a, b):
        (m_a, l_a), (m_b, l_b) = a, b
        m = np.maximum(m_a, m_b)
        return m, l_a * np.exp(m_a - m) + l_b * np.exp(m_b - m)

    def __call__(self, x, block_size):
        state = (np.full(x.shape[0], -np.inf), np.zeros(x.shape[0]))
        for k0 in range(0, x.shape[1], block_size):
            tile = x[:, k0:k0 + block_size]
            tile_m = tile.max(axis=1)
            tile_l = np.exp(tile - tile_m[:, None]).sum(axis=1)
            state = self.merge(state, (tile_m, tile_l))
        return state

online_softmax_stats = OnlineStats()
'''),
    Right("online_softmax_stats", "first tile starts the state, warnings.warn", '''
import warnings

def online_softmax_stats(x, block_size):
    if block_size >= x.shape[1]:
        warnings.warn("block_size covers the whole row: a single tile")
    first = x[:, :block_size]
    m = first.max(axis=1)
    l = np.exp(first - m[:, None]).sum(axis=1)
    for k0 in range(block_size, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        m_new = np.maximum(m, tile.max(axis=1))
        l = l * np.exp(m - m_new) + np.exp(tile - m_new[:, None]).sum(axis=1)
        m = m_new
    return m, l
''', note="UserWarning"),

    # ------------------------------------------------------------------ flash_attention
    Right("flash_attention", "pure Python: loops over rows and keys, math.exp, no NumPy tiles", '''
import math

def flash_attention(Q, K, V, block_size):
    T_q, T_k = len(Q), len(K)
    scale = 1 / math.sqrt(len(Q[0]))
    out = []
    for q0 in range(0, T_q, block_size):
        queries = Q[q0:q0 + block_size].tolist()
        m = [-math.inf] * len(queries)
        l = [0.0] * len(queries)
        acc = [[0.0] * len(V[0]) for _ in queries]
        for k0 in range(0, T_k, block_size):
            keys = K[k0:k0 + block_size].tolist()
            values = V[k0:k0 + block_size].tolist()
            for r, q in enumerate(queries):
                scores = [sum(a * b for a, b in zip(q, k)) * scale for k in keys]
                m_new = max(m[r], max(scores))
                alpha = math.exp(m[r] - m_new)
                p = [math.exp(s - m_new) for s in scores]
                l[r] = alpha * l[r] + sum(p)
                acc[r] = [alpha * a + sum(pj * v[c] for pj, v in zip(p, values))
                          for c, a in enumerate(acc[r])]
                m[r] = m_new
        out += [[a / l[r] for a in acc[r]] for r in range(len(queries))]
    return np.array(out)
'''),
    Right("flash_attention", "einsum tiles and a finite np.finfo(dtype).min start", '''
def flash_attention(Q, K, V, block_size):
    T_q, d_k = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        m = np.full(len(q), np.finfo(np.float64).min)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = np.einsum("id,jd->ij", q, K[k0:k0 + block_size]) / np.sqrt(d_k)
            m_new = np.maximum(m, s.max(axis=1))
            alpha = np.exp(m - m_new)
            p = np.exp(s - m_new[:, None])
            l = alpha * l + p.sum(axis=1)
            acc = alpha[:, None] * acc + np.einsum("ij,jv->iv", p, V[k0:k0 + block_size])
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    return out
'''),
    Right("flash_attention", "measures its own peak with tracemalloc (start, reset_peak, stop) and prints it", '''
import tracemalloc

def flash_attention(Q, K, V, block_size):
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = np.zeros((Q.shape[0], V.shape[1]))
    for q0 in range(0, Q.shape[0], block_size):
        q = Q[q0:q0 + block_size] / np.sqrt(Q.shape[1])
        m = np.full(len(q), -np.inf)
        l = np.zeros(len(q))
        acc = np.zeros((len(q), V.shape[1]))
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            l = np.exp(m - m_new) * l + p.sum(axis=1)
            acc = np.exp(m - m_new)[:, None] * acc + p @ V[k0:k0 + block_size]
            m = m_new
        out[q0:q0 + block_size] = acc / l[:, None]
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"flash_attention: peak {peak / 1e6:.3f} MB")
    return out
''', note="stdout"),
    Right("flash_attention", "float64 then cast back", '''
def flash_attention(Q, K, V, block_size):
    Q64, K64, V64 = (a.astype(np.float64) for a in (Q, K, V))
    scale = Q.shape[1] ** -0.5
    out = np.empty((Q.shape[0], V.shape[1]))
    for i in range(0, Q.shape[0], block_size):
        q = Q64[i:i + block_size] * scale
        m = np.full(q.shape[0], -np.inf)
        l = np.zeros(q.shape[0])
        acc = np.zeros((q.shape[0], V.shape[1]))
        for j in range(0, K.shape[0], block_size):
            s = q @ K64[j:j + block_size].T
            m_new = np.maximum(m, s.max(axis=1))
            p = np.exp(s - m_new[:, None])
            r = np.exp(m - m_new)
            l = r * l + p.sum(axis=1)
            acc = r[:, None] * acc + p @ V64[j:j + block_size]
            m = m_new
        out[i:i + block_size] = acc / l[:, None]
    return out.astype(Q.dtype)
'''),
    Right("flash_attention", "a helper that updates the state, a print to stderr", '''
import sys

def _update(state, s, v):
    m, l, acc = state
    m_new = np.maximum(m, s.max(axis=1))
    alpha = np.exp(m - m_new)
    p = np.exp(s - m_new[:, None])
    return m_new, alpha * l + p.sum(axis=1), alpha[:, None] * acc + p @ v

def flash_attention(Q, K, V, block_size):
    print(f"flash_attention: {Q.shape[0]} queries, {K.shape[0]} keys, tiles of {block_size}",
          file=sys.stderr)
    d_k = Q.shape[-1]
    rows = []
    for q0 in range(0, len(Q), block_size):
        q = Q[q0:q0 + block_size]
        state = (np.full(len(q), -np.inf), np.zeros(len(q)), np.zeros((len(q), V.shape[-1])))
        for k0 in range(0, len(K), block_size):
            state = _update(state, q @ K[k0:k0 + block_size].T / np.sqrt(d_k), V[k0:k0 + block_size])
        rows.append(state[2] / state[1][:, None])
    return np.concatenate(rows)
''', note="stderr"),
    Right("flash_attention", "a class with __call__ merging per-tile softmax results", '''
class Flash:
    def __call__(self, Q, K, V, block_size):
        c = 1 / np.sqrt(Q.shape[-1])
        out = np.zeros((Q.shape[0], V.shape[-1]))
        for q0 in range(0, Q.shape[0], block_size):
            q = Q[q0:q0 + block_size]
            m = np.full(q.shape[0], -np.inf)
            l = np.zeros(q.shape[0])
            acc = np.zeros((q.shape[0], V.shape[-1]))
            for k0 in range(0, K.shape[0], block_size):
                s = c * (q @ K[k0:k0 + block_size].T)
                m_t = s.max(axis=1)
                p = np.exp(s - m_t[:, None])          # the tile's own softmax numerator
                l_t, acc_t = p.sum(axis=1), p @ V[k0:k0 + block_size]
                m_new = np.maximum(m, m_t)
                a, b = np.exp(m - m_new), np.exp(m_t - m_new)
                l = a * l + b * l_t
                acc = a[:, None] * acc + b[:, None] * acc_t
                m = m_new
            out[q0:q0 + block_size] = acc / l[:, None]
        return out

flash_attention = Flash()
'''),
    Right("flash_attention", "log-sum-exp kept with np.logaddexp, warnings.warn", '''
import warnings

def flash_attention(Q, K, V, block_size):
    if block_size > max(Q.shape[0], K.shape[0]):
        warnings.warn("block_size is larger than the sequence")
    T_q, d_k = Q.shape
    out = np.zeros((T_q, V.shape[1]))
    for q0 in range(0, T_q, block_size):
        q = Q[q0:q0 + block_size]
        lse = np.full(len(q), -np.inf)              # log of the running normaliser
        o = np.zeros((len(q), V.shape[1]))          # normalised by exp(lse) at every step
        for k0 in range(0, K.shape[0], block_size):
            s = q @ K[k0:k0 + block_size].T / np.sqrt(d_k)
            top = s.max(axis=1)
            tile_lse = top + np.log(np.exp(s - top[:, None]).sum(axis=1))
            new_lse = np.logaddexp(lse, tile_lse)
            o = np.exp(lse - new_lse)[:, None] * o + np.exp(s - new_lse[:, None]) @ V[k0:k0 + block_size]
            lse = new_lse
        out[q0:q0 + block_size] = o
    return out
''', note="UserWarning"),

    # ------------------------------------------------------------------ row_from_lse
    Right("row_from_lse", "a loop over the keys, math.exp", '''
import math

def row_from_lse(q, K, lse):
    d_k = len(q)
    weights = np.empty(len(K))
    for j in range(len(K)):
        weights[j] = math.exp(float(K[j] @ q) / math.sqrt(d_k) - lse)
    return weights
'''),
    Right("row_from_lse", "einsum", '''
def row_from_lse(q, K, lse):
    return np.exp(np.einsum("jd,d->j", K, q) / np.sqrt(q.shape[-1]) - lse)
'''),
    Right("row_from_lse", "float64 then cast back", '''
def row_from_lse(q, K, lse):
    s = K.astype(np.float64) @ q.astype(np.float64) / np.sqrt(q.size)
    return np.exp(s - np.float64(lse)).astype(q.dtype)
'''),
    Right("row_from_lse", "lse brought inside the scale, a print to stdout", '''
def row_from_lse(q, K, lse):
    root = np.sqrt(q.shape[0])
    weights = np.exp((K @ q - lse * root) / root)
    print("recovered", len(weights), "weights, sum", weights.sum())
    return weights
''', note="stdout"),
    Right("row_from_lse", "a helper named check, warnings.warn for a partial row", '''
import warnings

def check(q, K):
    if K.shape[-1] != q.shape[-1]:
        raise ValueError("q and the keys have different d_k")

def row_from_lse(q, K, lse):
    check(q, K)
    w = np.exp(np.dot(K, q) / np.sqrt(len(q)) - lse)
    if w.sum() < 0.999:
        warnings.warn(f"these keys hold {w.sum():.3f} of the row")
    return w
''', note="UserWarning"),
    Right("row_from_lse", "a class with __call__, log-weights first", '''
class RowFromLse:
    def log_weights(self, q, K, lse):
        return (K * q).sum(axis=1) / np.sqrt(q.shape[0]) - lse

    def __call__(self, q, K, lse):
        return np.exp(self.log_weights(q, K, lse))

row_from_lse = RowFromLse()
'''),
]

# Chapter 7 compiles loops with Numba: a learner may well hand in @njit kernels (they compile
# on the first call of each dtype, a few seconds in the grading worker). Only where Numba is
# installed (it is optional).
if importlib.util.find_spec("numba") is not None:
    RIGHT += [
        Right("online_softmax_stats", "a Numba @njit kernel, loops over rows and keys", '''
import math
from numba import njit

@njit
def online_softmax_stats(x, block_size):
    T_q, T_k = x.shape
    m = np.full(T_q, -np.inf)
    l = np.zeros(T_q)
    for i in range(T_q):
        for k0 in range(0, T_k, block_size):
            stop = min(k0 + block_size, T_k)
            top = m[i]
            for j in range(k0, stop):
                top = max(top, x[i, j])
            total = 0.0
            for j in range(k0, stop):
                total += math.exp(x[i, j] - top)
            l[i] = l[i] * math.exp(m[i] - top) + total
            m[i] = top
    return m, l
'''),
        Right("flash_attention", "a Numba @njit kernel, loops over rows and keys", '''
import math
from numba import njit

@njit
def flash_attention(Q, K, V, block_size):
    T_q, d_k = Q.shape
    T_k, d_v = V.shape
    scale = 1.0 / math.sqrt(d_k)
    out = np.zeros((T_q, d_v))
    s = np.empty(block_size)
    for q0 in range(0, T_q, block_size):
        for i in range(q0, min(q0 + block_size, T_q)):
            m, l = -np.inf, 0.0
            acc = np.zeros(d_v)
            for k0 in range(0, T_k, block_size):
                stop = min(k0 + block_size, T_k)
                top = m
                for j in range(k0, stop):
                    dot = 0.0
                    for c in range(d_k):
                        dot += Q[i, c] * K[j, c]
                    s[j - k0] = dot * scale
                    top = max(top, s[j - k0])
                alpha = math.exp(m - top)
                l *= alpha
                for c in range(d_v):
                    acc[c] *= alpha
                for j in range(k0, stop):
                    p = math.exp(s[j - k0] - top)
                    l += p
                    for c in range(d_v):
                        acc[c] += p * V[j, c]
                m = top
            for c in range(d_v):
                out[i, c] = acc[c] / l
    return out
'''),
    ]
