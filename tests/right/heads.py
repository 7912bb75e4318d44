"""04-heads: correct kv_head_for, grouped_query_attention and kv_cache_bytes, in many styles."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ kv_head_for
    Right("kv_head_for", "a loop over the groups", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    for g in range(n_kv_heads):
        if q_head < (g + 1) * group:
            return g
'''),
    Right("kv_head_for", "divmod", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    kv, _position_in_group = divmod(q_head, n_q_heads // n_kv_heads)
    return kv
'''),
    Right("kv_head_for", "float division then int()", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return int(q_head * n_kv_heads / n_q_heads)
'''),
    Right("kv_head_for", "np.repeat of the kv heads, a print to stdout", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    mapping = np.repeat(np.arange(n_kv_heads), n_q_heads // n_kv_heads)
    print("query heads -> kv heads:", mapping)
    return int(mapping[q_head])
''', note="stdout"),
    Right("kv_head_for", "recursion, one group at a time", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    if q_head < group:
        return 0
    return 1 + kv_head_for(q_head - group, n_q_heads - group, n_kv_heads - 1)
'''),
    Right("kv_head_for", "math.floor, warnings.warn for MQA", '''
import math
import warnings

def kv_head_for(q_head, n_q_heads, n_kv_heads):
    if n_kv_heads == 1:
        warnings.warn("multi-query attention: every query head reads kv head 0")
    return math.floor(q_head / (n_q_heads // n_kv_heads))
''', note="UserWarning"),

    # ------------------------------------------------------------------ grouped_query_attention
    Right("grouped_query_attention", "loops over heads and query rows", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    out = np.zeros((H_q, T_q, V.shape[-1]))
    for h in range(H_q):
        j = kv_head_for(h, H_q, K.shape[0])
        for i in range(T_q):
            s = K[j] @ Q[h, i] / np.sqrt(d)
            out[h, i] = softmax(s) @ V[j]
    return out
'''),
    Right("grouped_query_attention", "np.repeat of K and V, then einsum", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K_all = np.repeat(K, G, axis=0)
    V_all = np.repeat(V, G, axis=0)
    S = np.einsum("hqd,hkd->hqk", Q, K_all) / np.sqrt(Q.shape[-1])
    return np.einsum("hqk,hkv->hqv", softmax(S, axis=-1), V_all)
'''),
    Right("grouped_query_attention", "Q reshaped to (H_kv, G, T_q, d), float64 then cast", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    H_kv = K.shape[0]
    q = Q.astype(np.float64).reshape(H_kv, H_q // H_kv, T_q, d)
    S = q @ K.astype(np.float64)[:, None].swapaxes(-1, -2) / np.sqrt(d)
    O = softmax(S) @ V.astype(np.float64)[:, None]
    return O.reshape(H_q, T_q, V.shape[-1]).astype(Q.dtype)
'''),
    Right("grouped_query_attention", "own softmax, a helper named check, a print to stderr", '''
import sys

def check(Q, K, V):
    assert Q.shape[0] % K.shape[0] == 0, "H_kv must divide H_q"
    assert K.shape[:2] == V.shape[:2]
    print(f"GQA: {Q.shape[0]} query heads over {K.shape[0]} kv heads", file=sys.stderr)

def _stable_softmax_rows(S):
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)

def grouped_query_attention(Q, K, V):
    check(Q, K, V)
    heads = []
    for h in range(Q.shape[0]):
        kv = kv_head_for(h, Q.shape[0], K.shape[0])
        A = _stable_softmax_rows(Q[h] @ K[kv].T / np.sqrt(Q.shape[2]))
        heads.append(A @ V[kv])
    return np.stack(heads)
''', note="stderr"),
    Right("grouped_query_attention", "a list of heads and logging.warning", '''
import logging

def grouped_query_attention(Q, K, V):
    H_q, H_kv = Q.shape[0], K.shape[0]
    if H_kv == 1:
        logging.warning("multi-query attention: one kv head for %d query heads", H_q)
    outputs = [softmax(Q[h] @ K[h // (H_q // H_kv)].T / np.sqrt(Q.shape[-1])) @ V[h // (H_q // H_kv)]
               for h in range(H_q)]
    return np.array(outputs)
''', note="stderr"),
    Right("grouped_query_attention", "a class with __call__, log-sum-exp weights", '''
class GQA:
    def weights(self, q, k):
        s = q @ k.T / np.sqrt(q.shape[-1])
        m = s.max(axis=-1, keepdims=True)
        return np.exp(s - m - np.log(np.exp(s - m).sum(axis=-1, keepdims=True)))

    def __call__(self, Q, K, V):
        group = Q.shape[0] // K.shape[0]
        return np.stack([self.weights(Q[h], K[h // group]) @ V[h // group]
                         for h in range(Q.shape[0])])

grouped_query_attention = GQA()
'''),

    # ------------------------------------------------------------------ kv_cache_bytes
    Right("kv_cache_bytes", "math.prod", '''
import math

def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    return math.prod([2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value])
'''),
    Right("kv_cache_bytes", "a loop multiplying the factors", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    total = 2  # a key and a value
    for factor in (n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
        total *= factor
    return total
'''),
    Right("kv_cache_bytes", "np.prod then int()", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    return int(np.prod([2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value]))
'''),
    Right("kv_cache_bytes", "per token, then tokens; prints GiB to stdout", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    per_token = 2 * n_layers * n_kv_heads * head_dim * bytes_per_value
    total = per_token * seq_len * batch
    print(f"KV cache: {total / 2**30:.3f} GiB ({per_token} bytes per token)")
    return total
''', note="stdout"),
    Right("kv_cache_bytes", "functools.reduce, warnings.warn for big caches", '''
import functools
import operator
import warnings

def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    factors = [2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value]
    size = functools.reduce(operator.mul, factors, 1)
    if size > 2**30:
        warnings.warn(f"a KV cache of {size / 2**30:.1f} GiB")
    return size
''', note="UserWarning"),
    Right("kv_cache_bytes", "a helper named check and a class with __call__", '''
def check(*values):
    for v in values:
        if int(v) != v or v <= 0:
            raise ValueError(f"{v} is not a positive integer")

class CacheSize:
    def __call__(self, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
        check(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value)
        keys = n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
        values = keys
        return keys + values

kv_cache_bytes = CacheSize()
'''),
    Right('kv_cache_bytes', 'held-out class: returns np.int64 from np.prod', '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    return np.prod([2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value])
'''),
]
