"""FlashAttention and the online softmax as Numba kernels (optional: attncore[jit]).

Same algorithm and results as attncore.flash (read that first), compiled.
Three choices make it fast on a CPU:

* Transposed tiles. A block of queries is held as qT (d, block_q), so scores,
  weights and the output accumulator are (keys, block_q) and (d_v, block_q):
  every inner loop runs along queries, contiguous in memory, and the running
  max and sum of the online softmax are elementwise updates, which LLVM
  vectorises without reordering any floating-point sum.
* One 4 x 4 register-blocked product, `_accumulate`, for both S = K qT and
  acc += V^T P. No BLAS inside the kernel, so no BLAS threads fight prange.
* `exp` is a polynomial that vectorises (the pip build of Numba has no vector
  exp): exp(x) = 2^n exp(r) with x = n ln2 + r, |r| <= ln2/2, the Taylor
  series of exp(r) to degree 7 (float32) or 13 (float64), and 2^n built from
  exponent bits. Error: at most 1 ulp where the result is normal, at most one
  denormal step below that; exp(-inf) and anything below the smallest
  denormal is exactly 0, never NaN (tests/test_jit.py checks this against np.exp).

Only the `contract` fast-math flag (fused multiply-add) is on: -inf marks
masked scores, so no-inf or no-NaN assumptions would be wrong here.

Kernels are compiled with cache=True (a second process loads the machine code
from __pycache__ or NUMBA_CACHE_DIR) and parallel=True, with prange over
(batch * heads) x query blocks; NUMBA_NUM_THREADS sets the thread count.
"""
import math

try:
    import numba
except ImportError as error:
    raise ImportError("attncore.jit needs Numba: pip install attncore[jit]") from error
import numpy as np
from numba import prange, types
from numba.extending import intrinsic, overload

from ._checks import as_float_array, check_qkv, leading_shape, positive_int, require_ndim, resolve_scale
from .flash import causal_offset

FASTMATH = {"contract"}
_jit = numba.njit(cache=True, fastmath=FASTMATH)
_parallel_jit = numba.njit(cache=True, fastmath=FASTMATH, parallel=True)


# ------------------------------------------------------------------ exp

@intrinsic
def _float_from_bits(typingctx, bits):
    """Reinterpret the bits of an int32 (int64) as a float32 (float64)."""
    to = {types.int32: types.float32, types.int64: types.float64}[bits]

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(to))

    return to(bits), codegen


def _exp_for(float_type, int_type, mantissa_bits, lo, hi, ln2_hi, ln2_lo, degree):
    """exp(x) for one float type, written so that a loop of calls vectorises."""
    f = float_type
    log2e, half, bias = f(1 / math.log(2)), f(0.5), f(np.finfo(f).maxexp - 1)
    shift, lo, hi, ln2_hi, ln2_lo = f(2.0**mantissa_bits), f(lo), f(hi), f(ln2_hi), f(ln2_lo)
    taylor = tuple(f(1 / math.factorial(k)) for k in range(degree, -1, -1))

    def exp(x):
        x = min(max(x, lo), hi)  # exp(lo) rounds to 0 and exp(hi) overflows to inf
        n = np.floor(x * log2e + half)
        r = (x - n * ln2_hi) - n * ln2_lo  # Cody-Waite: n * ln2_hi is exact
        p = taylor[0]
        for coefficient in taylor[1:]:
            p = p * r + coefficient
        n1 = np.floor(n * half)  # 2^n = 2^n1 2^n2, both factors normal, from exponent bits
        n2 = n - n1
        return p * _float_from_bits(int_type((n1 + bias) * shift)) * _float_from_bits(int_type((n2 + bias) * shift))

    return exp


_EXP = {
    types.float32: _exp_for(np.float32, np.int32, 23, -110.0, 89.0, 0.693359375, -2.12194440e-4, 7),
    types.float64: _exp_for(
        np.float64, np.int64, 52, -760.0, 710.0, 6.93147180369123816490e-01, 1.90821492927058770002e-10, 13
    ),
}


def _exp(x):
    """exp of a float32 or float64 scalar, for use inside kernels (implemented by _EXP)."""


@overload(_exp, jit_options={"fastmath": FASTMATH})
def _overload_exp(x):
    return _EXP.get(x)


@_jit
def _exp_into(x, out):
    for i in range(x.size):
        out[i] = _exp(x[i])


def exp(x):
    """The kernels' vectorised exp of a float32 or float64 array, same shape and dtype."""
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"x must be a float32 or float64 array, got dtype {x.dtype}")
    flat = np.require(x, requirements="CW").reshape(-1)
    out = np.empty_like(flat)
    _exp_into(flat, out)
    return out.reshape(x.shape)


# ------------------------------------------------------------ attention

@_jit
def _round4(n):
    return (n + 3) // 4 * 4


