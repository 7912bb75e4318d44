"""01-convention: attention_scores, attention_weights and attention, written without the catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- attention_scores
    Unseen("attention_scores", "scaled by the square root of the number of queries",
           ("T_q", "number of queries", "scale"), '''
def attention_scores(Q, K):
    return Q @ K.T / np.sqrt(Q.shape[0])
'''),
    Unseen("attention_scores", "einsum written with the output indices swapped: K Q^T",
           ("transpose", "K Q^T", "swapped"), '''
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return np.einsum("ik,jk->ji", Q, K) / np.sqrt(d_k)
'''),
    Unseen("attention_scores", "a loop whose range over the keys stops one short: the last column stays 0",
           ("last key", "last column"), '''
def attention_scores(Q, K):
    T_q, d_k = Q.shape
    T_k = K.shape[0]
    S = np.zeros((T_q, T_k))
    for i in range(T_q):
        for j in range(T_k - 1):
            S[i, j] = Q[i] @ K[j] / np.sqrt(d_k)
    return S
'''),
    Unseen("attention_scores", "each row centred on its mean (softmax does not care, the scores do)",
           ("offset", "shifted", "row mean", "mean"), '''
def attention_scores(Q, K):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    return S - S.mean(axis=1, keepdims=True)   # centred for stability
'''),
    Unseen("attention_scores", "Q.T @ K: a (d_k, d_k) matrix instead of (T_q, T_k)",
           ("d_k, d_k", "(d_k", "Q.T"), '''
def attention_scores(Q, K):
    return Q.T @ K / np.sqrt(Q.shape[1])
'''),
    # ------------------------------------------------------------- attention_weights
    Unseen("attention_weights", "exp divided by its column sums (axis 0)",
           ("axis 0", "axis=0", "columns", "over the queries"), '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    e = np.exp(S - S.max())
    return e / e.sum(axis=0)
'''),
    Unseen("attention_weights", "softmax taken of the transposed scores and transposed back",
           ("axis 0", "axis=0", "columns", "over the queries", "transpose"), '''
def attention_weights(Q, K):
    return softmax(attention_scores(Q, K).T).T
'''),
    Unseen("attention_weights", "row sums without keepdims: a raw broadcast error, or the wrong rows",
           ("keepdims", "broadcast", "[:, None]"), '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    e = np.exp(S - S.max(axis=1, keepdims=True))
    return e / e.sum(axis=1)
'''),
    Unseen("attention_weights", "each row divided by its largest weight instead of its sum",
           ("row sum", "sum to 1", "sums to", "own factor"), '''
def attention_weights(Q, K):
    w = softmax(attention_scores(Q, K))
    return w / w.max(axis=-1, keepdims=True)
'''),
    Unseen("attention_weights", "numerator shifted by the row maximum, denominator not",
           ("row sum", "sum to 1", "sums to", "own factor"), '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    top = S.max(axis=-1, keepdims=True)
    return np.exp(S - top) / np.exp(S).sum(axis=-1, keepdims=True)
'''),
    # ------------------------------------------------------------- attention
    Unseen("attention", "the weighted sum divided by T_k as well (an average of an average)",
           ("T_k", "factor", "number of keys"), '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    return A @ V / V.shape[0]
'''),
    Unseen("attention", "weights times V.T: a matmul whose inner sizes are T_k and d_v",
           ("V.T", "d_v"), '''
def attention(Q, K, V):
    return attention_weights(Q, K) @ V.T
'''),
    Unseen("attention", "elementwise product of the weights and V instead of a matrix product",
           ("broadcast", "elementwise", "A * V"), '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    return (A * V).sum(axis=1, keepdims=True) * np.ones((1, V.shape[1]))
'''),
    Unseen("attention", "each output row normalised to sum to 1",
           ("each row", "own factor", "normalis"), '''
def attention(Q, K, V):
    out = attention_weights(Q, K) @ V
    return out / out.sum(axis=-1, keepdims=True)
'''),
    Unseen("attention", "the last key and value left out",
           ("last key", "T_k - 1", "dropped", "last column"), '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    return A[:, :-1] @ V[:-1]
'''),
]
