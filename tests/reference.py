"""Slow, obviously-correct reference implementations for the attncore tests.

Everything here loops over Python scalars: math.exp, math.log and float
accumulation in Python floats (IEEE float64), never a vectorised NumPy op, so a
bug in attncore's broadcasting, axis handling or masking cannot be mirrored
here by accident. Functions take nested sequences or arrays of *one* row or
*one* 2-D matrix; the tests loop over leading dimensions themselves (see
`rows_apply`). Results come back as Python lists (or floats); the tests
compare them with np.testing.assert_allclose.

Conventions (DESIGN.md): rows are queries, columns are keys; a boolean mask
entry True means "this query may attend to this key".
"""
import math

NEG_INF = float("-inf")


def _floats(row):
    return [float(x) for x in row]


def _keep(row, mask):
    """Mask as a list of bools (all True when mask is None)."""
    if mask is None:
        return [True] * len(row)
    return [bool(m) for m in mask]


# --------------------------------------------------------------------------- softmax family


def logsumexp_row(row, mask=None):
    """log(sum_j exp(x_j)) over the kept entries; -inf when nothing is kept."""
    row, keep = _floats(row), _keep(row, mask)
    kept = [x for x, k in zip(row, keep) if k and x != NEG_INF]
    if not kept:
        return NEG_INF
    m = max(kept)
    total = 0.0
    for x in kept:
        total += math.exp(x - m)
    return m + math.log(total)


def softmax_row(row, mask=None):
    """exp(x_i - m) / sum_j exp(x_j - m) with m the max over kept entries.

    Masked (or -inf) entries get exactly 0; a row with nothing kept is all zeros.
    """
    row, keep = _floats(row), _keep(row, mask)
    kept = [x for x, k in zip(row, keep) if k and x != NEG_INF]
    if not kept:
        return [0.0] * len(row)
    m = max(kept)
    numerators = []
    for x, k in zip(row, keep):
        numerators.append(math.exp(x - m) if k and x != NEG_INF else 0.0)
    total = 0.0
    for e in numerators:
        total += e
    return [e / total for e in numerators]


def log_softmax_row(row, mask=None):
    """x_i - logsumexp(x); -inf for masked entries and for every entry of an empty row."""
    row, keep = _floats(row), _keep(row, mask)
    lse = logsumexp_row(row, mask)
    out = []
    for x, k in zip(row, keep):
        out.append(x - lse if k and x != NEG_INF and lse != NEG_INF else NEG_INF)
    return out


def softmax_one_row(row):
    """exp(x_i) / (1 + sum_j exp(x_j)), evaluated with a shift so it never overflows."""
    row = _floats(row)
    m = max(0.0, max(row))
    numerators = [math.exp(x - m) for x in row]
    total = math.exp(-m)
    for e in numerators:
        total += e
    return [e / total for e in numerators]


def sparsemax_row(row, mask=None, iterations=200):
    """Euclidean projection onto the simplex, by bisection on the threshold tau.

    The library sorts; this finds tau with sum_i max(x_i - tau, 0) = 1 by bisection
    (the left side is continuous and decreasing in tau, equal to >= 1 at
    tau = max - 1 and 0 at tau = max), then recomputes tau exactly from the support
    {i : x_i > tau} so the result does not carry the bisection's last-step error.
    Works on x - max (sparsemax is shift-invariant), so rows at large offsets keep
    their digits. Masked (or -inf) entries get exactly 0; a row with nothing kept is all zeros.
    """
    row, keep = _floats(row), _keep(row, mask)
    kept = [x for x, k in zip(row, keep) if k and x != NEG_INF]
    if not kept:
        return [0.0] * len(row)
    top = max(kept)
    kept = [x - top for x in kept]
    lo, hi = -1.0, 0.0

    def excess(tau):
        total = 0.0
        for x in kept:
            if x > tau:
                total += x - tau
        return total - 1.0

    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    tau = 0.5 * (lo + hi)
    support = [x for x in kept if x > tau]
    tau = (sum(support) - 1.0) / len(support)
    return [max(x - top - tau, 0.0) if k and x != NEG_INF else 0.0 for x, k in zip(row, keep)]