@_jit
def _accumulate(a, b, out, first):
    """out[:, first:] += a @ b[:, first:]; the sides of a are multiples of 4.

    Four rows of out stay in cache while four rows of b stream past; the
    sixteen entries of a are scalars, and each inner loop is four chained FMAs.
    """
    for r in range(0, out.shape[0], 4):
        o0, o1, o2, o3 = out[r, first:], out[r + 1, first:], out[r + 2, first:], out[r + 3, first:]
        for c in range(0, b.shape[0], 4):
            a00, a01, a02, a03 = a[r, c], a[r, c + 1], a[r, c + 2], a[r, c + 3]
            a10, a11, a12, a13 = a[r + 1, c], a[r + 1, c + 1], a[r + 1, c + 2], a[r + 1, c + 3]
            a20, a21, a22, a23 = a[r + 2, c], a[r + 2, c + 1], a[r + 2, c + 2], a[r + 2, c + 3]
            a30, a31, a32, a33 = a[r + 3, c], a[r + 3, c + 1], a[r + 3, c + 2], a[r + 3, c + 3]
            b0, b1, b2, b3 = b[c, first:], b[c + 1, first:], b[c + 2, first:], b[c + 3, first:]
            for i in range(o0.shape[0]):
                x0, x1, x2, x3 = b0[i], b1[i], b2[i], b3[i]
                o0[i] = o0[i] + a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                o1[i] = o1[i] + a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                o2[i] = o2[i] + a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                o3[i] = o3[i] + a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3


@_jit
def _first_seen(key, q0, offset, causal, rows):
    """Index of the first query of the block (of `rows`, from q0) that sees `key`."""
    return max(0, min(rows, key - offset - q0)) if causal else 0


@_jit
def _flash_block(q, k, v, t_k, q0, scale, causal, offset, block_k, out, lse):
    """One block of queries q (rows, d) starting at row q0 -> out (rows, d_v), lse (rows,).

    k (>= t_k + 3, d4) and v (>= t_k + 3, d_v4) are zero-padded to multiples of 4.
    """
    rows, dtype = q.shape[0], q.dtype
    rows4, d4, dv4 = _round4(rows), k.shape[1], v.shape[1]
    q_t = np.zeros((d4, rows4), dtype)  # the scaled queries, transposed
    for i in range(rows):
        for c in range(q.shape[1]):
            q_t[c, i] = q[i, c] * scale
    s_t = np.empty((_round4(min(block_k, t_k)), rows4), dtype)  # scores, then weights, of one key tile
    acc_t = np.zeros((dv4, rows4), dtype)
    m = np.full(rows4, -np.inf, dtype)  # running max per query
    l = np.zeros(rows4, dtype)  # running sum of exp(s - m)
    shift = np.empty(rows4, dtype)  # the new max, 0 where it is -inf
    alpha = np.empty(rows4, dtype)  # exp(old max - new max)
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    for k0 in range(0, k_end, block_k):
        n = min(block_k, t_k - k0)
        n4 = _round4(n)
        # on the diagonal, go 4 keys at a time and skip the queries that see none of them
        step = 4 if causal and k0 + n - 1 > q0 + offset else n4
        s_t[:n4] = 0
        for j in range(0, n4, step):
            _accumulate(k[k0 + j:k0 + j + step], q_t, s_t[j:j + step], _first_seen(k0 + j, q0, offset, causal, rows4))
        for j in range(n4):  # hide keys past t_k and, causal, key k0 + j from queries q0 + i < k0 + j - offset
            s_t[j, :rows4 if j >= n else _first_seen(k0 + j, q0, offset, causal, rows4)] = -np.inf
        shift[:] = m
        for j in range(n4):
            for i in range(rows4):
                shift[i] = s_t[j, i] if s_t[j, i] > shift[i] else shift[i]
        for i in range(rows4):
            new_max = shift[i]
            shift[i] = 0 if new_max == -np.inf else new_max
            alpha[i] = _exp(m[i] - shift[i])
            m[i] = new_max
            l[i] *= alpha[i]
        for c in range(dv4):
            for i in range(rows4):
                acc_t[c, i] *= alpha[i]
        for j in range(n4):
            for i in range(rows4):
                p = _exp(s_t[j, i] - shift[i])
                s_t[j, i] = p
                l[i] += p
        for j in range(0, n4, step):
            _accumulate(v[k0 + j:k0 + j + step].T, s_t[j:j + step], acc_t, _first_seen(k0 + j, q0, offset, causal, rows4))
    for i in range(rows):
        seen = l[i] > 0
        lse[i] = m[i] + np.log(l[i]) if seen else -np.inf
        for c in range(out.shape[1]):
            out[i, c] = acc_t[c, i] / l[i] if seen else 0


