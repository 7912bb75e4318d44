"""02-simplex: wrong softmax and is_row_stochastic, as learners write them."""
from . import Wrong

WRONG = [
    # ------------------------------------------------------------- softmax
    # softmax over the wrong axis
    Wrong("softmax", "softmax over the wrong axis", '''
def softmax(scores):
    shifted = scores - scores.max(axis=0, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=0, keepdims=True)
'''),
    Wrong("softmax", "your code assumes 2-D input", '''
def softmax(scores):
    # axis 1 = across the columns of each row
    m = np.max(scores, axis=1, keepdims=True)
    e = np.exp(scores - m)
    return e / np.sum(e, axis=1, keepdims=True)
'''),
    # unstable softmax (overflow)
    Wrong("softmax", "unstable softmax (overflow)", '''
def softmax(scores):
    return np.exp(scores) / np.sum(np.exp(scores), axis=-1, keepdims=True)
'''),
    Wrong("softmax", "unstable softmax (overflow)", '''
def softmax(scores):
    # work in log space: log softmax = x - log(sum(exp(x)))
    log_norm = np.log(np.exp(scores).sum(axis=-1, keepdims=True))
    return np.exp(scores - log_norm)
'''),
    # a global instead of per-row maximum
    Wrong("softmax", "a global instead of per-row maximum", '''
def softmax(scores):
    e = np.exp(scores - np.max(scores))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Wrong("softmax", "a global instead of per-row maximum", '''
def softmax(scores):
    rows = scores.reshape(-1, scores.shape[-1])
    m = rows.max()
    out = np.zeros_like(rows)
    for i, row in enumerate(rows):
        e = np.exp(row - m)
        out[i] = e / e.sum()
    return out.reshape(scores.shape)
'''),
    # normalised over the whole array instead of each row
    Wrong("softmax", "normalised over the whole array instead of each row", '''
def softmax(scores):
    result = np.zeros_like(scores)
    for i in range(len(scores)):
        row = scores[i]
        e = np.exp(row - np.max(row))
        result[i] = e / np.sum(e)
    return result
'''),
    # row maximum or row sum without keepdims
    Wrong("softmax", "row maximum or row sum without keepdims", '''
def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # input modified in place
    Wrong("softmax", "input modified in place", '''
def softmax(scores):
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores
'''),
    Wrong("softmax", "input modified in place", '''
def softmax(scores):
    x = scores  # shifting does not change the softmax
    x -= np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # wrong output shape or dtype
    Wrong("softmax", "wrong output shape or dtype", '''
def softmax(scores):
    out = np.zeros(scores.shape)
    for idx in np.ndindex(scores.shape[:-1]):
        row = scores[idx]
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return out
'''),
    Wrong("softmax", "wrong output shape or dtype", '''
def softmax(scores):
    n = scores.shape[-1]
    rows = scores.reshape(-1, n)  # one row per line, whatever the leading dims
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    # NaN or inf in the output
    Wrong("softmax", "NaN or inf in the output", '''
def softmax(scores):
    # shift by the largest magnitude, so that every exponent is <= 0
    m = np.abs(scores).max(axis=-1, keepdims=True)
    e = np.exp(scores - m)
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Wrong("softmax", "minimum subtracted instead of the maximum", '''
def softmax(scores):
    low = np.min(scores, axis=-1, keepdims=True)
    e = np.exp(scores - low)  # every exponent >= 0, so nothing underflows to 0
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # ---------------------------------------------------- is_row_stochastic
    Wrong("is_row_stochastic", "an array instead of one bool", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    sums_ok = np.abs(W.sum(axis=-1) - 1) <= atol
    in_range = np.all((W >= 0) & (W <= 1), axis=-1)
    return sums_ok & in_range & np.all(np.isfinite(W), axis=-1)
'''),
    Wrong("is_row_stochastic", "columns checked instead of rows", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.isfinite(W).all() or (W < 0).any() or (W > 1).any():
        return False
    return bool(np.all(np.abs(W.sum(axis=0) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "columns checked instead of rows", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or W.min() < 0 or W.max() > 1:
        return False
    for j in range(W.shape[1]):
        if abs(np.sum(W[:, j]) - 1) > atol:
            return False
    return True
'''),
    Wrong("is_row_stochastic", "total of all entries checked instead of each row", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    n_rows = W.shape[0]
    ok_entries = np.all(np.isfinite(W)) and np.all((0 <= W) & (W <= 1))
    return bool(ok_entries and abs(W.sum() - n_rows) <= atol)
'''),
    Wrong("is_row_stochastic", "negative entries not rejected", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    finite = np.all(np.isfinite(W))
    return bool(finite and np.all(W <= 1) and np.allclose(W.sum(axis=-1), 1, rtol=0, atol=atol))
'''),
    Wrong("is_row_stochastic", "entries above 1 not rejected", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    # entries >= 0 and rows summing to 1 means every entry is <= 1 anyway
    if not np.all(np.isfinite(W)) or np.any(W < 0):
        return False
    return bool(np.all(np.abs(np.sum(W, axis=-1) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "0 and 1 excluded (strict inequalities)", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)):
        return False
    if not np.all((W > 0) & (W < 1)):  # probabilities lie strictly between 0 and 1
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "exact equality instead of the tolerance", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.isfinite(W).all() or not ((W >= 0) & (W <= 1)).all():
        return False
    return bool((W.sum(axis=-1) == 1).all())
'''),
    Wrong("is_row_stochastic", "tolerance other than atol", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.allclose(W.sum(axis=-1), 1))
'''),
    Wrong("is_row_stochastic", "tolerance other than atol", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) < 1e-6))
'''),
    Wrong("is_row_stochastic", "tolerance other than atol", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    entries_ok = np.isfinite(W).all() and (W >= 0).all() and (W <= 1).all()
    return bool(entries_ok and np.isclose(W.sum(axis=-1), 1.0, atol=atol).all())
'''),
    Wrong("is_row_stochastic", "NaN rows accepted", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if (W < 0).any() or (W > 1).any():
        return False
    return not (np.abs(W.sum(axis=-1) - 1) > atol).any()
'''),
    Wrong("is_row_stochastic", "NaN rows accepted", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    row_sums = W.sum(axis=-1)
    bad = np.any(W < 0) or np.any(W > 1) or np.any(np.abs(row_sums - 1) > atol)
    return not bad
'''),
    # a fixed default tolerance: the signature of the first edition
    Wrong("is_row_stochastic", "a fixed default tolerance instead of one for n and the dtype", '''
def is_row_stochastic(W, atol=1e-6):
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "a fixed default tolerance instead of one for n and the dtype", '''
def is_row_stochastic(W, atol=None):
    tolerance = 1e-6 if atol is None else atol
    rows_ok = [abs(row.sum() - 1) <= tolerance for row in W.reshape(-1, W.shape[-1])]
    return bool(np.isfinite(W).all() and (W >= 0).all() and (W <= 1).all() and all(rows_ok))
'''),
    # softmax over the wrong axis, in a loop over columns
    Wrong("softmax", "softmax over the wrong axis", '''
def softmax(scores):
    out = np.empty_like(scores)
    for j in range(scores.shape[-1]):
        col = scores[..., j]
        e = np.exp(col - col.max(axis=0))
        out[..., j] = e / e.sum(axis=0)
    return out
'''),
    # NaN or inf in the output: shifted by the mean
    Wrong("softmax", "NaN or inf in the output", '''
def softmax(scores):
    centred = scores - scores.mean(axis=-1, keepdims=True)
    e = np.exp(centred)
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # your code assumes 2-D input
    Wrong("softmax", "your code assumes 2-D input", '''
def softmax(scores):
    rows, cols = scores.shape
    out = np.zeros((rows, cols), dtype=scores.dtype)
    for i in range(rows):
        e = np.exp(scores[i] - scores[i].max())
        out[i] = e / e.sum()
    return out
'''),
    Wrong("softmax", "your code assumes 2-D input", '''
def softmax(scores):
    m = scores.max(axis=-1)[:, None]
    e = np.exp(scores - m)
    return e / e.sum(axis=-1)[:, None]
'''),
    Wrong("is_row_stochastic", "your code assumes 2-D input", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    W = np.atleast_2d(W)
    n_rows, n_cols = W.shape
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return all(abs(W[i, :].sum() - 1) <= atol for i in range(n_rows))
'''),
    # minimum subtracted instead of the maximum
    Wrong("softmax", "minimum subtracted instead of the maximum", '''
def softmax(scores):
    e = np.exp(scores - np.amin(scores, axis=-1, keepdims=True))
    total = np.sum(e, axis=-1, keepdims=True)
    return e / total
'''),
]

WRONG += [
    # an explicit atol = 0 ignored (atol or default)
    Wrong("is_row_stochastic", "an explicit atol = 0 ignored (atol or default)", '''
def is_row_stochastic(W, atol=None):
    atol = atol or max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "an explicit atol = 0 ignored (atol or default)", '''
def is_row_stochastic(W, atol=None):
    if not atol:
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    ok = np.isfinite(W).all() and (W >= 0).all() and (W <= 1).all()
    return bool(ok and (np.abs(W.sum(-1) - 1) <= atol).all())
'''),
    # default tolerance from the wrong n (not the row length)
    Wrong("is_row_stochastic", "default tolerance from the wrong n (not the row length)", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        atol = max(4 * W.size, 8) * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    Wrong("is_row_stochastic", "default tolerance from the wrong n (not the row length)", '''
def is_row_stochastic(W, atol=None):
    if atol is None:
        n = len(W)
        atol = max(4 * n, 8) * np.finfo(W.dtype).eps
    ok = np.isfinite(W).all() and (W >= 0).all() and (W <= 1).all()
    return bool(ok and (np.abs(W.sum(-1) - 1) <= atol).all())
'''),
    # held-out class: divides by the sum of the whole array
    Wrong('softmax', 'normalised over the whole array instead of each row', '''
def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum()
'''),
    # held-out class: rounds to 6 decimals
    Wrong('softmax', 'right values, rounded', '''
def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.round(e / e.sum(axis=-1, keepdims=True), 6)
'''),
    # held-out class: base-2 exponent (np.exp2)
    Wrong('softmax', 'exp2 instead of exp', '''
def softmax(scores):
    e = np.exp2(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    # held-out class: default atol uses float64 eps whatever the dtype
    Wrong('is_row_stochastic', "default slack from float64's eps, not W's dtype", '''
def is_row_stochastic(W, atol=None):
    n = W.shape[-1]
    if atol is None:
        atol = max(4 * n, 8) * np.finfo(float).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    # held-out class: default slack 4n eps without the floor of 8
    Wrong('is_row_stochastic', 'default slack without its floor of 8 eps', '''
def is_row_stochastic(W, atol=None):
    n = W.shape[-1]
    if atol is None:
        atol = 4 * n * np.finfo(W.dtype).eps
    if not np.all(np.isfinite(W)) or np.any(W < 0) or np.any(W > 1):
        return False
    return bool(np.all(np.abs(W.sum(axis=-1) - 1) <= atol))
'''),
    # held-out class: special case n == 1 returns np.ones (float64 for float32)
    Wrong('softmax', 'wrong output shape or dtype', '''
def softmax(scores):
    if scores.shape[-1] == 1:
        return np.ones(scores.shape)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
]
