"""07-real-model: wrong split_heads and layer_attention."""
from . import Wrong

RESHAPE = "reshape without transpose (heads leak into each other)"
POLARITY = "HF mask polarity read as True = blocked"
QUERIES = "the mask applied to queries instead of keys"
HIDDEN_SCALE = "scale by the hidden size instead of the head size"
PROJECTION = "output projection forgotten"
AXIS = "softmax over the wrong axis"
NO_SOFTMAX = "softmax left out (scores used as weights)"
SCALE_AFTER = "scale applied after the softmax"
KEYS_AS_GIVEN = "K not transposed (rows of Q meet rows of K)"



def with_weights(line):
    """The layer of the notebook's reference with its weights A computed by `line`."""
    return (LAYER_HEAD + "    " + line + "\n"
            "    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)\n"
            "    return merged @ weights.W_o + weights.b_o, A\n")


LAYER_HEAD = '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    keep = attention_mask[:, None, None, :] == 1
'''

WRONG = [
    # ------------------------------------------------------------------ split_heads
    Wrong("split_heads", RESHAPE, '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, n_heads, T, D // n_heads)
'''),
    Wrong("split_heads", RESHAPE, '''
def split_heads(x, n_heads):
    # (B, T, D) -> (B, T, H, d): one row of d numbers per head
    B, T, D = x.shape
    head_dim = D // n_heads
    return x.reshape(B, T, n_heads, head_dim)
'''),
    Wrong("split_heads", RESHAPE, '''
def split_heads(x, n_heads):
    return np.reshape(x, (x.shape[0], n_heads, -1, x.shape[-1] // n_heads))
'''),
    Wrong("split_heads", "heads cut from interleaved features", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 3, 1, 2)
'''),
    Wrong("split_heads", "heads cut from interleaved features", '''
def split_heads(x, n_heads):
    heads = [x[:, :, h::n_heads] for h in range(n_heads)]   # every n_heads-th feature
    return np.stack(heads, axis=1)
'''),
    Wrong("split_heads", "heads in front of the batch axis", '''
def split_heads(x, n_heads):
    return np.stack(np.split(x, n_heads, axis=-1))
