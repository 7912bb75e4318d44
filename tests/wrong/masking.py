"""03-masking: wrong causal_mask, key_padding_mask, sliding_window_mask and masked_softmax."""
from . import Wrong

WRONG = [
    # ------------------------------------------------------------ causal_mask
    # causal mask off by one
    Wrong("causal_mask", "causal mask off by one", '''
def causal_mask(t_q, t_k):
    # strictly below the (shifted) diagonal: a token must not see itself
    return np.tri(t_q, t_k, k=t_k - t_q - 1, dtype=bool)
'''),
    Wrong("causal_mask", "causal mask off by one", '''
def causal_mask(t_q, t_k):
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        for j in range(t_k):
            mask[i, j] = j <= i + t_k - t_q + 1
    return mask
'''),
    # top-left instead of bottom-right causal alignment
    Wrong("causal_mask", "top-left instead of bottom-right causal alignment", '''
def causal_mask(t_q, t_k):
    return np.tril(np.ones((t_q, t_k), dtype=bool))
'''),
    Wrong("causal_mask", "top-left instead of bottom-right causal alignment", '''
def causal_mask(t_q, t_k):
    offset = max(t_k - t_q, 0)   # the diagonal never moves left
    i = np.arange(t_q)[:, None]
    j = np.arange(t_k)[None, :]
    return j <= i + offset
'''),
    # inverted mask polarity
    Wrong("causal_mask", "inverted mask polarity", '''
def causal_mask(t_q, t_k):
    # mark the future, as in torch.nn.MultiheadAttention's attn_mask
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)
'''),
    Wrong("causal_mask", "inverted mask polarity", '''
def causal_mask(t_q, t_k):
    rows, cols = np.indices((t_q, t_k))
    future = cols > rows + (t_k - t_q)
    return future
'''),
    # bottom-right offset with the wrong sign
    Wrong("causal_mask", "bottom-right offset with the wrong sign", '''
def causal_mask(t_q, t_k):
    offset = t_q - t_k
    return np.tri(t_q, t_k, k=offset).astype(bool)
'''),
    # negative slice index wraps around
    Wrong("causal_mask", "negative slice index wraps around", '''
def causal_mask(t_q, t_k):
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        mask[i, :i + t_k - t_q + 1] = True
    return mask
'''),
    # wrong output shape or dtype
    Wrong("causal_mask", "wrong output shape or dtype", '''
def causal_mask(t_q, t_k):
    return np.tril(np.ones((t_q, t_k)), k=t_k - t_q)   # 1.0 = may attend
'''),
    Wrong("causal_mask", "wrong output shape or dtype", '''
def causal_mask(t_q, t_k):
    mask = np.zeros((t_q, t_k), dtype=int)
    for i in range(t_q):
        for j in range(t_k):
            if j <= i + t_k - t_q:
                mask[i, j] = 1
    return mask
'''),

    # ------------------------------------------------------------ key_padding_mask
    # padding mask on queries instead of keys
    Wrong("key_padding_mask", "padding mask on queries instead of keys", '''
def key_padding_mask(lengths, t_k):
    positions = np.arange(t_k)
    real = positions[None, :] < lengths[:, None]      # (B, t_k)
    return real[:, :, None]                             # one entry per query
'''),
    Wrong("key_padding_mask", "padding mask on queries instead of keys", '''
def key_padding_mask(lengths, t_k):
    B = len(lengths)
    mask = np.zeros((B, t_k, t_k), dtype=bool)
    for b in range(B):
        mask[b, :lengths[b], :] = True    # real tokens attend
    return mask
'''),
    # inverted mask polarity
    Wrong("key_padding_mask", "inverted mask polarity", '''
def key_padding_mask(lengths, t_k):
    # True = padding, like key_padding_mask in nn.MultiheadAttention
    return np.arange(t_k)[None, None, :] >= lengths[:, None, None]
'''),
    Wrong("key_padding_mask", "inverted mask polarity", '''
def key_padding_mask(lengths, t_k):
    mask = np.zeros((len(lengths), 1, t_k), dtype=bool)
    for b, n in enumerate(lengths):
        mask[b, 0, n:] = True
    return mask
'''),
    # padding boundary off by one
    Wrong("key_padding_mask", "padding boundary off by one", '''
def key_padding_mask(lengths, t_k):
    j = np.arange(t_k).reshape(1, 1, t_k)
    return j <= lengths.reshape(-1, 1, 1)
'''),
    # wrong output shape or dtype
    Wrong("key_padding_mask", "wrong output shape or dtype", '''
def key_padding_mask(lengths, t_k):
    return np.arange(t_k)[None, :] < lengths[:, None]
'''),
    Wrong("key_padding_mask", "wrong output shape or dtype", '''
def key_padding_mask(lengths, t_k):
    # like Hugging Face's attention_mask: 1 = attend, 0 = padding
    mask = np.zeros((len(lengths), 1, t_k), dtype=int)
    for b in range(len(lengths)):
        mask[b, 0, :lengths[b]] = 1
    return mask
'''),

    # ------------------------------------------------------------ sliding_window_mask
    # window not causal (future keys allowed)
    Wrong("sliding_window_mask", "window not causal (future keys allowed)", '''
def sliding_window_mask(t, window):
    i, j = np.indices((t, t))
    return np.abs(i - j) < window
'''),
    Wrong("sliding_window_mask", "window not causal (future keys allowed)", '''
def sliding_window_mask(t, window):
    q = np.arange(t)[:, None]
    k = np.arange(t)[None, :]
    return k > q - window
'''),
    # causal mask off by one
    Wrong("sliding_window_mask", "causal mask off by one", '''
def sliding_window_mask(t, window):
    i, j = np.indices((t, t))
    return (j < i) & (j >= i - window)     # the `window` previous tokens
'''),
    # window one key too wide or too narrow
    Wrong("sliding_window_mask", "window one key too wide or too narrow", '''
def sliding_window_mask(t, window):
    i = np.arange(t)[:, None]
    j = np.arange(t)[None, :]
    return causal_mask(t, t) & (j >= i - window)
'''),
    # inverted mask polarity
    Wrong("sliding_window_mask", "inverted mask polarity", '''
def sliding_window_mask(t, window):
    i, j = np.indices((t, t))
    outside = (j > i) | (j <= i - window)
    return outside
'''),
    # negative slice index wraps around
    Wrong("sliding_window_mask", "negative slice index wraps around", '''
def sliding_window_mask(t, window):
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        mask[i, i - window + 1:i + 1] = True
    return mask
'''),
    # wrong output shape or dtype
    Wrong("sliding_window_mask", "wrong output shape or dtype", '''
def sliding_window_mask(t, window):
    return np.tri(t, t, 0) - np.tri(t, t, -window)
'''),

    # ------------------------------------------------------------ masked_softmax
    # mask applied after softmax
    Wrong("masked_softmax", "mask applied after softmax", '''
def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights * mask
'''),
    Wrong("masked_softmax", "mask applied after softmax", '''
def masked_softmax(scores, mask):
    # softmax, zero the blocked keys, renormalise (the theorem of the chapter)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    p = p * mask
    total = p.sum(axis=-1, keepdims=True)
    return np.divide(p, total, out=np.zeros_like(p), where=total > 0)
'''),
    # masking with 0 or multiplying by the mask
    Wrong("masked_softmax", "masking with 0 or multiplying by the mask", '''
def masked_softmax(scores, mask):
    s = scores * mask          # blocked scores become 0
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Wrong("masked_softmax", "masking with 0 or multiplying by the mask", '''
def masked_softmax(scores, mask):
    s = np.where(mask, scores, 0)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    e = np.where(mask.any(axis=-1, keepdims=True), e, 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)
'''),
    # inverted mask polarity
    Wrong("masked_softmax", "inverted mask polarity", '''
def masked_softmax(scores, mask):
    x = np.where(mask, -np.inf, scores)      # True = masked out
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return e / np.where(s == 0, 1, s)
'''),
    Wrong("masked_softmax", "inverted mask polarity", '''
def masked_softmax(scores, mask):
    keep = np.logical_not(mask)
    x = np.where(keep, scores, -np.inf)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # fully masked row giving NaN or a uniform row
    Wrong("masked_softmax", "fully masked row giving NaN or a uniform row", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
'''),
    Wrong("masked_softmax", "fully masked row giving NaN or a uniform row", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -1e9)   # large negative instead of -inf: no NaN
    x = x - x.max(axis=-1, keepdims=True)
    w = np.exp(x)
    return w / w.sum(axis=-1, keepdims=True)
'''),
    # finite sentinel too weak for the scores
    Wrong("masked_softmax", "finite sentinel too weak for the scores", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -1e4)     # -1e4 is small enough after exp
    x = x - x.max(axis=-1, keepdims=True)
    w = np.exp(x)
    return w / w.sum(axis=-1, keepdims=True)
'''),
    Wrong("masked_softmax", "finite sentinel too weak for the scores", '''
def masked_softmax(scores, mask):
    bias = np.where(mask, 0.0, -10000.0).astype(scores.dtype)   # additive mask
    x = scores + bias
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return np.where(mask.any(axis=-1, keepdims=True), w, 0).astype(scores.dtype)
'''),
    # unstable softmax (overflow)
    Wrong("masked_softmax", "unstable softmax (overflow)", '''
def masked_softmax(scores, mask):
    e = np.exp(np.where(mask, scores, -np.inf))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)
'''),
    # a global instead of per-row maximum
    Wrong("masked_softmax", "a global instead of per-row maximum", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    e = np.exp(x - x.max())              # one max for stability
    total = e.sum(axis=-1, keepdims=True)
    out = np.zeros_like(e)
    np.divide(e, total, out=out, where=total > 0)
    return out
'''),
    # input modified in place
    Wrong("masked_softmax", "input modified in place", '''
def masked_softmax(scores, mask):
    scores[~mask] = -np.inf
    m = scores.max(axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    total[total == 0] = 1
    return e / total
'''),
    # mask used as an index without broadcasting it
    Wrong("masked_softmax", "mask used as an index without broadcasting it", '''
def masked_softmax(scores, mask):
    x = scores.copy()
    x[~mask] = -np.inf
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isinf(m), 0, m)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return np.where(s > 0, e / np.where(s > 0, s, 1), 0)
'''),
    # upper instead of lower triangle (triu instead of tril)
    Wrong("causal_mask", "upper instead of lower triangle (triu instead of tril)", '''
def causal_mask(t_q, t_k):
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
'''),
    Wrong("causal_mask", "upper instead of lower triangle (triu instead of tril)", '''
def causal_mask(t_q, t_k):
    mask = np.ones((t_q, t_k), dtype=bool)
    return np.triu(mask)          # keep the diagonal and what lies on one side of it
'''),
    # padding on the wrong side
    Wrong("key_padding_mask", "padding on the wrong side", '''
def key_padding_mask(lengths, t_k):
    j = np.arange(t_k)[None, None, :]
    return j >= t_k - lengths[:, None, None]       # the real tokens are the last ones
'''),
    Wrong("key_padding_mask", "padding on the wrong side", '''
def key_padding_mask(lengths, t_k):
    mask = np.zeros((len(lengths), 1, t_k), dtype=bool)
    for b, n in enumerate(lengths):
        mask[b, 0, t_k - n:] = True
    return mask
'''),
    # masked softmax over the wrong axis
    Wrong("masked_softmax", "masked softmax over the wrong axis", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    m = np.max(x, axis=0, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    total = e.sum(axis=0, keepdims=True)
    return e / np.where(total > 0, total, 1)
'''),
    Wrong("masked_softmax", "masked softmax over the wrong axis", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    x = x - np.max(x, axis=-2, keepdims=True)     # normalise each column
    e = np.nan_to_num(np.exp(x))
    s = e.sum(axis=-2, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)
'''),
    # finite sentinel too weak for the scores: -1e9 beaten by scores beyond 1e9
    Wrong("masked_softmax", "finite sentinel too weak for the scores", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -1e9)              # "minus infinity" for practical purposes
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x) * mask                          # rows with no allowed key: all zero
    total = e.sum(axis=-1, keepdims=True)
    return (e / np.where(total > 0, total, 1)).astype(scores.dtype)
