"""02-simplex: softmax and is_row_stochastic, written without the catalogue."""
from . import Unseen

UNSEEN = [
    # ------------------------------------------------------------- softmax
    Unseen("softmax", "computed in float64 and never cast back: float32 in, float64 out",
           ("dtype", "float64"), '''
def softmax(scores):
    x = scores.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Unseen("softmax", "row sums re-expanded with [:, None], which only fits 2-D input",
           ("broadcast", "[:, None]", "2-D"), '''
def softmax(scores):
    m = scores.max(axis=-1)[..., None]
    e = np.exp(scores - m)
    return e / e.sum(axis=-1)[:, None]
'''),
    Unseen("softmax", "the row mean subtracted instead of the maximum: overflow on large rows",
           ("overflow", "mean"), '''
def softmax(scores):
    e = np.exp(scores - scores.mean(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Unseen("softmax", "the log-sum-exp without the maximum added back: each row off by exp(m)",
           ("own factor", "exp(m)", "maximum", "overflow", "sum to 1"), '''
def softmax(scores):
    m = scores.max(axis=-1, keepdims=True)
    log_norm = np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
    return np.exp(scores - log_norm)
'''),
    Unseen("softmax", "an epsilon added to the denominator: rows sum to 1 - 1e-9",
           ("sum to 1", "sums to 1", "row sum", "slack"), '''
def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / (e.sum(axis=-1, keepdims=True) + 1e-9)   # avoid dividing by zero
'''),
    Unseen("softmax", "the whole array flattened and normalised as one row",
           ("whole", "every entry", "all rows", "whole array"), '''
def softmax(scores):
    flat = scores.reshape(-1)
    e = np.exp(flat - flat.max())
    return (e / e.sum()).reshape(scores.shape)
'''),
    # ------------------------------------------------------------- is_row_stochastic
    Unseen("is_row_stochastic", "atol=None passed on to np.allclose, which cannot take None",
           ("None", "atol=None"), '''
def is_row_stochastic(W, atol=None):
    W = np.asarray(W)
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.allclose(W.sum(axis=-1), 1, rtol=0, atol=atol))
'''),
    Unseen("is_row_stochastic", "a default tolerance of 1e-8 per entry, blind to the dtype",
           ("float32", "dtype", "eps"), '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = 1e-8 * W.shape[-1]
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Unseen("is_row_stochastic", "entries allowed up to 1 + atol",
           ("above 1", "1.0005"), '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)):
        return False
    if np.any(W < 0) or np.any(W > 1 + atol):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Unseen("is_row_stochastic", "rows summed with axis=1, which a single 1-D row does not have",
           ("1-D", "axis 1", "single row", "axis=1", "columns"), '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or (W < 0).any() or (W > 1).any():
        return False
    return bool((np.abs(W.sum(axis=1) - 1) <= atol).all())
'''),
    Unseen("is_row_stochastic", "only the row sums checked: negative entries and entries above 1 pass",
           ("negative", "[0, 1]", "above 1"), '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
]