def hardmax_row(row, mask=None):
    """One-hot at the first maximum of the kept entries; all zeros when nothing is kept."""
    row, keep = _floats(row), _keep(row, mask)
    kept = [j for j, (x, k) in enumerate(zip(row, keep)) if k and x != NEG_INF]
    if not kept:
        return [0.0] * len(row)
    best = kept[0]
    for j in kept:
        if row[j] > row[best]:
            best = j
    return [1.0 if j == best else 0.0 for j in range(len(row))]


def _slices(row_fn, x, axis, mask):
    """(index of the slice without axis, row_fn of the slice) for every 1-D slice of x along
    axis, by explicit loops; mask, if given, must already have x's shape."""
    import numpy as np  # only for shape bookkeeping, never for arithmetic

    x = np.asarray(x)
    axis = axis % x.ndim
    other = [n for i, n in enumerate(x.shape) if i != axis]
    for index in np.ndindex(*other):
        full = (*index[:axis], slice(None), *index[axis:])
        row = [float(v) for v in x[full]]
        if mask is None:
            yield index, row_fn(row)
        else:
            yield index, row_fn(row, [bool(m) for m in np.asarray(mask)[full]])


def rows_apply(row_fn, x, axis=-1, mask=None):
    """Apply a one-row function to every 1-D slice of x along axis: an array of x's shape."""
    import numpy as np

    x = np.asarray(x)
    axis = axis % x.ndim
    out = np.empty(x.shape, dtype=np.float64)
    for index, result in _slices(row_fn, x, axis, mask):
        for j, value in enumerate(result):
            out[(*index[:axis], j, *index[axis:])] = value
    return out


def reduce_rows(row_fn, x, axis=-1, mask=None):
    """Like rows_apply for a function returning one number per slice (logsumexp): x's shape without axis."""
    import numpy as np

    x = np.asarray(x)
    out = np.empty([n for i, n in enumerate(x.shape) if i != axis % x.ndim], dtype=np.float64)
    for index, result in _slices(row_fn, x, axis, mask):
        out[index] = result
    return out


# --------------------------------------------------------------------------- attention (2-D)


def dot(a, b):
    total = 0.0
    for x, y in zip(a, b):
        total += float(x) * float(y)
    return total


def scores(q, k, scale=None):
    """S[i][j] = scale * q_i . k_j for q (T_q, d), k (T_k, d); scale defaults to 1/sqrt(d)."""
    q = [_floats(r) for r in q]
    k = [_floats(r) for r in k]
    d = len(q[0])
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    return [[scale * dot(qi, kj) for kj in k] for qi in q]


def attention_weights(q, k, mask=None, scale=None):
    s = scores(q, k, scale)
    if mask is None:
        return [softmax_row(row) for row in s]
    return [softmax_row(row, [bool(m) for m in mrow]) for row, mrow in zip(s, mask)]


def attention(q, k, v, mask=None, scale=None):
    """(out, weights) for q (T_q, d_k), k (T_k, d_k), v (T_k, d_v); out_i = sum_j A_ij v_j."""
    weights = attention_weights(q, k, mask, scale)
    v = [_floats(r) for r in v]
    d_v = len(v[0])
    out = []
    for a_row in weights:
        o = [0.0] * d_v
        for a, v_row in zip(a_row, v):
            for c in range(d_v):
                o[c] += a * v_row[c]
        out.append(o)
    return out, weights


def grouped_query_attention(q, k, v, mask=None, scale=None):
    """q (H_q, T_q, d), k and v (H_kv, T_k, d): query head h reads kv head h // (H_q // H_kv).

    mask, if given, is (H_q, T_q, T_k). Returns (out (H_q, T_q, d_v), weights (H_q, T_q, T_k)).
    """
    n_q, n_kv = len(q), len(k)
    group = n_q // n_kv
    outs, weights = [], []
    for h in range(n_q):
        kv = h // group
        o, w = attention(q[h], k[kv], v[kv], None if mask is None else mask[h], scale)
        outs.append(o)
        weights.append(w)
    return outs, weights


