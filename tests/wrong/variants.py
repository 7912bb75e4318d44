"""06-variants: wrong softmax_one, sparsemax and linear_attention, as learners write them."""
from . import Wrong

WRONG = [
    # --------------------------------------------------------- softmax_one
    Wrong("softmax_one", "softmax-1 stabilised wrongly", '''
def softmax_one(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / (1 + np.sum(e, axis=-1, keepdims=True))
'''),
    Wrong("softmax_one", "softmax-1 stabilised wrongly", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)  # clamp so we never shift upwards
    shifted = np.exp(x - m)
    return shifted / (np.exp(m) + shifted.sum(axis=-1, keepdims=True))
'''),
    Wrong("softmax_one", "softmax-1 stabilised wrongly", '''
def softmax_one(x):
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        m = max(row.max(), 0)
        e = np.exp(row - m)
        out[idx] = e / (1.0 + e.sum())
    return out
'''),
    Wrong("softmax_one", "unstable softmax (overflow)", '''
def softmax_one(x):
    e = np.exp(x)
    return e / (1 + e.sum(axis=-1, keepdims=True))
'''),
    Wrong("softmax_one", "unstable softmax (overflow)", '''
def softmax_one(x):
    # the ordinary stable softmax, then give the null key its share
    m = x.max(axis=-1, keepdims=True)
    p = np.exp(x - m) / np.exp(x - m).sum(axis=-1, keepdims=True)
    s = np.exp(x).sum(axis=-1, keepdims=True)
    return p * s / (1 + s)
'''),
    Wrong("softmax_one", "the 1 in the denominator forgotten (plain softmax)", '''
def softmax_one(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Wrong("softmax_one", "a global instead of per-row maximum", '''
def softmax_one(x):
    m = np.maximum(np.max(x), 0)  # one shift for the whole array
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))
'''),
    Wrong("softmax_one", "softmax-1 over the wrong axis", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=0, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=0, keepdims=True))
'''),
    Wrong("softmax_one", "input modified in place", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    x -= m
    np.exp(x, out=x)
    return x / (np.exp(-m) + x.sum(axis=-1, keepdims=True))
'''),
    Wrong("softmax_one", "wrong output shape or dtype", '''
def softmax_one(x):
    out = np.zeros(x.shape)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        m = max(row.max(), 0)
        e = np.exp(row - m)
        out[idx] = e / (np.exp(-m) + e.sum())
    return out
'''),
    # ----------------------------------------------------------- sparsemax
    Wrong("sparsemax", "sparsemax with k counted from 0", '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    cs = np.cumsum(z, axis=-1)
    k = np.arange(x.shape[-1])
    support = (1 + k * z > cs).sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(cs, support - 1, axis=-1) - 1) / support
    return np.maximum(x - tau, 0).astype(x.dtype)
'''),
    Wrong("sparsemax", "sparsemax threshold from the whole row", '''
def sparsemax(x):
    z = np.sort(x, axis=-1)
    cs = np.cumsum(z, axis=-1)
    k = np.arange(1, x.shape[-1] + 1)
    support = np.sum(1 + k * z > cs, axis=-1, keepdims=True)
    tau = (np.take_along_axis(cs, support - 1, axis=-1) - 1) / support
    return np.maximum(x - tau, 0).astype(x.dtype)
'''),
    Wrong("sparsemax", "sparsemax threshold from the whole row", '''
def sparsemax(x):
    # shift every row so that it sums to 1, then cut off the negative part
    tau = (x.sum(axis=-1, keepdims=True) - 1) / x.shape[-1]
    return np.maximum(x - tau, 0)
'''),
    Wrong("sparsemax", "sparsemax threshold wrong", '''
def sparsemax(x):
    # every score within 1 of the row's best survives
    tau = x.max(axis=-1, keepdims=True) - 1
    return np.maximum(x - tau, 0)
'''),
    Wrong("sparsemax", "sparsemax threshold wrong", '''
def sparsemax(x):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        z = np.sort(x[idx])[::-1]
        cs = np.cumsum(z)
        k_z = 0
        for k in range(1, len(z) + 1):
            if 1 + k * z[k - 1] > cs[k - 1]:
                k_z = k
        tau = (cs[k_z] - 1) / k_z
        out[idx] = np.maximum(x[idx] - tau, 0)
    return out
