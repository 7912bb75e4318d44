"""01-convention: correct attention_scores, attention_weights and attention, in many styles."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ attention_scores
    Right("attention_scores", "plain Python loops", '''
import math

def attention_scores(Q, K):
    T_q, d_k = Q.shape
    T_k = K.shape[0]
    S = np.zeros((T_q, T_k))
    for i in range(T_q):
        for j in range(T_k):
            total = 0.0
            for c in range(d_k):
                total += float(Q[i, c]) * float(K[j, c])
            S[i, j] = total / math.sqrt(d_k)
    return S
'''),
    Right("attention_scores", "einsum", '''
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return np.einsum("id,jd->ij", Q, K) / np.sqrt(d_k)
'''),
    Right("attention_scores", "float64 then cast back, scale on Q first", '''
def attention_scores(Q, K):
    q = Q.astype(np.float64) / np.sqrt(Q.shape[1])
    return (q @ K.astype(np.float64).T).astype(Q.dtype)
'''),
    Right("attention_scores", "a helper named check and a print to stderr", '''
import sys

def check(Q, K):
    """My own shape check."""
    if Q.ndim != 2 or K.ndim != 2 or Q.shape[1] != K.shape[1]:
        raise ValueError(f"bad shapes {Q.shape} {K.shape}")
    return Q.shape[1]

def attention_scores(Q, K):
    d_k = check(Q, K)
    print(f"attention_scores: Q {Q.shape}, K {K.shape}", file=sys.stderr)
    return np.matmul(Q, K.T) / d_k ** 0.5
'''),
    Right("attention_scores", "warnings.warn and np.dot", '''
import warnings

def attention_scores(Q, K):
    if Q.dtype != np.float64:
        warnings.warn("low precision input")
    warnings.warn(f"computing a {Q.shape[0]} x {K.shape[0]} score matrix")
    return np.dot(Q, K.T) * (1.0 / np.sqrt(Q.shape[-1]))
''', note="UserWarning"),
    Right("attention_scores", "a class with __call__, row by row", '''
class ScaledScores:
    def __init__(self):
        self.calls = 0

    def __call__(self, Q, K):
        self.calls += 1
        scale = 1 / np.sqrt(Q.shape[-1])
        return np.array([[q @ k * scale for k in K] for q in Q])

attention_scores = ScaledScores()
'''),

    # ------------------------------------------------------------------ attention_weights
    Right("attention_weights", "loops over rows, own stable softmax", '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    A = np.empty_like(S, dtype=float)
    for i, row in enumerate(S):
        e = np.exp(row - row.max())
        A[i] = e / e.sum()
    return A
'''),
    Right("attention_weights", "einsum and log-sum-exp", '''
def attention_weights(Q, K):
    S = np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[-1])
    m = S.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(S - m).sum(axis=-1, keepdims=True))
    return np.exp(S - lse)
'''),
    Right("attention_weights", "float64 then cast, the allowed softmax", '''
def attention_weights(Q, K):
    S = attention_scores(Q.astype(np.float64), K.astype(np.float64))
    return softmax(S, axis=-1).astype(np.result_type(Q, K))
'''),
    Right("attention_weights", "np.row_stack of rows (DeprecationWarning)", '''
def _one_row(s):
    e = np.exp(s - np.max(s))
    return e / np.sum(e)

def attention_weights(Q, K):
    S = attention_scores(Q, K)
    return np.row_stack([_one_row(s) for s in S])
''', note="DeprecationWarning"),
    Right("attention_weights", "logging.warning (root logger) and softmax", '''
import logging

def attention_weights(Q, K):
    logging.warning("attention_weights on %s queries", Q.shape[0])
    return softmax(attention_scores(Q, K))
''', note="stderr"),
    Right("attention_weights", "recursion over the queries", '''
def attention_weights(Q, K):
    if Q.shape[0] == 0:
        return np.zeros((0, K.shape[0]))
    s = Q[0] @ K.T / np.sqrt(Q.shape[1])
    e = np.exp(s - s.max())
    return np.vstack([e / e.sum(), attention_weights(Q[1:], K)])
'''),

    # ------------------------------------------------------------------ attention
    Right("attention", "loops: a weighted average of value rows", '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            out[i] += A[i, j] * V[j]
    return out
'''),
    Right("attention", "einsum, normalised after the product", '''
def attention(Q, K, V):
    S = np.einsum("id,jd->ij", Q, K) / np.sqrt(Q.shape[-1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return np.einsum("ij,jv->iv", P, V) / P.sum(axis=1, keepdims=True)
'''),
    Right("attention", "float64 then cast", '''
def attention(Q, K, V):
    A = softmax(Q.astype(np.float64) @ K.astype(np.float64).T / np.sqrt(Q.shape[-1]))
    return (A @ V.astype(np.float64)).astype(V.dtype)
'''),
    Right("attention", "prints to stdout, reuses attention_weights", '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    print("weights:", A.shape, "row sums:", A.sum(axis=-1))
    return A @ V
''', note="stdout"),
    Right("attention", "np.matmul with a helper and a print to stderr", '''
import sys

def _attention_log(*parts):
    print("[attention]", *parts, file=sys.stderr)

def attention(Q, K, V):
    _attention_log("T_q =", len(Q), "T_k =", len(K))
    return np.matmul(attention_weights(Q, K), V)
''', note="stderr"),
    Right("attention", "a class with __call__", '''
class Attention:
    def scores(self, Q, K):
        return Q @ K.T / np.sqrt(K.shape[-1])

    def __call__(self, Q, K, V):
        return softmax(self.scores(Q, K), axis=-1) @ V

attention = Attention()
'''),
]
