"""03-masking: correct causal_mask, key_padding_mask, sliding_window_mask and masked_softmax,
in many styles (NumPy only, no attncore: the exercise's rule)."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ causal_mask
    Right("causal_mask", "plain loops", '''
def causal_mask(t_q, t_k):
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        for j in range(t_k):
            mask[i, j] = j <= i + (t_k - t_q)
    return mask
'''),
    Right("causal_mask", "np.tri with the offset", '''
def causal_mask(t_q, t_k):
    return np.tri(t_q, t_k, k=t_k - t_q, dtype=bool)
'''),
    Right("causal_mask", "the complement of np.triu", '''
def causal_mask(t_q, t_k):
    future = np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)
    return ~future
'''),
    Right("causal_mask", "slices clipped at 0, a helper named check, a print to stderr", '''
import sys

def check(t_q, t_k):
    if t_q < 1 or t_k < 1:
        raise ValueError("lengths must be positive")
    if t_q > t_k:
        print(f"causal_mask: {t_q - t_k} queries see no key", file=sys.stderr)

def causal_mask(t_q, t_k):
    check(t_q, t_k)
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        stop = max(i + t_k - t_q + 1, 0)
        mask[i, :stop] = True
    return mask
''', note="stderr"),
    Right("causal_mask", "np.fromfunction", '''
def causal_mask(t_q, t_k):
    offset = t_k - t_q
    return np.fromfunction(lambda i, j: j <= i + offset, (t_q, t_k), dtype=int)
'''),
    Right("causal_mask", "a class with __call__ and np.subtract.outer", '''
class CausalMask:
    def __call__(self, t_q, t_k):
        behind = np.subtract.outer(np.arange(t_q), np.arange(t_k))  # i - j
        return behind >= t_q - t_k

causal_mask = CausalMask()
'''),
    Right("causal_mask", "logging.info after logging.basicConfig, np.tril of ones", '''
import logging
logging.basicConfig(level=logging.INFO)

def causal_mask(t_q, t_k):
    logging.info("causal mask %d x %d, offset %d", t_q, t_k, t_k - t_q)
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
'''),

    # ------------------------------------------------------------------ key_padding_mask
    Right("key_padding_mask", "a loop over the sequences", '''
def key_padding_mask(lengths, t_k):
    mask = np.zeros((len(lengths), 1, t_k), dtype=bool)
    for b, n in enumerate(lengths):
        mask[b, 0, :n] = True
    return mask
'''),
    Right("key_padding_mask", "np.expand_dims", '''
def key_padding_mask(lengths, t_k):
    real = np.arange(t_k) < np.asarray(lengths).reshape(-1, 1)   # (B, t_k)
    return np.expand_dims(real, axis=1)
'''),
    Right("key_padding_mask", "list comprehension then reshape", '''
def key_padding_mask(lengths, t_k):
    rows = [[j < int(n) for j in range(t_k)] for n in lengths]
    return np.array(rows, dtype=bool).reshape(len(lengths), 1, t_k)
'''),
    Right("key_padding_mask", "np.less.outer and a print to stdout", '''
def key_padding_mask(lengths, t_k):
    print("lengths:", list(lengths), "t_k:", t_k)
    return np.less.outer(np.arange(t_k), lengths).T[:, None, :]
''', note="stdout"),
    Right("key_padding_mask", "warnings.warn for an empty sequence", '''
import warnings

def key_padding_mask(lengths, t_k):
    lengths = np.asarray(lengths)
    if (lengths == 0).any():
        warnings.warn("a sequence of length 0: its queries will see no key")
    j = np.arange(t_k)[np.newaxis, np.newaxis, :]
    return j < lengths[:, np.newaxis, np.newaxis]
''', note="UserWarning"),
    Right("key_padding_mask", "a class with __call__, np.repeat of a boolean row", '''
class KeyPadding:
    def __call__(self, lengths, t_k):
        B = len(lengths)
        positions = np.repeat(np.arange(t_k)[None, :], B, axis=0)
        return (positions < np.array(lengths)[:, None]).reshape(B, 1, t_k)

key_padding_mask = KeyPadding()
'''),

    # ------------------------------------------------------------------ sliding_window_mask
    Right("sliding_window_mask", "plain loops", '''
def sliding_window_mask(t, window):
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        for j in range(t):
            if i - window < j <= i:
                mask[i, j] = True
    return mask
'''),
    Right("sliding_window_mask", "reuses causal_mask", '''
def sliding_window_mask(t, window):
    too_old = np.tri(t, t, k=-window, dtype=bool)   # j <= i - window
    return causal_mask(t, t) & ~too_old
'''),
    Right("sliding_window_mask", "np.tril of np.triu", '''
def sliding_window_mask(t, window):
    band = np.triu(np.ones((t, t), dtype=bool), k=-(window - 1))
    return np.tril(band)
'''),
    Right("sliding_window_mask", "slices clipped at 0, logging.warning", '''
import logging

def sliding_window_mask(t, window):
    if window > t:
        logging.warning("window %d is longer than the sequence (%d)", window, t)
    mask = np.zeros((t, t), dtype=bool)
    for i in range(t):
        mask[i, max(0, i - window + 1):i + 1] = True
    return mask
''', note="stderr"),
    Right("sliding_window_mask", "np.subtract.outer of positions", '''
def sliding_window_mask(t, window):
    age = np.subtract.outer(np.arange(t), np.arange(t))   # i - j
    return (age >= 0) & (age < window)
'''),
    Right("sliding_window_mask", "recursion: one more query and key at a time", '''
def sliding_window_mask(t, window):
    if t == 0:
        return np.zeros((0, 0), dtype=bool)
    mask = np.zeros((t, t), dtype=bool)
    mask[:t - 1, :t - 1] = sliding_window_mask(t - 1, window)
    mask[t - 1, max(0, t - window):] = True
    return mask
'''),

    # ------------------------------------------------------------------ masked_softmax
    Right("masked_softmax", "the additive mask scores + np.log(mask) (RuntimeWarning)", '''
def masked_softmax(scores, mask):
    x = scores + np.log(mask)                       # log(True) = 0, log(False) = -inf
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)
''', note="RuntimeWarning"),
    Right("masked_softmax", "np.ma masked arrays", '''
def masked_softmax(scores, mask):
    blocked = ~np.broadcast_to(mask, scores.shape)
    x = np.ma.masked_array(scores, mask=blocked)
    e = np.ma.exp(x - x.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights.filled(0).astype(scores.dtype)
''', note="RuntimeWarning"),  # np.ma still computes exp of the masked scores: overflow
    Right("masked_softmax", "0/0 repaired afterwards with np.nan_to_num (RuntimeWarning)", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    e = np.exp(x - x.max(axis=-1, keepdims=True))   # NaN in rows with no allowed key
    w = e / e.sum(axis=-1, keepdims=True)
    return np.nan_to_num(w, nan=0.0)
''', note="RuntimeWarning"),
    Right("masked_softmax", "a finite np.finfo(dtype).min sentinel, empty rows zeroed", '''
def masked_softmax(scores, mask):
    lowest = np.finfo(scores.dtype).min
    x = np.where(mask, scores, lowest)
    e = np.exp(x - x.max(axis=-1, keepdims=True)) * mask
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
'''),
    Right("masked_softmax", "pure Python per row, a print to stdout", '''
import math

def masked_softmax(scores, mask):
    full = np.broadcast_to(mask, scores.shape)
    out = np.zeros_like(scores)
    empty = 0
    for index in np.ndindex(scores.shape[:-1]):
        row, allowed = scores[index].tolist(), full[index].tolist()
        kept = [s for s, a in zip(row, allowed) if a]
        if not kept:
            empty += 1
            continue
        top = max(kept)
        exps = [math.exp(s - top) if a else 0.0 for s, a in zip(row, allowed)]
        total = sum(exps)
        out[index] = [v / total for v in exps]
    print(f"masked_softmax: {empty} rows with no allowed key")
    return out
''', note="stdout"),
    Right("masked_softmax", "boolean indexing row by row, warnings.warn for empty rows", '''
import warnings

def masked_softmax(scores, mask):
    full = np.broadcast_to(mask, scores.shape)
    out = np.zeros(scores.shape, dtype=scores.dtype)
    for index in np.ndindex(scores.shape[:-1]):
        allowed = full[index]
        if not allowed.any():
            warnings.warn(f"row {index} has no allowed key: all zeros")
            continue
        kept = scores[index][allowed]
        e = np.exp(kept - kept.max())
        out[index][allowed] = e / e.sum()
    return out
''', note="UserWarning"),
    Right("masked_softmax", "an additive 0/-inf mask, 0/0 repaired with np.where (RuntimeWarning)", '''
def masked_softmax(scores, mask):
    additive = np.where(mask, 0.0, -np.inf).astype(scores.dtype)
    x = scores + additive
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    w = e / np.sum(e, axis=-1, keepdims=True)
    return np.where(np.isnan(w), 0, w)
''', note="RuntimeWarning"),
]

RIGHT += [
    # exp(x - lse) over the allowed keys: rows within default_atol(n, dtype, lse)
    Right("masked_softmax", "exp(x - lse) with lse over the allowed keys", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    m = np.max(x, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    s = np.sum(np.exp(x - m), axis=-1, keepdims=True)
    lse = m + np.log(np.where(s > 0, s, 1))
    return np.where(s > 0, np.exp(x - lse), 0).astype(scores.dtype)
''', note="log-sum-exp"),
    Right("masked_softmax", "exp(x - lse), NaN of empty rows repaired (RuntimeWarning)", '''
def masked_softmax(scores, mask):
    x = np.where(mask, scores, -np.inf)
    m = x.max(axis=-1, keepdims=True)
    safe = np.where(np.isneginf(m), 0, m)
    with np.errstate(divide="ignore"):
        lse = safe + np.log(np.exp(x - safe).sum(axis=-1, keepdims=True))
    return np.nan_to_num(np.exp(x - lse), nan=0.0)
'''),
]