'''),
    Wrong("sparsemax", "sparsemax weights in sorted order", '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cs = np.cumsum(z, axis=-1)
    k_z = np.sum(1 + k * z > cs, axis=-1, keepdims=True)
    tau = ((np.take_along_axis(cs, k_z - 1, axis=-1) - 1) / k_z).astype(x.dtype)
    return np.maximum(z - tau, 0)
'''),
    Wrong("sparsemax", "sparsemax without the clip at 0", '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cs = np.cumsum(z, axis=-1)
    k_z = np.sum(1 + k * z > cs, axis=-1, keepdims=True)
    tau = ((np.take_along_axis(cs, k_z - 1, axis=-1) - 1) / k_z).astype(x.dtype)
    return x - tau
'''),
    Wrong("sparsemax", "sparsemax over the wrong axis", '''
def sparsemax(x):
    z = -np.sort(-x, axis=0)
    k = np.arange(1, x.shape[0] + 1, dtype=x.dtype).reshape((-1,) + (1,) * (x.ndim - 1))
    cs = np.cumsum(z, axis=0)
    k_z = np.sum(1 + k * z > cs, axis=0, keepdims=True)
    tau = ((np.take_along_axis(cs, k_z - 1, axis=0) - 1) / k_z).astype(x.dtype)
    return np.maximum(x - tau, 0)
'''),
    Wrong("sparsemax", "input modified in place", '''
def sparsemax(x):
    original = x.copy()
    x.sort(axis=-1)
    z = x[..., ::-1]
    k = np.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    cs = np.cumsum(z, axis=-1)
    k_z = np.sum(1 + k * z > cs, axis=-1, keepdims=True)
    tau = ((np.take_along_axis(cs, k_z - 1, axis=-1) - 1) / k_z).astype(x.dtype)
    return np.maximum(original - tau, 0)
'''),
    Wrong("sparsemax", "wrong output shape or dtype", '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1)
    cs = np.cumsum(z, axis=-1)
    k_z = np.sum(1 + k * z > cs, axis=-1, keepdims=True)
    tau = (np.take_along_axis(cs, k_z - 1, axis=-1) - 1) / k_z
    return np.maximum(x - tau, 0)
'''),
    # ---------------------------------------------------- linear_attention
    Wrong("linear_attention", "linear attention without its normaliser", '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    return phi_q @ (phi_k.T @ V)  # associativity: O(N) instead of O(N^2)
'''),
    Wrong("linear_attention", "linear attention without its normaliser", '''
def linear_attention(Q, K, V, feature_map):
    T_q, T_k = Q.shape[0], K.shape[0]
    out = np.zeros((T_q, V.shape[1]))
    for i in range(T_q):
        phi_q = feature_map(Q[i])
        for j in range(T_k):
            out[i] += (phi_q @ feature_map(K[j])) * V[j]
    return out / T_k  # average over the keys
'''),
    Wrong("linear_attention", "linear attention without its normaliser", '''
def linear_attention(Q, K, V, feature_map):
    phi_q = feature_map(Q)
    phi_k = feature_map(K)
    S = np.einsum("kr,kv->rv", phi_k, V)
    Z = phi_k.sum()
    return np.einsum("qr,rv->qv", phi_q, S) / Z
'''),
    Wrong("linear_attention", "feature map applied to only one of Q or K", '''
def linear_attention(Q, K, V, feature_map):
    phi_k = feature_map(K)
    kv = phi_k.T @ V
    z = phi_k.sum(axis=0)
    return (Q @ kv) / (Q @ z)[:, None]
'''),
    Wrong("linear_attention", "feature map applied to only one of Q or K", '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    numerator = phi_q @ (phi_k.T @ V)
    denominator = Q @ K.sum(axis=0)
    return numerator / denominator[:, None]
'''),
    Wrong("linear_attention", "feature map applied to V", '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k, phi_v = feature_map(Q), feature_map(K), feature_map(V)
    return (phi_q @ (phi_k.T @ phi_v)) / (phi_q @ phi_k.sum(axis=0))[:, None]
'''),
    Wrong("linear_attention", "weights normalised over the queries instead of the keys", '''
def linear_attention(Q, K, V, feature_map):
    A = feature_map(Q) @ feature_map(K).T  # (T_q, T_k) similarities
    A = A / A.sum(axis=0)
    return A @ V
'''),
    Wrong("linear_attention", "softmax attention instead of linear attention", '''
def linear_attention(Q, K, V, feature_map):
    S = feature_map(Q) @ feature_map(K).T
    W = np.exp(S - S.max(axis=1, keepdims=True))
    W /= W.sum(axis=1, keepdims=True)
    return W @ V
'''),
    Wrong("linear_attention", "wrong output shape or dtype", '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    kv = V.T @ phi_k                      # (d_v, r)
    z = phi_k.sum(axis=0)
    return (kv @ phi_q.T) / (phi_q @ z)    # (d_v, T_q)
'''),
    # n instead of 1 in the softmax-1 denominator
    Wrong("softmax_one", "n instead of 1 in the softmax-1 denominator", '''
def softmax_one(x):
    e = np.exp(x)
    n = x.shape[-1]
    return e / (n + e.sum(axis=-1, keepdims=True))   # one extra exp(0) per key
'''),
    Wrong("softmax_one", "n instead of 1 in the softmax-1 denominator", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    zeros = np.exp(np.zeros_like(x) - m)      # the implicit zero scores
    return e / (zeros.sum(axis=-1, keepdims=True) + e.sum(axis=-1, keepdims=True))
'''),
    # sparsemax with k counted from 0
    Wrong("sparsemax", "sparsemax with k counted from 0", '''
def sparsemax(x):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        z = np.sort(x[idx])[::-1]
        cs = np.cumsum(z)
        k_z = 0
        for k in range(len(z)):            # k = 0, 1, ..., n - 1
            if 1 + k * z[k] > cs[k]:
                k_z = k
        tau = (cs[k_z] - 1) / k_z
        out[idx] = np.maximum(x[idx] - tau, 0)
    return out
'''),
    # sparsemax sorted in ascending order
    Wrong("sparsemax", "sparsemax threshold from the whole row", '''
def sparsemax(x):
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        z = np.sort(x[idx])
        cs = np.cumsum(z)
        k_z = 1
        for k in range(1, len(z) + 1):
            if 1 + k * z[k - 1] > cs[k - 1]:
                k_z = k
        tau = (cs[k_z - 1] - 1) / k_z
        out[idx] = np.maximum(x[idx] - tau, 0)
    return out
'''),
    # feature_map argument ignored
    Wrong("linear_attention", "feature_map argument ignored", '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = elu_plus_one(Q), elu_plus_one(K)     # the map from the paper
    return (phi_q @ (phi_k.T @ V)) / (phi_q @ phi_k.sum(axis=0))[:, None]
'''),
    Wrong("linear_attention", "feature_map argument ignored", '''
def linear_attention(Q, K, V, feature_map=None):
    phi_q = np.maximum(Q, 0) + 1e-3
    phi_k = np.maximum(K, 0) + 1e-3
    A = phi_q @ phi_k.T
    return (A / A.sum(axis=1, keepdims=True)) @ V
'''),
    # feature map applied to the scores instead of to Q and K
    Wrong("linear_attention", "feature map applied to the scores instead of to Q and K", '''
def linear_attention(Q, K, V, feature_map):
    weights = feature_map(Q @ K.T)        # phi replaces exp
    weights = weights / weights.sum(axis=-1, keepdims=True)
    return weights @ V
'''),
    Wrong("linear_attention", "feature map applied to the scores instead of to Q and K", '''
def linear_attention(Q, K, V, feature_map):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    A = feature_map(S)
    return A @ V / A.sum(axis=1)[:, None]
'''),
    # your code assumes 2-D input
    Wrong("softmax_one", "your code assumes 2-D input", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=1), 0)[:, None]
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=1)[:, None])
'''),
    Wrong("sparsemax", "your code assumes 2-D input", '''
def sparsemax(x):
    out = np.zeros_like(x)
    for i, row in enumerate(x):
        z = np.sort(row)[::-1]
        k = np.arange(1, len(z) + 1)
        cs = np.cumsum(z)
        k_z = k[1 + k * z > cs].max()
        tau = (cs[k_z - 1] - 1) / k_z
        out[i] = np.maximum(row - tau, 0)
    return out
'''),
]