def kv_head_map(n_q_heads, n_kv_heads):
    group = n_q_heads // n_kv_heads
    return [h // group for h in range(n_q_heads)]


# --------------------------------------------------------------------------- masks


def causal(t_q, t_k=None, align="top_left"):
    """Query i sees key j iff j <= i + offset; offset 0 (top_left) or t_k - t_q (bottom_right)."""
    t_k = t_q if t_k is None else t_k
    offset = t_k - t_q if align == "bottom_right" else 0
    return [[j <= i + offset for j in range(t_k)] for i in range(t_q)]


def sliding_window(t, window):
    """Query i sees key j iff j <= i and i - j < window (the last `window` keys, itself included)."""
    return [[j <= i and i - j < window for j in range(t)] for i in range(t)]


def sink_window(t, n_sink, window):
    """Query i sees key j iff j <= i and (j is one of the first n_sink keys or i - j < window)."""
    return [[j <= i and (j < n_sink or i - j < window) for j in range(t)] for i in range(t)]


def block_diagonal(segment_ids):
    """Query i sees key j iff both lie in the same packed segment (1-D ids)."""
    ids = [int(s) for s in segment_ids]
    return [[a == b for b in ids] for a in ids]


def key_padding(lengths, t_k):
    """(B, 1, t_k): batch b sees key j iff j < lengths[b]."""
    return [[[j < int(n) for j in range(t_k)]] for n in lengths]


# --------------------------------------------------------------------------- tolerances
#
# The library computes in the input dtype, the references above in float64 on
# the very same (exactly representable) input values, so the difference is the
# library's rounding error. The bounds below are first-order error analyses
# with eps = machine epsilon of the dtype (2 * unit roundoff), i.e. with a
# built-in safety factor of 2 over the unit-roundoff bounds.


def eps(dtype):
    import numpy as np

    return float(np.finfo(dtype).eps)


def softmax_atol(dtype, n, spread):
    """Absolute error of softmax entries for a row of n scores with max - min <= spread.

    x_i - m rounds with absolute error <= u * spread, which exp turns into a
    relative error u * spread; exp itself adds a few ulps; the row sum adds
    (n - 1) u and the division u. Entries are <= 1, so the relative bound is
    also an absolute one: 4 * eps * (spread + n) covers all of it.
    """
    return 4 * eps(dtype) * (spread + n)


def simplex_atol(dtype, n):
    """|sum of a softmax row - 1| for n entries, whatever the scores.

    With e_i the computed exponentials, sum_i e_i / sum_j e_j is exactly 1, so
    the error of exp cancels; what remains is the rounding of the denominator
    ((n - 1) u), of each division (u) and of the final sum ((n - 1) u):
    (2n - 1) u < n * eps. We allow 2 * n * eps.
    """
    return 2 * n * eps(dtype)


def attention_atol(dtype, d, t_k, bound, v_bound=None):
    """(weights_atol, out_atol) for |q|, |k| <= bound, |v| <= v_bound, head dim d.

    A score is scale * (a d-term dot product): absolute error <= (d + 2) u * scale * d * bound^2.
    A weight moves by at most 2x the largest score error (relative), plus the softmax
    rounding of a row whose spread is <= 2 * scale * d * bound^2. An output entry is a
    t_k-term sum of weight * value: error <= t_k * weights_atol * v_bound + t_k u v_bound.
    """
    import math

    v_bound = bound if v_bound is None else v_bound
    scale = 1.0 / math.sqrt(d)
    score_err = (d + 2) * eps(dtype) * scale * d * bound**2
    weights_atol = 2 * score_err + softmax_atol(dtype, t_k, 2 * scale * d * bound**2)
    out_atol = t_k * (weights_atol + eps(dtype)) * v_bound
    # products weight * value that fall among the subnormals lose their relative
    # accuracy: each may be off by up to the smallest subnormal
    out_atol += t_k * smallest_subnormal(dtype)
    return weights_atol, out_atol


def smallest_subnormal(dtype):
    import numpy as np

    return float(np.finfo(dtype).smallest_subnormal)
