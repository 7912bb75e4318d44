"""07-real-model: correct split_heads and layer_attention, in many styles."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ split_heads
    Right("split_heads", "np.split along the features, stacked on axis 1", '''
def split_heads(x, n_heads):
    return np.stack(np.split(x, n_heads, axis=-1), axis=1)
'''),
    Right("split_heads", "a loop over the heads into a new array, a print to stdout", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = D // n_heads
    out = np.empty((B, n_heads, T, d), dtype=x.dtype)
    for h in range(n_heads):
        out[:, h] = x[:, :, h * d:(h + 1) * d]
    print("split", x.shape, "->", out.shape)
    return out
''', note="stdout"),
    Right("split_heads", "einsum on a (B, T, H, d) view", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return np.einsum("bthd->bhtd", x.reshape(B, T, n_heads, D // n_heads))
'''),
    Right("split_heads", "swapaxes, warnings.warn for heads of size 1", '''
import warnings

def split_heads(x, n_heads):
    if x.shape[-1] == n_heads:
        warnings.warn("every head has a single feature")
    return x.reshape(*x.shape[:-1], n_heads, -1).swapaxes(1, 2)
''', note="UserWarning"),
    Right("split_heads", "np.moveaxis, then a contiguous copy", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return np.ascontiguousarray(np.moveaxis(x.reshape(B, T, n_heads, D // n_heads), 2, 1))
'''),

    # ------------------------------------------------------------------ layer_attention
    Right("layer_attention", "loops over sentences and heads, an additive -1e9 mask", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    merged = np.zeros((B, T, D))
    A = np.zeros((B, H, T, T))
    for b in range(B):
        q = hidden[b] @ weights.W_q + weights.b_q     # (T, D)
        k = hidden[b] @ weights.W_k + weights.b_k
        v = hidden[b] @ weights.W_v + weights.b_v
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            scores = q[:, cols] @ k[:, cols].T / np.sqrt(d)
            scores = scores + (1 - attention_mask[b])[None, :] * -1e9   # pad columns
            A[b, h] = softmax(scores)
            merged[b, :, cols] = A[b, h] @ v[:, cols]
    return merged @ weights.W_o + weights.b_o, A
'''),
    Right("layer_attention", "einsum, np.where with -inf and a hand-written softmax", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q, k, v = (split_heads(np.einsum("btd,de->bte", hidden, W) + b, H)
               for W, b in [(weights.W_q, weights.b_q), (weights.W_k, weights.b_k),
                            (weights.W_v, weights.b_v)])
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(attention_mask[:, None, None, :] == 1, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    merged = np.einsum("bhqk,bhkd->bqhd", A, v).reshape(B, T, D)
    return np.einsum("btd,de->bte", merged, weights.W_o) + weights.b_o, A
'''),
    Right("layer_attention", "additive mask from np.log, with its RuntimeWarning", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    additive = np.log(attention_mask.astype(float))[:, None, None, :]   # log 1 = 0, log 0 = -inf
    A = softmax(q @ np.swapaxes(k, -1, -2) * (q.shape[-1] ** -0.5) + additive)
    return np.swapaxes(A @ v, 1, 2).reshape(B, T, D) @ weights.W_o + weights.b_o, A
''', note="RuntimeWarning"),
    Right("layer_attention", "a helper per step, the boolean mask of softmax, a logger", '''
import logging

log = logging.getLogger("layer")

def project(x, W, b):
    return x @ W + b

def merge(heads):
    B, H, T, d = heads.shape
    return heads.transpose(0, 2, 1, 3).reshape(B, T, H * d)

def layer_attention(hidden, weights, attention_mask):
    w = weights
    if not attention_mask.all():
        log.warning("%d pad tokens in this batch", (attention_mask == 0).sum())
    q, k, v = (split_heads(project(hidden, W, b), w.n_heads)
               for W, b in ((w.W_q, w.b_q), (w.W_k, w.b_k), (w.W_v, w.b_v)))
    keys = attention_mask.astype(bool)[:, np.newaxis, np.newaxis, :]
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]), axis=-1, mask=keys)
    return project(merge(A @ v), w.W_o, w.b_o), A
''', note="stderr"),
    Right("layer_attention", "float64 throughout, cast back to the input dtype", '''
def layer_attention(hidden, weights, attention_mask):
    dtype = hidden.dtype
    x = hidden.astype(np.float64)
    W = {name: getattr(weights, name).astype(np.float64)
         for name in ("W_q", "b_q", "W_k", "b_k", "W_v", "b_v", "W_o", "b_o")}
    B, T, D = x.shape
    H = weights.n_heads
    d = D // H
    q = (x @ W["W_q"] + W["b_q"]).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    k = (x @ W["W_k"] + W["b_k"]).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    v = (x @ W["W_v"] + W["b_v"]).reshape(B, T, H, d).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores[np.broadcast_to(attention_mask[:, None, None, :] == 0, scores.shape)] = -np.inf
    A = softmax(scores)
    out = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D) @ W["W_o"] + W["b_o"]
    return out.astype(dtype), A.astype(dtype)
'''),
]
