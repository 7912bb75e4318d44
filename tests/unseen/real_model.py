"""07-real-model: split_heads and layer_attention, written without the catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- split_heads
    Unseen("split_heads", "np.split along the token axis: a raw NumPy error, or tokens dealt into heads",
           ("np.split", "token axis", "axis 1"), '''
def split_heads(x, n_heads):
    return np.stack(np.split(x, n_heads, axis=1), axis=1)
'''),
    Unseen("split_heads", "the head size computed from the number of tokens: a reshape error",
           ("x.shape[1]", "head size", "T // n_heads"), '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = T // n_heads
    return x.reshape(B, T, n_heads, d).transpose(0, 2, 1, 3)
'''),
    Unseen("split_heads", "head h sliced from feature h instead of h * d: the slice forgets its offset",
           ("h * d", "offset", "overlap"), '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = D // n_heads
    heads = np.empty((B, n_heads, T, d), dtype=x.dtype)
    for h in range(n_heads):
        heads[:, h] = x[:, :, h:h + d]
    return heads
'''),
    Unseen("split_heads", "a bare reshape to (B, H, T, d): heads mixed up",
           ("reshape", "transpose", "mix", "leak"), '''
def split_heads(x, n_heads):
    return x.reshape(x.shape[0], n_heads, -1, x.shape[-1] // n_heads)
'''),
    Unseen("split_heads", "sentences and tokens flattened together: the batch mixed up",
           ("sentences mixed", "batch mixed", "mixes the sentences", "mix"), '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = D // n_heads
    flat = x.reshape(B * T, n_heads, d).transpose(1, 0, 2)
    return flat.reshape(B, n_heads, T, d)
'''),
    # ------------------------------------------------------------- layer_attention
    Unseen("layer_attention", "the 0/1 attention_mask added to the scores as it is",
           ("added", "additive", "0/1", "pad keys not masked"), '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores = scores + attention_mask[:, None, None, :]
    A = softmax(scores, axis=-1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Unseen("layer_attention", "the mask given one new axis only, (B, 1, T): a raw broadcast error or mixed sentences",
           ("broadcast", "(B, 1, 1, T)", "[:, None, None, :]"), '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, axis=-1, mask=attention_mask[:, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Unseen("layer_attention", "the output projection applied as W_o.T",
           ("W_o", "W.T"), '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D // H)
    A = softmax(scores, axis=-1, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o.T + weights.b_o, A
'''),
    Unseen("layer_attention", "keys projected with W_q (a copy-paste slip)",
           ("W_k", "W_q"), '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_q + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, axis=-1, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Unseen("layer_attention", "heads merged after swapping axes 1 and 3: features and heads mixed",
           ("merge", "merged", "swapaxes", "transpose(0, 2, 1, 3)"), '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, axis=-1, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).swapaxes(1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
]
