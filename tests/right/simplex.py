"""02-simplex: correct softmax and is_row_stochastic, in many styles."""
from . import Right

RIGHT = [
    # ------------------------------------------------------------------ softmax
    Right("softmax", "loops over every row with np.ndindex", '''
def softmax(scores):
    out = np.empty_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        row = scores[index]
        e = np.exp(row - row.max())
        out[index] = e / e.sum()
    return out
'''),
    Right("softmax", "float64 then cast back", '''
def softmax(scores):
    x = scores.astype(np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return (e / e.sum(axis=-1, keepdims=True)).astype(scores.dtype)
'''),
    # log(s) kept apart from m: rows within max(4 n, 8) eps (exp(x - lse) with lse = m + log(s)
    # is right too, within the lse's slack: below)
    Right("softmax", "log-softmax, then one exp", '''
def softmax(scores):
    shifted = scores - np.max(scores, axis=-1, keepdims=True)
    log_weights = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return np.exp(log_weights)
'''),
    Right("softmax", "pure Python on a 2-D view, a helper named check, a print to stderr", '''
import math
import sys

def check(scores):
    if scores.shape[-1] < 1:
        raise ValueError("empty rows")
    if np.abs(scores).max() > 1000:
        print("check: large scores, max |x| =", float(np.abs(scores).max()), file=sys.stderr)

def softmax(scores):
    check(scores)
    rows = scores.reshape(-1, scores.shape[-1])
    out = np.empty(rows.shape, dtype=scores.dtype)
    for r, row in enumerate(rows.tolist()):
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        total = sum(exps)
        out[r] = [v / total for v in exps]
    return out.reshape(scores.shape)
''', note="stderr"),
    Right("softmax", "recursion over the leading axes, warnings.warn", '''
import warnings

def softmax(scores):
    if scores.ndim > 1:
        return np.stack([softmax(part) for part in scores])
    if scores.max() - scores.min() > 50:
        warnings.warn("a very peaked row: some weights underflow to 0")
    e = np.exp(scores - scores.max())
    return e / e.sum()
''', note="UserWarning"),
    Right("softmax", "a class with __call__ and np.apply_along_axis", '''
class Softmax:
    axis = -1

    @staticmethod
    def row(x):
        e = np.exp(x - np.max(x))
        return e / np.sum(e)

    def __call__(self, scores):
        return np.apply_along_axis(self.row, self.axis, scores)

softmax = Softmax()
'''),

    # ------------------------------------------------------------------ is_row_stochastic
    # atol=None: the slack rounding allows for a row of n entries, max(4 n, 8) eps of W's dtype
    Right("is_row_stochastic", "pure Python loops over rows and entries", '''
import math

def is_row_stochastic(W, atol=None):
    W = np.asarray(W)
    n = W.shape[-1]
    if atol is None:
        atol = max(4 * n, 8) * float(np.finfo(W.dtype).eps)
    for row in W.reshape(-1, n).tolist():
        for w in row:
            if not math.isfinite(w) or w < 0 or w > 1:
                return False
        if abs(sum(row) - 1) > atol:
            return False
    return True
'''),
    Right("is_row_stochastic", "one boolean expression, attncore's default_atol", '''
from attncore.invariants import default_atol

def is_row_stochastic(W, atol=None):
    tolerance = default_atol(W.shape[-1], W.dtype) if atol is None else atol
    entries_ok = np.isfinite(W) & (W >= 0) & (W <= 1)
    sums_ok = np.abs(np.sum(W, axis=-1) - 1) <= tolerance
    return bool(entries_ok.all() and sums_ok.all())
'''),
    Right("is_row_stochastic", "float64 and np.isclose with rtol=0 (the default from W's own dtype)", '''
def is_row_stochastic(W, atol=None):
    if atol is None:                      # before the cast: the slack of W's own dtype
        atol = max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps
    W = np.asarray(W, dtype=np.float64)
    if np.isnan(W).any() or np.isinf(W).any():
        return False
    in_range = np.logical_and(W >= 0.0, W <= 1.0).all()
    return bool(in_range and np.isclose(W.sum(axis=-1), 1.0, rtol=0.0, atol=atol).all())
'''),
    Right("is_row_stochastic", "asserts caught, a print to stdout", '''
def is_row_stochastic(W, atol=None):
    n = W.shape[-1]
    atol = atol if atol is not None else np.finfo(W.dtype).eps * max(4 * n, 8)
    try:
        assert np.all(np.isfinite(W)), "an entry is not finite"
        assert W.min() >= 0 and W.max() <= 1, "an entry is outside [0, 1]"
        assert np.max(np.abs(W.sum(axis=-1) - 1)) <= atol, "a row does not sum to 1"
    except AssertionError as why:
        print("not row-stochastic:", why)
        return False
    return True
''', note="stdout"),
    Right("is_row_stochastic", "helpers, early returns, a print to stderr", '''
import sys

def _all_finite(W):
    return not (np.isnan(W).any() or np.isinf(W).any())

def _in_unit_interval(W):
    return not ((W < 0).any() or (W > 1).any())

def _rounding_slack(W):
    eps = np.finfo(W.dtype).eps
    return max(4 * W.shape[-1], 8) * eps

def is_row_stochastic(W, atol=None):
    if not _all_finite(W):
        print("NaN or inf in W", file=sys.stderr)
        return False
    if not _in_unit_interval(W):
        return False
    worst = np.max(np.abs(W.sum(axis=-1) - 1))
    return bool(worst <= (_rounding_slack(W) if atol is None else atol))
''', note="stderr"),
    Right("is_row_stochastic", "a class with __call__, warnings.warn on NaN", '''
import warnings

class RowStochastic:
    def default_atol(self, W):
        return max(4 * W.shape[-1], 8) * np.finfo(W.dtype).eps

    def __call__(self, W, atol=None):
        if np.isnan(W).any():
            warnings.warn("W contains NaN")
            return False
        if atol is None:
            atol = self.default_atol(W)
        finite = np.isfinite(W).all()
        bounded = (0 <= W).all() and (W <= 1).all()
        sums = W.sum(axis=-1)
        return bool(finite and bounded and (abs(sums - 1) <= atol).all())

is_row_stochastic = RowStochastic()
''', note="UserWarning"),
    Right('is_row_stochastic', 'held-out class: returns numpy.bool_', '''
def is_row_stochastic(W, atol=None):
    n = W.shape[-1]
    if atol is None:
        atol = max(4 * n, 8) * np.finfo(W.dtype).eps
    return (np.isfinite(W).all() & ((W >= 0) & (W <= 1)).all()
            & (np.abs(W.sum(axis=-1) - 1) <= atol).all())
'''),
]

RIGHT += [
    # exp(x - lse) (scipy's softmax, FlashAttention's backward): rows miss 1 by up to |lse| eps,
    # within the slack default_atol(n, dtype, lse)
    Right("softmax", "exp(x - lse), lse rounded in the scores' dtype", '''
def softmax(scores):
    m = np.max(scores, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(scores - m), axis=-1, keepdims=True))
    return np.exp(scores - lse)
''', note="log-sum-exp"),
    Right("softmax", "a logsumexp helper, then exp(x - lse)", '''
def logsumexp(x):
    top = x.max(axis=-1, keepdims=True)
    return top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True))

def softmax(scores):
    return np.exp(scores - logsumexp(scores))
''', note="log-sum-exp"),
]