'''),
    Wrong("masked_softmax", "finite sentinel too weak for the scores", '''
def masked_softmax(scores, mask):
    bias = np.where(mask, 0.0, -1e9)              # an additive mask, as in BERT
    x = scores + bias
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    e = e * np.any(mask, axis=-1, keepdims=True)  # a row with no allowed key: all zero
    return (e / e.sum(axis=-1, keepdims=True).clip(min=1e-30)).astype(scores.dtype)
'''),
    # your code assumes 2-D input
    Wrong("masked_softmax", "your code assumes 2-D input", '''
def masked_softmax(scores, mask):
    T_q, T_k = scores.shape
    out = np.zeros((T_q, T_k), dtype=scores.dtype)
    for i in range(T_q):
        allowed = mask[i] if mask.shape[0] == T_q else mask[0]
        if allowed.any():
            s = np.where(allowed, scores[i], -np.inf)
            e = np.exp(s - s.max())
            out[i] = e / e.sum()
    return out
'''),
    Wrong("masked_softmax", "your code assumes 2-D input", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    m = np.max(x, axis=1, keepdims=True)          # axis 1: across the keys of a row
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    total = np.sum(e, axis=1, keepdims=True)
    return e / np.where(total > 0, total, 1)
'''),
]

WRONG += [
    # window looks forward (transposed: keys after the query), issue 21
    Wrong("sliding_window_mask", "window looks forward (transposed: keys after the query)", '''
def sliding_window_mask(t, window):
    i, j = np.indices((t, t))
    return (j >= i) & (j < i + window)
'''),
    Wrong("sliding_window_mask", "window looks forward (transposed: keys after the query)", '''
def sliding_window_mask(t, window):
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        for j in range(max(0, i - window + 1), i + 1):
            mask[j, i] = True      # rows and columns swapped
    return mask
'''),
]
