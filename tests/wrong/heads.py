"""04-heads: wrong kv_head_for, grouped_query_attention and kv_cache_bytes."""
from . import Wrong

WRONG = [
    # GQA head mapping by tile instead of repeat
    Wrong("kv_head_for", "GQA head mapping by tile instead of repeat", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    # the kv heads take turns: 0, 1, 0, 1, ...
    return q_head % n_kv_heads
'''),
    Wrong("kv_head_for", "GQA head mapping by tile instead of repeat", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    mapping = np.tile(np.arange(n_kv_heads), group)
    return int(mapping[q_head])
'''),
    Wrong("grouped_query_attention", "GQA head mapping by tile instead of repeat", '''
def grouped_query_attention(Q, K, V):
    group = Q.shape[0] // K.shape[0]
    K = np.tile(K, (group, 1, 1))
    V = np.tile(V, (group, 1, 1))
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    return softmax(S, axis=-1) @ V
'''),
        Wrong("grouped_query_attention", "GQA head mapping by tile instead of repeat", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    H_kv = K.shape[0]
    G = H_q // H_kv
    Qg = Q.reshape(G, H_kv, T_q, d)            # groups of query heads
    S = np.einsum("gkqd,ktd->gkqt", Qg, K) / np.sqrt(d)
    out = np.einsum("gkqt,ktv->gkqv", softmax(S), V)
    return out.reshape(H_q, T_q, V.shape[-1])
'''),
    # divided by the number of kv heads instead of the group size
    Wrong("kv_head_for", "divided by the number of kv heads instead of the group size", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return q_head // n_kv_heads
'''),
    # group index rounded up instead of down
    Wrong("kv_head_for", "group index rounded up instead of down", '''
import math

def kv_head_for(q_head, n_q_heads, n_kv_heads):
    heads_per_group = n_q_heads / n_kv_heads
    return math.ceil(q_head / heads_per_group)
'''),
    Wrong("kv_head_for", "group index rounded up instead of down", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return int(round(q_head * n_kv_heads / n_q_heads))
'''),
    # every query head reads kv head 0
    Wrong("grouped_query_attention", "every query head reads kv head 0", '''
def grouped_query_attention(Q, K, V):
    # K and V broadcast over the query heads
    scores = Q @ K[0].T / np.sqrt(Q.shape[-1])
    return softmax(scores, axis=-1) @ V[0]
'''),
        # query heads read the wrong kv heads
    Wrong("grouped_query_attention", "query heads read the wrong kv heads", '''
def grouped_query_attention(Q, K, V):
    H_q, H_kv = Q.shape[0], K.shape[0]
    out = []
    for h in range(H_q):
        j = h // H_kv
        if j >= H_kv:
            j = H_kv - 1
        A = softmax(Q[h] @ K[j].T / np.sqrt(Q.shape[2]))
        out.append(A @ V[j])
    return np.array(out)
'''),
    # softmax over the wrong axis
    Wrong("grouped_query_attention", "softmax over the wrong axis", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    S = Q @ np.transpose(K, (0, 2, 1)) / np.sqrt(Q.shape[-1])
    return softmax(S, axis=0) @ V
'''),
        # missing or wrong scale
    Wrong("grouped_query_attention", "missing or wrong scale", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K = np.repeat(K, G, axis=0)
    V = np.repeat(V, G, axis=0)
    return softmax(np.einsum("hqd,hkd->hqk", Q, K)) @ V
'''),
    Wrong("grouped_query_attention", "missing or wrong scale", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    G = H_q // K.shape[0]
    result = []
    for h in range(H_q):
        S = Q[h] @ K[h // G].T / d
        result.append(softmax(S) @ V[h // G])
    return np.stack(result)
'''),
    # unstable softmax (overflow)
    Wrong("grouped_query_attention", "unstable softmax (overflow)", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    S = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    W = np.exp(S)
    W = W / W.sum(axis=-1, keepdims=True)
    return W @ V
'''),
    # a global instead of per-row maximum
    Wrong("grouped_query_attention", "a global instead of per-row maximum", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    S = Q @ np.repeat(K, G, axis=0).transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    E = np.exp(S - S.max())
    return E / E.sum(-1, keepdims=True) @ np.repeat(V, G, axis=0)
'''),
    # weights transposed in the output (A^T V)
    Wrong("grouped_query_attention", "weights transposed in the output (A^T V)", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    out = []
    for h in range(Q.shape[0]):
        A = softmax(Q[h] @ K[h // G].T / np.sqrt(Q.shape[-1]))
        out.append(A.T @ V[h // G])
    return np.stack(out)
'''),
    Wrong("grouped_query_attention", "weights transposed in the output (A^T V)", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K, V = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    A = softmax(np.einsum("hqd,hkd->hqk", Q, K) / np.sqrt(Q.shape[-1]))
    return np.einsum("hqk,hqv->hkv", A, V)
'''),
    # input modified in place
    Wrong("grouped_query_attention", "input modified in place", '''
def grouped_query_attention(Q, K, V):
    Q /= np.sqrt(Q.shape[-1])          # scale once, up front
    G = Q.shape[0] // K.shape[0]
    S = Q @ np.repeat(K, G, axis=0).swapaxes(1, 2)
    return softmax(S) @ np.repeat(V, G, axis=0)
'''),
    # wrong output shape or dtype
    Wrong("grouped_query_attention", "wrong output shape or dtype", '''
def grouped_query_attention(Q, K, V):
    H_kv = K.shape[0]
    G = Q.shape[0] // H_kv
    Qg = Q.reshape(H_kv, G, Q.shape[1], Q.shape[2])
    S = Qg @ K[:, None].swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    return softmax(S) @ V[:, None]           # (H_kv, G, T_q, d_v)
'''),
    Wrong("kv_cache_bytes", "wrong output shape or dtype", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    per_token = 2.0 * n_layers * n_kv_heads * head_dim * bytes_per_value
    return per_token * seq_len * batch
'''),
    # NaN or inf in the output
    Wrong("grouped_query_attention", "NaN or inf in the output", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    S = Q @ np.repeat(K, G, axis=0).transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    W = np.maximum(S, 0)                 # negative scores get no attention
    W = W / W.sum(axis=-1, keepdims=True)
    return W @ np.repeat(V, G, axis=0)
'''),
    # KV cache size missing the factor for keys and values
    Wrong("kv_cache_bytes", "KV cache size missing the factor for keys and values", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    return n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
'''),
    Wrong("kv_cache_bytes", "KV cache size missing the factor for keys and values", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    values_per_token = n_layers * n_kv_heads * head_dim     # one cached vector per kv head
    return int(np.prod([values_per_token, seq_len, batch, bytes_per_value]))
'''),
    # size in GiB instead of bytes
    Wrong("kv_cache_bytes", "size in GiB instead of bytes", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    total = 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
    return total / 1024**3
'''),
    # a factor missing or counted twice in the product
    Wrong("kv_cache_bytes", "a factor missing or counted twice in the product", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    # fp16: 2 bytes per value, for keys and values
    return 2 * 2 * n_layers * n_kv_heads * head_dim * seq_len * batch
'''),
    Wrong("kv_cache_bytes", "a factor missing or counted twice in the product", '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    per_sequence = 2 * n_layers * n_kv_heads * head_dim * seq_len * bytes_per_value
    return per_sequence
'''),
    # group size computed as n_kv_heads // n_q_heads
    Wrong("kv_head_for", "group size computed as n_kv_heads // n_q_heads", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_kv_heads // n_q_heads
    return q_head // group
'''),
    Wrong("kv_head_for", "group size computed as n_kv_heads // n_q_heads", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    heads_per_group = n_kv_heads / n_q_heads
    return int(q_head // heads_per_group)
'''),
    Wrong("grouped_query_attention", "group size computed as n_kv_heads // n_q_heads", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    G = K.shape[0] // H_q          # heads per group
    out = np.zeros((H_q, T_q, V.shape[-1]))
    for h in range(H_q):
        j = h // G
        out[h] = softmax(Q[h] @ K[j].T / np.sqrt(d)) @ V[j]
    return out
'''),
    # missing or wrong scale: sqrt(d_v), and applied twice
    Wrong("grouped_query_attention", "missing or wrong scale", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    d_v = V.shape[-1]
    out = np.empty((H_q, T_q, d_v))
    for h in range(H_q):
        j = kv_head_for(h, H_q, K.shape[0])
        out[h] = softmax(Q[h] @ K[j].T / np.sqrt(d_v)) @ V[j]
    return out
'''),
    Wrong("grouped_query_attention", "missing or wrong scale", '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    G = H_q // K.shape[0]
    Kr = np.repeat(K, G, axis=0) / np.sqrt(d)   # scaled keys
    return softmax(Q @ np.swapaxes(Kr, 1, 2) / np.sqrt(d)) @ np.repeat(V, G, axis=0)
'''),
]

WRONG += [
    # a float instead of an int (issue 21: the notebook asks for a Python int)
    Wrong("kv_head_for", "wrong output shape or dtype", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return q_head // (n_q_heads / n_kv_heads)
'''),
    Wrong("kv_head_for", "wrong output shape or dtype", '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return np.floor(q_head * n_kv_heads / n_q_heads)
'''),
]

WRONG += [
    # K not transposed (rows of Q meet rows of K), as in 01
    Wrong("grouped_query_attention", "K not transposed (rows of Q meet rows of K)", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K_all, V_all = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    scores = Q @ K_all / np.sqrt(Q.shape[-1])
    return softmax(scores, axis=-1) @ V_all
'''),
    Wrong("grouped_query_attention", "K not transposed (rows of Q meet rows of K)", '''
def grouped_query_attention(Q, K, V):
    H_q = Q.shape[0]
    out = []
    for h in range(H_q):
        j = kv_head_for(h, H_q, K.shape[0])
        s = np.matmul(Q[h], K[j]) / np.sqrt(Q.shape[-1])
        out.append(softmax(s) @ V[j])
    return np.stack(out)
'''),
]

WRONG += [
    # softmax left out, and the scale after the softmax, as in 01
    Wrong("grouped_query_attention", "softmax left out (scores used as weights)", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K_all, V_all = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    scores = Q @ K_all.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])
    return scores @ V_all
'''),
    Wrong("grouped_query_attention", "scale applied after the softmax", '''
def grouped_query_attention(Q, K, V):
    G = Q.shape[0] // K.shape[0]
    K_all, V_all = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    A = softmax(Q @ K_all.transpose(0, 2, 1))
    return A @ V_all / np.sqrt(Q.shape[-1])
'''),
    # held-out class: off by one: (q_head + 1) // G
    Wrong('kv_head_for', 'query heads counted from 1 (off by one)', '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    G = n_q_heads // n_kv_heads
    return (q_head + 1) // G
'''),
    # held-out class: output preallocated as zeros_like(Q) (assumes d_v == d)
    Wrong('grouped_query_attention', 'output allocated with the shape of Q', '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    H_kv = K.shape[0]
    out = np.zeros_like(Q)
    for h in range(H_q):
        j = kv_head_for(h, H_q, H_kv)
        out[h] = softmax(Q[h] @ K[j].T / np.sqrt(d)) @ V[j]
    return out
'''),
]
