"""04-heads: kv_head_for, grouped_query_attention and kv_cache_bytes, written without the
catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- kv_head_for
    Unseen("kv_head_for", "true division: a float head index",
           ("float", "//", "integer"), '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    return q_head / group
'''),
    Unseen("kv_head_for", "q_head // n_q_heads * n_kv_heads: always 0",
           ("always 0", "0 for every", "every query head reads kv head 0", "all query heads"), '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return q_head // n_q_heads * n_kv_heads
'''),
    Unseen("kv_head_for", "the position inside the group (q_head % G) instead of the group",
           ("% G", "within", "inside the group", "modulo", "position in"), '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group_size = n_q_heads // n_kv_heads
    return q_head % group_size
'''),
    Unseen("kv_head_for", "rounded to the nearest kv head instead of down",
           ("round", "nearest", "rounded up"), '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    return int(round(q_head * n_kv_heads / n_q_heads))
'''),
    Unseen("kv_head_for", "query heads counted from the end",
           ("reverse", "from the end", "n_q_heads - 1", "backwards"), '''
def kv_head_for(q_head, n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    return (n_q_heads - 1 - q_head) // group
'''),
    # ------------------------------------------------------------- grouped_query_attention
    Unseen("grouped_query_attention",
           "queries grouped as (H_kv, G, T_q, d) against K without [:, None]: a raw broadcast error",
           ("broadcast", "[:, None]", "K[:, None]"), '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    H_kv = K.shape[0]
    G = H_q // H_kv
    q = Q.reshape(H_kv, G, T_q, d)
    S = q @ K.transpose(0, 2, 1) / np.sqrt(d)
    return (softmax(S) @ V).reshape(H_q, T_q, V.shape[-1])
'''),
    Unseen("grouped_query_attention", "the loop runs over the kv heads only: the other query heads stay 0",
           ("only the first", "are 0", "all 0", "zero"), '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    out = np.zeros((H_q, T_q, V.shape[-1]))
    for h in range(K.shape[0]):
        S = Q[h] @ K[h].T / np.sqrt(d)
        out[h] = softmax(S) @ V[h]
    return out
'''),
    Unseen("grouped_query_attention", "keys from the right kv head, values from another (h % H_kv)",
           ("values", "V[", "value head"), '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    H_kv = K.shape[0]
    G = H_q // H_kv
    out = np.empty((H_q, T_q, V.shape[-1]))
    for h in range(H_q):
        S = Q[h] @ K[h // G].T / np.sqrt(d)
        out[h] = softmax(S) @ V[h % H_kv]
    return out
'''),
    Unseen("grouped_query_attention", "exp normalised over the heads (axis 0) of the stacked scores",
           ("over the heads", "axis 0", "axis=0"), '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    G = H_q // K.shape[0]
    K_all, V_all = np.repeat(K, G, axis=0), np.repeat(V, G, axis=0)
    S = Q @ K_all.transpose(0, 2, 1) / np.sqrt(d)
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return (e / e.sum(axis=0, keepdims=True)) @ V_all
'''),
    Unseen("grouped_query_attention", "returned as (T_q, H_q, d_v): the token axis first",
           ("(T_q, H_q", "T_q, H_q", "transpose"), '''
def grouped_query_attention(Q, K, V):
    H_q, T_q, d = Q.shape
    G = H_q // K.shape[0]
    heads = []
    for h in range(H_q):
        S = Q[h] @ K[h // G].T / np.sqrt(d)
        heads.append(softmax(S) @ V[h // G])
    return np.stack(heads, axis=1)
'''),
    # ------------------------------------------------------------- kv_cache_bytes
    Unseen("kv_cache_bytes", "np.prod with dtype=np.int32 overflows on large configurations",
           ("overflow", "int32", "wrap"), '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    sizes = [2, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value]
    return int(np.prod(sizes, dtype=np.int32))
'''),
    Unseen("kv_cache_bytes", "bits counted: a factor of 8 and no factor 2 for K and V",
           ("factor of 4", "4 times", "bits"), '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    bits_per_value = 8 * bytes_per_value
    return n_layers * n_kv_heads * head_dim * seq_len * batch * bits_per_value
'''),
    Unseen("kv_cache_bytes", "the batch left out",
           ("batch", "missing"), '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    per_token = 2 * n_layers * n_kv_heads * head_dim * bytes_per_value
    return per_token * seq_len
'''),
    Unseen("kv_cache_bytes", "the next token counted too: seq_len + 1",
           ("seq_len + 1", "one token", "off by one"), '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    return 2 * n_layers * n_kv_heads * head_dim * (seq_len + 1) * batch * bytes_per_value
'''),
    Unseen("kv_cache_bytes", "queries cached too: a factor 3 instead of 2 (3/2 of the bytes)",
           ("3/2", "1.5", "factor of 3", "three"), '''
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    q_k_v = 3
    return q_k_v * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
'''),
]