'''),
    Wrong("split_heads", "heads in front of the batch axis", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(2, 0, 1, 3)
'''),

    # ------------------------------------------------------------------ layer_attention
    Wrong("layer_attention", RESHAPE, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = (hidden @ weights.W_q + weights.b_q).reshape(B, H, T, d)
    k = (hidden @ weights.W_k + weights.b_k).reshape(B, H, T, d)
    v = (hidden @ weights.W_v + weights.b_v).reshape(B, H, T, d)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    out = (A @ v).reshape(B, T, D)
    return out @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", RESHAPE, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(D // H)
    scores = np.where(attention_mask[:, None, None, :] == 1, scores, -np.inf)
    A = softmax(scores)
    context = np.einsum("bhqk,bhkd->bhqd", A, v).reshape(B, T, D)  # back to (B, T, D)
    return context @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", POLARITY, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D // H)
    # key_padding_mask convention: True means "ignore this key"
    ignore = attention_mask.astype(bool)[:, None, None, :]
    scores = np.where(ignore, -np.inf, scores)
    A = softmax(scores, axis=-1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", POLARITY, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q, k, v = (split_heads(hidden @ W + b, H) for W, b in
               [(weights.W_q, weights.b_q), (weights.W_k, weights.b_k), (weights.W_v, weights.b_v)])
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    scores = scores + attention_mask[:, None, None, :] * -1e9   # additive mask
    A = softmax(scores)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", POLARITY, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    padding = attention_mask[:, None, None, :] == 1
    A = softmax(scores, mask=~padding)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", QUERIES, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    keep = attention_mask[:, None, :, None] == 1   # (B, 1, T, 1)
    A = softmax(scores, mask=keep)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", QUERIES, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    out = np.zeros((B, T, D))
    A = np.zeros((B, H, T, T))
    for b in range(B):
        real = attention_mask[b] == 1
        for h in range(H):
            cols = slice(h * d, (h + 1) * d)
            q = hidden[b] @ weights.W_q[:, cols] + weights.b_q[cols]
            k = hidden[b] @ weights.W_k[:, cols] + weights.b_k[cols]
            v = hidden[b] @ weights.W_v[:, cols] + weights.b_v[cols]
            s = q @ k.T / np.sqrt(d)
            s[~real, :] = -np.inf            # pads may not attend
            A[b, h] = softmax(s)
            out[b, :, cols] = A[b, h] @ v
    return out @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", HIDDEN_SCALE, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D)   # 1 / sqrt(hidden size)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", HIDDEN_SCALE, '''
def layer_attention(hidden, weights, attention_mask):
    H = weights.n_heads
    scale = hidden.shape[-1] ** -0.5
    q = split_heads((hidden @ weights.W_q + weights.b_q) * scale, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = np.einsum("bhid,bhjd->bhij", q, k)
    scores = np.where(attention_mask[:, None, None, :].astype(bool), scores, -1e9)
    A = softmax(scores)
    B, T, D = hidden.shape
    merged = np.einsum("bhij,bhjd->bihd", A, v).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "missing or wrong scale", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "missing or wrong scale", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = split_heads(hidden @ weights.W_q + weights.b_q, H) / np.sqrt(d)   # scaled queries
    k = split_heads(hidden @ weights.W_k + weights.b_k, H) / np.sqrt(d)   # scaled keys
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", PROJECTION, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    return (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D), A
'''),
    Wrong("layer_attention", PROJECTION, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    scores = np.where(attention_mask[:, None, None, :] == 1, scores, -np.inf)
    A = softmax(scores)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged + weights.b_o, A
'''),
    Wrong("layer_attention", AXIS, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, axis=-2, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", AXIS, '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    scores = np.where(attention_mask[:, None, None, :] == 1, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    A = e / e.sum(axis=1, keepdims=True)      # normalise over the heads
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "weight matrices transposed (x @ W.T)", '''
def layer_attention(hidden, weights, attention_mask):
    # as torch.nn.Linear: y = x @ W.T + b
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q.T + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k.T + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v.T + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o.T + weights.b_o, A
'''),
    Wrong("layer_attention", "weight matrices transposed (x @ W.T)", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    def linear(x, W, b):
        return np.einsum("oi,bti->bto", W, x) + b
    q = split_heads(linear(hidden, weights.W_q, weights.b_q), H)
    k = split_heads(linear(hidden, weights.W_k, weights.b_k), H)
    v = split_heads(linear(hidden, weights.W_v, weights.b_v), H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return linear(merged, weights.W_o, weights.b_o), A
'''),
    Wrong("layer_attention", "a projection bias left out", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q, H)
    k = split_heads(hidden @ weights.W_k, H)
    v = split_heads(hidden @ weights.W_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o, A
'''),
    Wrong("layer_attention", "a projection bias left out", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v, H)          # values without bias
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "masking with 0 or multiplying by the mask", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    scores = scores * attention_mask[:, None, None, :]     # pads -> 0
    A = softmax(scores)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "masking with 0 or multiplying by the mask", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q, k, v = (split_heads(hidden @ W + b, H) for W, b in
               [(weights.W_q, weights.b_q), (weights.W_k, weights.b_k), (weights.W_v, weights.b_v)])
    scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d)
    scores[np.broadcast_to(attention_mask[:, None, None, :] == 0, scores.shape)] = 0.0
    A = softmax(scores)
    merged = np.einsum("bhqk,bhkd->bqhd", A, v).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "mask applied after softmax", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H))
    A = A * attention_mask[:, None, None, :]                # drop the pads
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "mask applied after softmax", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H))
    A = np.where(attention_mask[:, None, None, :] == 0, 0.0, A)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "pad keys not masked", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H))
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "pad keys not masked", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    scores = scores + (1.0 - attention_mask[:, None, :, None]) * -10000.0
    A = softmax(scores)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "pad query rows masked as well", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    real = attention_mask.astype(bool)
    pairs = real[:, None, :, None] & real[:, None, None, :]   # both tokens real
    A = softmax(scores, mask=pairs)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "pad query rows masked as well", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    m = attention_mask[:, None, :, None] * attention_mask[:, None, None, :]
    scores = np.where(m == 1, scores, -np.inf)
    A = np.exp(scores - scores.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    # input modified in place: the scale folded into the caller's weights (a second call
    # with the same weights would scale twice)
    Wrong("layer_attention", "input modified in place", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    W_q, b_q = weights.W_q, weights.b_q
    W_q /= np.sqrt(D // H)   # fold 1/sqrt(d) into the query projection
    b_q /= np.sqrt(D // H)
    q = split_heads(hidden @ W_q + b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2)
    A = softmax(scores, mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "input modified in place", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    for W, b in ((weights.W_q, weights.b_q), (weights.W_k, weights.b_k)):
        W *= d ** -0.25   # half of the scale on each side
        b *= d ** -0.25
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2), mask=attention_mask[:, None, None, :] == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
]

WRONG += [
    # head axes in the wrong order: (B, H, d, T) and the other orders (issue 21)
    Wrong("split_heads", "head axes in the wrong order", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 3, 1)
'''),
    Wrong("split_heads", "head axes in the wrong order", '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = D // n_heads
    heads = [x[:, :, h * d:(h + 1) * d].swapaxes(1, 2) for h in range(n_heads)]  # (B, d, T)
    return np.stack(heads, axis=1)
'''),
    # padding mask without its key axis: (B, T) against (B, H, T, T)
    Wrong("layer_attention", "padding mask without its key axis", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
    A = softmax(scores, mask=attention_mask == 1)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", "padding mask without its key axis", '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D // H)
    scores = np.where(attention_mask.astype(bool), scores, -np.inf)
    A = np.exp(scores - scores.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)
    merged = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return merged @ weights.W_o + weights.b_o, A
'''),
    Wrong("layer_attention", NO_SOFTMAX, with_weights(
        'A = np.where(keep, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), 0)   # the masked scores')),
    Wrong("layer_attention", NO_SOFTMAX, with_weights(
        'A = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)')),
    Wrong("layer_attention", SCALE_AFTER, with_weights(
        'A = softmax(q @ k.transpose(0, 1, 3, 2), mask=keep) / np.sqrt(d)')),
    Wrong("layer_attention", SCALE_AFTER, with_weights(
        'A = softmax(np.where(keep, q @ np.swapaxes(k, -1, -2), -np.inf)) / np.sqrt(d)')),
    Wrong("layer_attention", KEYS_AS_GIVEN, with_weights(
        'A = softmax(q @ k / np.sqrt(d), mask=keep)')),
    Wrong("layer_attention", KEYS_AS_GIVEN, with_weights(
        'A = softmax(np.matmul(q, k) / np.sqrt(d), mask=keep)')),
    # held-out class: n_heads and head size swapped in the reshape
    Wrong('split_heads', 'number of heads and head size swapped', '''
def split_heads(x, n_heads):
    B, T, D = x.shape
    d = D // n_heads
    return x.reshape(B, T, d, n_heads).transpose(0, 2, 1, 3)
'''),
    # held-out class: forgot the projection biases
    Wrong('layer_attention', 'a projection bias left out', '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = split_heads(hidden @ weights.W_q, H)
    k = split_heads(hidden @ weights.W_k, H)
    v = split_heads(hidden @ weights.W_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), mask=attention_mask.astype(bool)[:, None, None, :])
    ctx = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return ctx @ weights.W_o + weights.b_o, A
'''),
    # held-out class: returns (A, output) in the wrong order
    Wrong('layer_attention', 'results returned in the wrong order', '''
def layer_attention(hidden, weights, attention_mask):
    B, T, D = hidden.shape
    H = weights.n_heads
    d = D // H
    q = split_heads(hidden @ weights.W_q + weights.b_q, H)
    k = split_heads(hidden @ weights.W_k + weights.b_k, H)
    v = split_heads(hidden @ weights.W_v + weights.b_v, H)
    A = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d), mask=attention_mask.astype(bool)[:, None, None, :])
    ctx = (A @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
    return A, ctx @ weights.W_o + weights.b_o
'''),
]
