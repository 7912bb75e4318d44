"""06-variants: correct softmax_one, sparsemax and linear_attention, in many styles
(NumPy only: not attncore.softmax_one or attncore.sparsemax, the exercise's rule)."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ softmax_one
    Right("softmax_one", "loops over every row with np.ndindex", '''
def softmax_one(x):
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        m = max(row.max(), 0)
        e = np.exp(row - m)
        out[index] = e / (np.exp(-m) + e.sum())
    return out
'''),
    Right("softmax_one", "float64 then cast back", '''
def softmax_one(x):
    z = x.astype(np.float64)
    m = np.maximum(z.max(axis=-1, keepdims=True), 0.0)
    e = np.exp(z - m)
    return (e / (np.exp(-m) + e.sum(axis=-1, keepdims=True))).astype(x.dtype)
'''),
    Right("softmax_one", "log space with np.logaddexp, the shift kept apart", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    log_s = np.log(np.exp(x - m).sum(axis=-1, keepdims=True))     # log sum_k exp(x_k - m)
    return np.exp((x - m) - np.logaddexp(-m, log_s))               # log(exp(-m) + s): small
'''),
    Right("softmax_one", "an extra key of score 0, a helper named check, a print to stderr", '''
import sys

def check(x):
    if not np.isfinite(x).all():
        raise ValueError("scores must be finite")
    print("softmax_one on", x.shape, x.dtype, file=sys.stderr)

def softmax_one(x):
    check(x)
    padded = np.concatenate([x, np.zeros(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)
    e = np.exp(padded - padded.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True))[..., :-1]
''', note="stderr"),
    Right("softmax_one", "pure Python per row, warnings.warn", '''
import math
import warnings

def softmax_one(x):
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows.tolist()):
        m = max(0.0, max(row))
        if m > 700:
            warnings.warn("scores above 700: shifting by the row maximum")
        exps = [math.exp(v - m) for v in row]
        denominator = math.exp(-m) + sum(exps)
        out[r] = [e / denominator for e in exps]
    return out.reshape(x.shape)
''', note="UserWarning"),
    Right("softmax_one", "np.row_stack of rows (DeprecationWarning), a class with __call__", '''
class SoftmaxOne:
    @staticmethod
    def row(v):
        m = np.clip(v.max(), 0, None)
        e = np.exp(v - m)
        return e / (np.exp(-m) + e.sum())

    def __call__(self, x):
        rows = x.reshape(-1, x.shape[-1])
        return np.row_stack([self.row(v) for v in rows]).reshape(x.shape)

softmax_one = SoftmaxOne()
''', note="DeprecationWarning"),

    # ------------------------------------------------------------------ sparsemax
    Right("sparsemax", "pure Python per row: sorted, the support, the threshold", '''
def sparsemax(x):
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows.tolist()):
        z = sorted(row, reverse=True)
        total, c_support, k_support = 0.0, 0.0, 0
        for k, z_k in enumerate(z, start=1):
            total += z_k
            if 1 + k * z_k > total:
                k_support, c_support = k, total
        tau = (c_support - 1) / k_support
        out[r] = [max(v - tau, 0.0) for v in row]
    return out.reshape(x.shape)
'''),
    Right("sparsemax", "float64 then cast back", '''
def sparsemax(x):
    z = np.sort(x.astype(np.float64), axis=-1)[..., ::-1]
    k = np.arange(1, x.shape[-1] + 1)
    c = np.cumsum(z, axis=-1)
    k_z = (1 + k * z > c).sum(axis=-1, keepdims=True)
    tau = (np.take_along_axis(c, k_z - 1, axis=-1) - 1) / k_z
    return np.maximum(x.astype(np.float64) - tau, 0).astype(x.dtype)
'''),
    Right("sparsemax", "the threshold by bisection", '''
def sparsemax(x):
    lo = x.max(axis=-1, keepdims=True) - 1.0     # sum(max(x - lo, 0)) >= 1
    hi = x.max(axis=-1, keepdims=True)           # sum(max(x - hi, 0)) = 0
    for _ in range(200):
        mid = (lo + hi) / 2
        too_low = np.maximum(x - mid, 0).sum(axis=-1, keepdims=True) > 1
        lo, hi = np.where(too_low, mid, lo), np.where(too_low, hi, mid)
    return np.maximum(x - (lo + hi) / 2, 0).astype(x.dtype)
'''),
    Right("sparsemax", "cumsum and the last True index, a print to stdout", '''
def sparsemax(x):
    n = x.shape[-1]
    z = -np.sort(-x, axis=-1)
    k = np.arange(1, n + 1).astype(x.dtype)
    c = np.cumsum(z, axis=-1)
    inside = 1 + k * z > c
    last = n - 1 - np.argmax(inside[..., ::-1], axis=-1)     # index of the last True
    k_z = (last + 1)[..., None]
    tau = ((np.take_along_axis(c, k_z - 1, axis=-1) - 1) / k_z).astype(x.dtype)
    print("support sizes:", k_z.ravel())
    return np.maximum(x - tau, 0)
''', note="stdout"),
    Right("sparsemax", "recursion over the leading axes, warnings.warn", '''
import warnings

def sparsemax(x):
    if x.ndim > 1:
        return np.stack([sparsemax(row) for row in x])
    z = np.sort(x)[::-1]
    c = np.cumsum(z)
    support = [k for k in range(1, len(z) + 1) if 1 + k * z[k - 1] > c[k - 1]]
    k_z = max(support)
    if k_z == 1:
        warnings.warn("a one-hot row")
    tau = (c[k_z - 1] - 1) / k_z
    return np.maximum(x - tau, 0).astype(x.dtype)
''', note="UserWarning"),
    Right("sparsemax", "a class with __call__ and np.apply_along_axis", '''
class Sparsemax:
    def tau(self, row):
        z = np.sort(row)[::-1]
        c = np.cumsum(z)
        k = np.arange(1, row.size + 1)
        k_z = np.nonzero(1 + k * z > c)[0][-1] + 1
        return (c[k_z - 1] - 1) / k_z

    def __call__(self, x):
        return np.apply_along_axis(lambda row: np.maximum(row - self.tau(row), 0), -1, x).astype(x.dtype)

sparsemax = Sparsemax()
'''),

    # ------------------------------------------------------------------ linear_attention
    Right("linear_attention", "the (T_q, T_k) weight matrix", '''
def linear_attention(Q, K, V, feature_map):
    A = feature_map(Q) @ feature_map(K).T            # (T_q, T_k), all positive
    A = A / A.sum(axis=-1, keepdims=True)            # each query's weights sum to 1
    return A @ V
'''),
    Right("linear_attention", "einsum, right-hand form", '''
def linear_attention(Q, K, V, feature_map):
    pq, pk = feature_map(Q), feature_map(K)
    numerator = np.einsum("ir,jr,jv->iv", pq, pk, V)
    denominator = np.einsum("ir,jr->i", pq, pk)
    return numerator / denominator[:, None]
'''),
    Right("linear_attention", "a loop over the queries", '''
def linear_attention(Q, K, V, feature_map):
    phi_k = feature_map(K)
    phi_q = feature_map(Q)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        w = phi_k @ phi_q[i]                          # (T_k,)
        out[i] = w @ V / w.sum()
    return out
'''),
    Right("linear_attention", "a class with __call__, a generator of rows", '''
class LinearAttention:
    def __call__(self, Q, K, V, feature_map):
        phi_k = feature_map(K)
        summary, z = phi_k.T @ V, phi_k.sum(axis=0)
        return np.array([p @ summary / (p @ z) for p in feature_map(Q)])

linear_attention = LinearAttention()
'''),
    Right("linear_attention", "warnings.warn and np.divide", '''
import warnings

def linear_attention(Q, K, V, feature_map):
    phi_q, phi_k = feature_map(Q), feature_map(K)
    normaliser = phi_q @ phi_k.sum(axis=0, keepdims=True).T     # (T_q, 1)
    if normaliser.min() < 1e-2:
        warnings.warn("a query with a tiny normaliser")
    warnings.warn("linear attention is not softmax attention")
    return np.divide(phi_q @ (phi_k.T @ V), normaliser)
''', note="UserWarning"),
    Right("linear_attention", "float64 then cast, a helper named check, a print to stderr", '''
import sys

def check(Q, K, V):
    assert Q.shape[1] == K.shape[1] and K.shape[0] == V.shape[0], "shapes do not fit"
    print(f"linear attention: T_q={len(Q)}, T_k={len(K)}", file=sys.stderr)

def linear_attention(Q, K, V, feature_map):
    check(Q, K, V)
    phi_q = feature_map(Q).astype(np.float64)
    phi_k = feature_map(K).astype(np.float64)
    kv = phi_k.T @ V.astype(np.float64)
    z = phi_k.sum(axis=0)
    return ((phi_q @ kv) / (phi_q @ z)[:, None]).astype(Q.dtype)
''', note="stderr"),
]

RIGHT += [
    # exp(x - lse) with lse = log(1 + sum exp(x)): rows within default_atol(n, dtype, lse)
    Right("softmax_one", "exp(x - logaddexp(0, lse)), lse in the scores' dtype", '''
def softmax_one(x):
    m = x.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=-1, keepdims=True))   # log sum_k exp(x_k)
    return np.exp(x - np.logaddexp(0, lse))                        # log(1 + sum) = logaddexp(0, lse)
'''),
    Right("softmax_one", "exp(x - lse) with the 1 as exp(-m) inside the log", '''
def softmax_one(x):
    m = np.maximum(x.max(axis=-1, keepdims=True), 0)
    lse = m + np.log(np.exp(-m) + np.exp(x - m).sum(axis=-1, keepdims=True))
    return np.exp(x - lse)
'''),
    Right("softmax_one", "exp(x - (m + log of the denominator)), cast back", '''
def softmax_one(x):
    m = np.maximum(np.max(x, axis=-1, keepdims=True), 0)
    log_denominator = np.log(np.exp(-m) + np.sum(np.exp(x - m), axis=-1, keepdims=True))
    return np.exp(x - (m + log_denominator)).astype(x.dtype)
'''),
    Right("softmax_one", "log space in float64 with logaddexp(0, lse), cast back", '''
def softmax_one(x):
    z = x.astype(np.float64)
    m = z.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return np.exp(z - np.logaddexp(0, lse)).astype(x.dtype)
'''),
]
