"""03-masking: causal_mask, key_padding_mask, sliding_window_mask and masked_softmax,
written without the catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- causal_mask
    Unseen("causal_mask", "np.tri without a dtype: a float mask of 0s and 1s",
           ("dtype", "bool"), '''
def causal_mask(t_q, t_k):
    return np.tri(t_q, t_k, k=t_k - t_q)
'''),
    Unseen("causal_mask", "built with the key axis first: shape (t_k, t_q)",
           ("(t_k, t_q)", "transpose", "rows and columns"), '''
def causal_mask(t_q, t_k):
    q = np.arange(t_q)
    k = np.arange(t_k)
    return k[:, None] <= q[None, :] + (t_k - t_q)
'''),
    Unseen("causal_mask", "the first t_q rows of a square (t_k, t_k) mask: aligned top-left",
           ("top-left", "align"), '''
def causal_mask(t_q, t_k):
    square = np.tril(np.ones((t_k, t_k), dtype=bool))
    return square[:t_q]
'''),
    Unseen("causal_mask", "the last t_q rows of a square mask, cut to t_k columns: wrong when t_q > t_k",
           ("more queries than keys", "t_q > t_k", "see no key", "top-left"), '''
def causal_mask(t_q, t_k):
    n = max(t_q, t_k)
    square = np.tril(np.ones((n, n), dtype=bool))
    return square[n - t_q:, :t_k]
'''),
    Unseen("causal_mask", "the diagonal shifted by one: each query also sees the next key",
           ("off by one", "one key too many", "shifted", "+ 1"), '''
def causal_mask(t_q, t_k):
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)
'''),
    # ------------------------------------------------------------- key_padding_mask
    Unseen("key_padding_mask", "mask[b, 0, -n_pad:] = False with n_pad = 0 blocks the whole row",
           ("no padding", "n_pad = 0", "whole row", "every key", "from the end", "negative",
            "wrap"), '''
def key_padding_mask(lengths, t_k):
    mask = np.ones((len(lengths), 1, t_k), dtype=bool)
    for b, n in enumerate(lengths):
        n_pad = t_k - n
        mask[b, 0, -n_pad:] = False
    return mask
'''),
    Unseen("key_padding_mask", "lengths broadcast as a row: shape (1, B, t_k)",
           ("(1, B", "(B, 1, t_k)", "lengths[:, None, None]"), '''
def key_padding_mask(lengths, t_k):
    keys = np.arange(t_k)[None, None, :]
    return keys < np.asarray(lengths)[:, None]
'''),
    Unseen("key_padding_mask", "filled with 1.0 in a float array: a float mask",
           ("dtype", "bool"), '''
def key_padding_mask(lengths, t_k):
    mask = np.zeros((len(lengths), 1, t_k))
    for b, n in enumerate(lengths):
        mask[b, 0, :n] = 1
    return mask
'''),
    Unseen("key_padding_mask", "keys counted from 1: the last real key is blocked",
           ("off by one", "last real key", "from 1", "one key"), '''
def key_padding_mask(lengths, t_k):
    positions = np.arange(1, t_k + 1)
    return positions[None, None, :] < np.asarray(lengths)[:, None, None]
'''),
    Unseen("key_padding_mask", "lengths read as the number of pads: t_k - lengths real keys",
           ("t_k - lengths", "number of pads", "lengths as"), '''
def key_padding_mask(lengths, t_k):
    real = t_k - np.asarray(lengths)
    return np.arange(t_k)[None, None, :] < real[:, None, None]
'''),
    # ------------------------------------------------------------- sliding_window_mask
    Unseen("sliding_window_mask", "tril minus triu(k=-window): window + 1 keys",
           ("too wide", "window + 1", "one key too many", "one too many"), '''
def sliding_window_mask(t, window):
    past = np.tril(np.ones((t, t), dtype=bool))
    recent = np.triu(np.ones((t, t), dtype=bool), k=-window)
    return past & recent
'''),
    Unseen("sliding_window_mask", "a loop over mask[i, i - window:i]: the window ends before the query",
           ("diagonal", "own position", "itself", "shift"), '''
def sliding_window_mask(t, window):
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        mask[i, max(0, i - window):i] = True
    return mask
'''),
    Unseen("sliding_window_mask", "np.tri differences: an integer-valued float mask",
           ("dtype", "bool"), '''
def sliding_window_mask(t, window):
    return np.tri(t, t, 0) - np.tri(t, t, -window)
'''),
    Unseen("sliding_window_mask", "np.meshgrid's xy indexing swaps queries and keys: the window looks forward",
           ("transpose", "forward", "future"), '''
def sliding_window_mask(t, window):
    i, j = np.meshgrid(np.arange(t), np.arange(t))
    return (j <= i) & (j > i - window)
'''),
    Unseen("sliding_window_mask", "the first t - window columns blocked for every query",
           ("columns 0", "every query", "in every row"), '''
def sliding_window_mask(t, window):
    mask = np.tril(np.ones((t, t), dtype=bool))
    mask[:, :t - window] = False
    return mask
'''),
    # ------------------------------------------------------------- masked_softmax
    Unseen("masked_softmax", "the row maximum taken over every key, blocked ones included",
           ("maximum over", "row maximum", "max over", "blocked key", "underflow"), '''
def masked_softmax(scores, mask):
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(np.where(mask, scores, -np.inf) - m)
    total = e.sum(axis=-1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0)
'''),
    Unseen("masked_softmax", "mask.T: the mask read as (T_k, T_q)",
           ("transpose", "mask.T", "rows and columns"), '''
def masked_softmax(scores, mask):
    x = np.where(mask.T, scores, -np.inf)
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    return e / np.where(s > 0, s, 1)
'''),
    Unseen("masked_softmax", "computed in float64 and returned as float64",
           ("dtype", "float64"), '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores.astype(float), -np.inf)
    m = x.max(axis=-1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    e = np.exp(x - m)
    s = e.sum(axis=-1, keepdims=True)
    s[s == 0] = 1.0
    return e / s
'''),
    Unseen("masked_softmax", "exp of all scores times the mask, divided by the row sum: NaN rows and underflow",
           ("no allowed key", "fully masked", "0/0"), '''
def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True)) * mask
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Unseen("masked_softmax", "softmax over all keys, then the blocked ones zeroed",
           ("after", "sum to 1", "sums to"), '''
def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return np.where(mask, w, 0.0)
'''),
]