@_parallel_jit
def _flash(q, k, v, q_index, k_index, v_index, t_k, scale, causal, offset, block_q, block_k, out, lse):
    """prange over (batch, query block); batch b reads q[q_index[b]], k[k_index[b]], v[v_index[b]]."""
    t_q = q.shape[1]
    n_blocks = (t_q + block_q - 1) // block_q
    for task in prange(q_index.shape[0] * n_blocks):
        # blocks in the order 0, n-1, 1, n-2, ...: prange hands each thread a contiguous
        # run of tasks, and with causal each run then gets as many keys as the others
        b, i = task // n_blocks, task % n_blocks
        q0 = (i // 2 if i % 2 == 0 else n_blocks - 1 - i // 2) * block_q
        q1 = min(q0 + block_q, t_q)
        _flash_block(
            q[q_index[b], q0:q1], k[k_index[b]], v[v_index[b]], t_k, q0, scale, causal, offset,
            block_k, out[b, q0:q1], lse[b, q0:q1],
        )


def _compute_dtype(dtype):
    """Numba kernels run in float32 or float64; float16 is computed in float32."""
    return np.float64 if dtype == np.float64 else np.float32


def _flatten(x, batch, dtype, pad=False):
    """x (*lead, T, d) -> (its own flattened leading dims, T, d) and the index of each batch entry.

    Broadcast leading dims are not copied: batch entry b reads x[index[b]].
    With pad, T grows by 3 and d to a multiple of 4, with zeros.
    """
    lead = x.shape[:-2]
    index = np.broadcast_to(np.arange(math.prod(lead)).reshape(lead), batch).flatten()
    x = x.reshape(math.prod(lead), *x.shape[-2:])
    if not pad:
        return np.require(x, dtype, "CW"), index
    padded = np.zeros((x.shape[0], x.shape[1] + 3, _round4(x.shape[2])), dtype)
    padded[:, : x.shape[1], : x.shape[2]] = x
    return padded, index


def flash_attention(q, k, v, *, causal=False, block_q=256, block_k=64, scale=None, return_lse=False):
    """attncore.flash_attention compiled: same arguments, checks and results.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    with return_lse also the log-sum-exp of each scaled score row (..., T_q).
    causal: False, True (square), "top_left" or "bottom_right"; key tiles
    entirely above the diagonal are skipped. Never allocates (T_q, T_k).
    """
    q, k, v = check_qkv(q, k, v)
    batch = leading_shape(q=q, k=k, v=v)
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    scale = resolve_scale(scale, q.shape[-1])
    t_q, t_k = q.shape[-2], k.shape[-2]
    offset = causal_offset(causal, t_q, t_k)
    dtype = np.result_type(q, k, v)
    work = _compute_dtype(dtype)
    d_v = v.shape[-1]
    q, q_index = _flatten(q, batch, work)
    k, k_index = _flatten(k, batch, work, pad=True)
    v, v_index = _flatten(v, batch, work, pad=True)
    out = np.empty((q_index.size, t_q, d_v), work)
    lse = np.empty((q_index.size, t_q), work)
    _flash(
        q, k, v, q_index, k_index, v_index, t_k, work(scale), offset is not None, offset or 0,
        block_q, block_k, out, lse,
    )
    out = out.reshape(*batch, t_q, d_v).astype(dtype, copy=False)
    lse = lse.reshape(*batch, t_q).astype(dtype, copy=False)
    return (out, lse) if return_lse else out

@numba.njit(cache=True, fastmath=FASTMATH | {"reassoc"}, parallel=True)
def _softmax(x, block_k, out):
    """Rows of x (rows, n): one pass for the running max m and sum l, one to normalise.

    reassoc lets the tile sums vectorise; they add finite non-negative terms only.
    """
    f = x.dtype.type
    for r in prange(x.shape[0]):
        row, m, l = x[r], f(-np.inf), f(0)
        for k0 in range(0, x.shape[1], block_k):
            k1 = min(k0 + block_k, x.shape[1])
            new_max = m
            for j in range(k0, k1):
                new_max = row[j] if row[j] > new_max else new_max
            shift = f(0) if new_max == -np.inf else new_max
            total = f(0)
            for j in range(k0, k1):
                total += _exp(row[j] - shift)
            l = l * _exp(m - shift) + total
            m = new_max
        shift = f(0) if m == -np.inf else m
        for j in range(x.shape[1]):
            out[r, j] = _exp(row[j] - shift) / l if l > 0 else 0


def softmax(x, block_k=1024):
    """attncore.softmax over the last axis, tiled: x (..., n) -> same shape and dtype.

    Scores may be -inf (masked); a row with no finite score gives all zeros.
    """
    x = as_float_array("x", x, allow_neg_inf=True)
    require_ndim("x", x, 1, "(..., n)")
    block_k = positive_int("block_k", block_k)
    rows = np.require(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), _compute_dtype(x.dtype), "CW")
    out = np.empty_like(rows)
    _softmax(rows, block_k, out)
    return out.reshape(x.shape).astype(x.dtype, copy=False)
