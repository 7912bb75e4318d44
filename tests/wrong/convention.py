"""01-convention: wrong attention_scores, attention_weights and attention."""
from . import Wrong

WRONG = [
    # transposed score matrix (K Q^T)
    Wrong("attention_scores", "transposed score matrix (K Q^T)", '''
def attention_scores(Q, K):
    d_k = K.shape[1]
    return np.dot(K, Q.T) / np.sqrt(d_k)
'''),
    Wrong("attention_scores", "transposed score matrix (K Q^T)", '''
def attention_scores(Q, K):
    # every key scored against every query
    S = np.zeros((K.shape[0], Q.shape[0]))
    for j, k in enumerate(K):
        for i, q in enumerate(Q):
            S[j, i] = q @ k / np.sqrt(len(q))
    return S
'''),
    Wrong("attention_weights", "transposed score matrix (K Q^T)", '''
def attention_weights(Q, K):
    scores = (K @ Q.T) / np.sqrt(Q.shape[1])
    return softmax(scores, axis=-1)
'''),
    # missing or wrong scale
    Wrong("attention_scores", "missing or wrong scale", '''
def attention_scores(Q, K):
    return Q @ K.T
'''),
    Wrong("attention_scores", "missing or wrong scale", '''
def attention_scores(Q, K):
    d_k = Q.shape[-1]
    return (Q @ K.T) / d_k
'''),
    Wrong("attention_weights", "missing or wrong scale", '''
def attention_weights(Q, K):
    S = Q @ K.T * np.sqrt(K.shape[-1])
    return softmax(S)
'''),
    # softmax over the wrong axis
    Wrong("attention_weights", "softmax over the wrong axis", '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    return softmax(S, axis=0)
'''),
    Wrong("attention_weights", "softmax over the wrong axis", '''
def attention_weights(Q, K):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    E = np.exp(S - S.max(axis=0))
    return E / E.sum(axis=0)
'''),
    Wrong("attention", "softmax over the wrong axis", '''
def attention(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    A = np.exp(S - S.max(axis=0, keepdims=True))
    A = A / A.sum(axis=0, keepdims=True)
    return A @ V
'''),
    # unstable softmax (overflow)
    Wrong("attention_weights", "unstable softmax (overflow)", '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    e = np.exp(S)
    return e / np.sum(e, axis=1, keepdims=True)
'''),
    Wrong("attention", "unstable softmax (overflow)", '''
def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    weights = np.exp(scores)
    weights /= weights.sum(-1)[:, None]
    return weights @ V
'''),
    # a global instead of per-row maximum
    Wrong("attention_weights", "a global instead of per-row maximum", '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    S = S - np.max(S)
    return np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)
'''),
    Wrong("attention", "a global instead of per-row maximum", '''
def attention(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    exps = np.exp(S - S.max())
    A = exps / exps.sum(axis=1, keepdims=True)
    return A @ V
'''),
    # weights transposed in the output (A^T V)
    Wrong("attention", "weights transposed in the output (A^T V)", '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    return A.T @ V
'''),
    Wrong("attention", "weights transposed in the output (A^T V)", '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            out[i] += A[j, i] * V[j]
    return out
'''),
    # values multiplied on the wrong side (V^T A^T)
    Wrong("attention", "values multiplied on the wrong side (V^T A^T)", '''
def attention(Q, K, V):
    return V.T @ attention_weights(Q, K).T
'''),
    Wrong("attention", "values multiplied on the wrong side (V^T A^T)", '''
def attention(Q, K, V):
    A = attention_weights(Q, K)
    return np.einsum("kv,qk->vq", V, A)
'''),
    # input modified in place
    Wrong("attention_scores", "input modified in place", '''
def attention_scores(Q, K):
    Q /= np.sqrt(Q.shape[-1])
    return Q @ K.T
'''),
    Wrong("attention_weights", "input modified in place", '''
def attention_weights(Q, K):
    K *= 1 / np.sqrt(K.shape[1])
    return softmax(Q @ K.T)
'''),
    # wrong output shape or dtype
    Wrong("attention_scores", "wrong output shape or dtype", '''
def attention_scores(Q, K):
    return (Q @ K.T / np.sqrt(Q.shape[-1])).ravel()
'''),
    Wrong("attention", "wrong output shape or dtype", '''
def attention(Q, K, V):
    return attention_weights(Q, K)[:, :, None] * V[None, :, :]
'''),
    # NaN or inf in the output
    Wrong("attention_weights", "NaN or inf in the output", '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    positive = np.maximum(S, 0)  # weights cannot be negative
    return positive / positive.sum(axis=1, keepdims=True)
'''),
    # missing or wrong scale, outside attention_scores
    Wrong("attention", "missing or wrong scale", '''
def attention(Q, K, V):
    A = softmax(Q @ K.T, axis=-1)
    return A @ V
'''),
    Wrong("attention", "missing or wrong scale", '''
def attention(Q, K, V):
    d_v = V.shape[-1]
    A = softmax(Q @ K.T / np.sqrt(d_v), axis=-1)
    return A @ V
'''),
    Wrong("attention", "missing or wrong scale", '''
def attention(Q, K, V):
    # scale the scores before the softmax
    scores = attention_scores(Q, K) / np.sqrt(Q.shape[1])
    return softmax(scores, axis=-1) @ V
'''),
    Wrong("attention", "missing or wrong scale", '''
def attention(Q, K, V):
    n_keys = K.shape[0]
    weights = softmax(Q @ K.T / np.sqrt(n_keys), axis=-1)
    return weights @ V
'''),
    Wrong("attention", "missing or wrong scale", '''
def attention(Q, K, V):
    temperature = 3 * np.sqrt(Q.shape[-1])     # a softer softmax
    return softmax(Q @ K.T / temperature, axis=-1) @ V
'''),
]

WRONG += [
    # softmax left out (scores used as weights): issue 21
    Wrong("attention", "softmax left out (scores used as weights)", '''
def attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    return scores @ V
'''),
    Wrong("attention", "softmax left out (scores used as weights)", '''
def attention(Q, K, V):
    return attention_scores(Q, K) @ V
'''),
    Wrong("attention_weights", "softmax left out (scores used as weights)", '''
def attention_weights(Q, K):
    return Q @ K.T / np.sqrt(K.shape[1])
'''),
    # scale applied after the softmax
    Wrong("attention", "scale applied after the softmax", '''
def attention(Q, K, V):
    A = softmax(Q @ K.T)
    return A @ V / np.sqrt(Q.shape[1])
'''),
    Wrong("attention_weights", "scale applied after the softmax", '''
def attention_weights(Q, K):
    d_k = Q.shape[-1]
    return softmax(Q @ K.T, axis=-1) / np.sqrt(d_k)
'''),
    # K not transposed (rows of Q meet rows of K)
    Wrong("attention_scores", "K not transposed (rows of Q meet rows of K)", '''
def attention_scores(Q, K):
    return Q @ K / np.sqrt(Q.shape[-1])
'''),
    Wrong("attention_weights", "K not transposed (rows of Q meet rows of K)", '''
def attention_weights(Q, K):
    S = np.dot(Q, K) / np.sqrt(K.shape[-1])
    return softmax(S)
'''),
    Wrong("attention", "K not transposed (rows of Q meet rows of K)", '''
def attention(Q, K, V):
    A = softmax(np.matmul(Q, K) / np.sqrt(Q.shape[-1]))
    return A @ V
'''),
    # held-out class: normalises by the sum of the whole matrix
    Wrong('attention_weights', 'normalised over the whole array instead of each row', '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    E = np.exp(S - S.max())
    return E / E.sum()
'''),
    # held-out class: rounds the weights to 3 decimals
    Wrong('attention_weights', 'right values, rounded', '''
def attention_weights(Q, K):
    return np.round(softmax(attention_scores(Q, K), axis=-1), 3)
'''),
    # held-out class: max without keepdims (broadcasts along the wrong axis)
    Wrong('attention_weights', 'row maximum or row sum without keepdims', '''
def attention_weights(Q, K):
    S = attention_scores(Q, K)
    E = np.exp(S - S.max(axis=-1))
    return E / E.sum(axis=-1, keepdims=True)
'''),
    # held-out class: unnormalised exp(S) @ V
    Wrong('attention', 'exp of the scores not divided by the row sum', '''
def attention(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    return np.exp(S - S.max(axis=-1, keepdims=True)) @ V
'''),
    # held-out class: multiplies by K instead of V
    Wrong('attention', 'keys in place of the values (weights @ K)', '''
def attention(Q, K, V):
    return attention_weights(Q, K) @ K
'''),
    # held-out class: divides the output by T_k (averages twice)
    Wrong('attention', 'right values times a constant factor', '''
def attention(Q, K, V):
    return attention_weights(Q, K) @ V / K.shape[0]
'''),
]
