"""06-variants: softmax_one, sparsemax and linear_attention, written without the catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- softmax_one
    Unseen("softmax_one", "a float64 zero column appended: right values, float64 out for float32 in",
           ("dtype", "float64"), '''
def softmax_one(x):
    zero = np.zeros(x.shape[:-1] + (1,))
    z = np.concatenate([x, zero], axis=-1)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True))[..., :-1]
'''),
    Unseen("softmax_one", "the zero column put first but the last column dropped: shifted by one key",
           ("shift", "off by one", "one key"), '''
def softmax_one(x):
    zero = np.zeros_like(x[..., :1])
    z = np.concatenate([zero, x], axis=-1)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True))[..., :-1]
'''),
    Unseen("softmax_one", "the denominator summed over axis 0",
           ("axis 0", "axis=0", "over the rows"), '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=0, keepdims=True))
'''),
    Unseen("softmax_one", "the row sum without keepdims",
           ("keepdims", "broadcast"), '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    e = np.exp(x - m)
    return e / (np.exp(-m) + e.sum(axis=-1))
'''),
    Unseen("softmax_one", "a softmax scaled by n / (n + 1)",
           ("n / (n + 1)", "n/(n+1)", "constant factor", "factor"), '''
def softmax_one(x):
    n = x.shape[-1]
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) * n / (n + 1)
'''),
    # ------------------------------------------------------------- sparsemax
    Unseen("sparsemax", "the support size without keepdims: take_along_axis fails",
           ("keepdims", "support", "take_along_axis"), '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1)
    c = np.cumsum(z, axis=-1)
    support = np.sum(1 + k * z > c, axis=-1)
    tau = (np.take_along_axis(c, support - 1, axis=-1) - 1) / support
    return np.maximum(x - tau, 0).astype(x.dtype)
'''),
    Unseen("sparsemax", "a row loop keeping the 0-based index of the last support entry, divided by it",
           ("k + 1", "support size", "off by one", "from 0", "counted"), '''
def sparsemax(x):
    out = np.empty_like(x)
    rows = x.reshape(-1, x.shape[-1])
    for r, row in enumerate(rows):
        z = np.sort(row)[::-1]
        c = np.cumsum(z)
        last = 0
        for i in range(len(z)):
            if 1 + (i + 1) * z[i] > c[i]:
                last = i
        tau = (c[last] - 1) / max(last, 1)
        out.reshape(-1, x.shape[-1])[r] = np.maximum(row - tau, 0)
    return out
'''),
    Unseen("sparsemax", "clipped at 0 before the threshold is subtracted",
           ("clip", "negative", "below 0"), '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    c = np.cumsum(z, axis=-1)
    support = np.sum(1 + k * z > c, axis=-1, keepdims=True)
    tau = (np.take_along_axis(c, support - 1, axis=-1) - 1) / support
    return np.maximum(x, 0) - tau
'''),
    Unseen("sparsemax", "k as int64 makes float32 input come back float64",
           ("dtype", "float64"), '''
def sparsemax(x):
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, x.shape[-1] + 1)
    c = np.cumsum(z, axis=-1)
    support = np.sum(1 + k * z > c, axis=-1, keepdims=True)
    tau = (np.take_along_axis(c, support - 1, axis=-1) - 1) / support
    return np.maximum(x - tau, 0)
'''),
    Unseen("sparsemax", "the threshold divided by n instead of by the support size",
           ("support", "threshold", "tau"), '''
def sparsemax(x):
    n = x.shape[-1]
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, n + 1, dtype=x.dtype)
    c = np.cumsum(z, axis=-1)
    support = np.sum(1 + k * z > c, axis=-1, keepdims=True)
    tau = (np.take_along_axis(c, support - 1, axis=-1) - 1) / n
    return np.maximum(x - tau, 0)
'''),
    # ------------------------------------------------------------- linear_attention
    Unseen("linear_attention", "a (T_q,) normaliser divided into (T_q, d_v) without [:, None]",
           ("[:, None]", "broadcast"), '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    numerator = phi_q @ (phi_k.T @ V)
    normaliser = phi_q @ phi_k.sum(axis=0)
    return numerator / normaliser
'''),
    Unseen("linear_attention", "the keys' features summed over the features (axis 1) instead of the keys",
           ("axis 1", "axis=1", "sum over the keys", "axis=0"), '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    z = phi_k.sum(axis=1)
    return (phi_q @ (phi_k.T @ V)) / (phi_q @ z)[:, None]
'''),
    Unseen("linear_attention", "each row divided by the sum of its own query features only",
           ("normaliser", "sum_j phi(k_j)", "own factor"), '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    return (phi_q @ (phi_k.T @ V)) / phi_q.sum(axis=-1, keepdims=True)
'''),
    Unseen("linear_attention", "one normaliser for all queries: the normalisers summed",
           ("one number", "all queries", "constant factor", "same factor"), '''
def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    normaliser = (phi_q @ phi_k.sum(axis=0)).sum()
    return (phi_q @ (phi_k.T @ V)) / normaliser
'''),
    Unseen("linear_attention", "the weight matrix normalised over its columns (the queries)",
           ("over the queries", "axis 0", "axis=0", "columns"), '''
def linear_attention(Q, K, V, feature_map):
    A = feature_map(Q) @ feature_map(K).T
    return A @ V / A.sum(axis=0)[:, None]
'''),
]
