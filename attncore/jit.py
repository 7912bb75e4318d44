"""FlashAttention and the online softmax as Numba kernels (optional: attncore[jit]).

Same algorithm and results as attncore.flash (read that first), compiled.
Three choices make it fast on a CPU:

* Transposed tiles. A block of queries is held as qT (d, block_q), so scores,
  weights and the output accumulator are (keys, block_q) and (d_v, block_q):
  every inner loop runs along queries, contiguous in memory, and the running
  max and sum of the online softmax are elementwise updates, which LLVM
  vectorises without reordering any floating-point sum.
* One 4 x 4 register-blocked product, `_accumulate`, for both S = K qT and
  acc += V^T P (70-80% of one core's float32 peak with 512 queries per block).
  No BLAS inside the kernel, so no BLAS threads fight prange.
* `exp` is a polynomial that vectorises (the pip build of Numba has no vector
  exp): exp(x) = 2^n exp(r) with x = n ln2 + r, |r| <= ln2/2, the Taylor
  series of exp(r) to degree 7 (float32) or 13 (float64), and 2^n built from
  exponent bits. Error, measured against exp in a wider type: at most 1 ulp
  where the result is normal, at most one denormal step below that; results
  under the denormal range and exp(-inf) are exactly 0, never NaN.

Of the fast-math flags only `contract` (fused multiply-add) is on, and `reassoc`
for the sums in `softmax`: -inf marks masked scores, so no-inf or no-NaN
assumptions would be wrong here.

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
        scale1 = _float_from_bits(int_type((n1 + bias) * shift))
        return p * scale1 * _float_from_bits(int_type((n2 + bias) * shift))

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
    """The kernels' vectorised exp of a float32 or float64 array (finite or +-inf), same shape and dtype."""
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"x must be a float32 or float64 array, got dtype {x.dtype}")
    flat = np.require(x, requirements="CW").reshape(-1)
    out = np.empty_like(flat)
    _exp_into(flat, out)
    return out.reshape(x.shape)


# ------------------------------------------------------------ attention

VECTOR = 8  # float32 lanes of an AVX2 register


@_jit
def _round_up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


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
def _first_seen(key, q0, offset, causal, width, align=1):
    """The first query i of the block from q0 that sees `key`, rounded down to `align`."""
    return max(0, min(width, key - offset - q0)) // align * align if causal else 0


@_jit
def _flash_block(q, k, v, t_k, q0, scale, causal, offset, block_k, out, lse):
    """One block of queries q (rows, d) starting at row q0 -> out (rows, d_v), lse (rows,).

    k (T, d4) and v (T, d_v4) hold t_k keys, zero-padded so that d4 and d_v4 are
    multiples of 4 and T covers every 4-key group of every tile.
    """
    rows, dtype = q.shape[0], q.dtype
    # an odd number of vectors per row: rows 4 KiB apart would stall loads behind
    # stores to another row with the same low address bits (4K aliasing)
    width, d4, dv4 = _round_up(rows, 2 * VECTOR) + VECTOR, k.shape[1], v.shape[1]
    q_t = np.zeros((d4, width), dtype)  # the scaled queries, transposed
    for i in range(rows):
        for c in range(q.shape[1]):
            q_t[c, i] = q[i, c] * scale
    s_t = np.empty((_round_up(min(block_k, t_k), 4), width), dtype)  # a key tile's scores, then weights
    acc_t = np.zeros((dv4, width), dtype)
    m = np.full(width, -np.inf, dtype)  # running max per query
    l = np.zeros(width, dtype)  # running sum of exp(s - m)
    shift = np.empty(width, dtype)  # the new max, 0 where it is -inf
    alpha = np.empty(width, dtype)  # exp(old max - new max)
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    for k0 in range(0, k_end, block_k):
        n = min(block_k, t_k - k0)
        n4 = _round_up(n, 4)
        # on the diagonal, go 4 keys at a time and skip the queries that see none of them
        step = 4 if causal and k0 + n - 1 > q0 + offset else n4
        s_t[:n4] = 0
        for j in range(0, n4, step):
            first = _first_seen(k0 + j, q0, offset, causal, width, VECTOR)
            _accumulate(k[k0 + j:k0 + j + step], q_t, s_t[j:j + step], first)
        for j in range(n4):  # hide padding keys, and key k0 + j from queries q0 + i < k0 + j - offset
            s_t[j, :width if j >= n else _first_seen(k0 + j, q0, offset, causal, width)] = -np.inf
        shift[:] = m
        for j in range(n4):  # np.maximum, not a select: that becomes a masked store, slow on AMD
            np.maximum(shift, s_t[j], shift)
        for i in range(width):
            new_max = shift[i]
            shift[i] = 0 if new_max == -np.inf else new_max
            alpha[i] = _exp(m[i] - shift[i])
            m[i] = new_max
            l[i] *= alpha[i]
        for c in range(dv4):
            for i in range(width):
                acc_t[c, i] *= alpha[i]
        for j in range(n4):
            for i in range(width):
                p = _exp(s_t[j, i] - shift[i])
                s_t[j, i] = p
                l[i] += p
        for j in range(0, n4, step):
            first = _first_seen(k0 + j, q0, offset, causal, width, VECTOR)
            _accumulate(v[k0 + j:k0 + j + step].T, s_t[j:j + step], acc_t, first)
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


def _flatten(x, batch, dtype, rows=None):
    """x (*lead, T, d) -> (its own flattened leading dims, T, d) and the index of each batch entry.

    Broadcast leading dims are not copied: batch entry b reads x[index[b]]. With rows,
    T is zero-padded to rows and d to a multiple of 4 (a copy only when they change).
    """
    lead = x.shape[:-2]
    index = np.broadcast_to(np.arange(math.prod(lead)).reshape(lead), batch).flatten()
    x = x.reshape(math.prod(lead), *x.shape[-2:])
    shape = (x.shape[0], rows, _round_up(x.shape[2], 4))
    if rows is None or shape == x.shape:
        return np.require(x, dtype, "CW"), index
    padded = np.zeros(shape, dtype)
    padded[:, : x.shape[1], : x.shape[2]] = x
    return padded, index


def _default_block_q(n_batch, t_q, causal):
    """512 queries (fastest at d = 64 on a 2-core AVX2 machine), halved down to 64 while
    a thread would get no block, or with causal fewer than two (a short and a long one)."""
    block, per_thread = 512, 2 if causal else 1
    while block > 64 and n_batch * -(-t_q // block) < per_thread * numba.get_num_threads():
        block //= 2
    return block


def flash_attention(q, k, v, *, causal=False, block_q=None, block_k=64, scale=None, return_lse=False):
    """attncore.flash_attention compiled: same arguments, checks and results.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    with return_lse also the log-sum-exp of each scaled score row (..., T_q).
    causal: False, True (square), "top_left" or "bottom_right"; key tiles
    entirely above the diagonal are skipped. Never allocates (T_q, T_k).
    block_q None picks one (see _default_block_q); tiles hold block_q x block_k scores.
    """
    q, k, v = check_qkv(q, k, v)
    batch = leading_shape(q=q, k=k, v=v)
    t_q, t_k = q.shape[-2], k.shape[-2]
    offset = causal_offset(causal, t_q, t_k)
    if block_q is None:
        block_q = _default_block_q(math.prod(batch), t_q, offset is not None)
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    scale = resolve_scale(scale, q.shape[-1])
    dtype = np.result_type(q, k, v)
    work = _compute_dtype(dtype)
    d_v = v.shape[-1]
    q, q_index = _flatten(q, batch, work)
    # key tiles are read 4 rows at a time, up to 3 rows past t_k when block_k is not a multiple of 4
    rows = t_k + 3 if block_k % 4 else _round_up(t_k, 4)
    k, k_index = _flatten(k, batch, work, rows)
    v, v_index = _flatten(v, batch, work, rows)
    out = np.empty((q_index.size, t_q, d_v), work)
    lse = np.empty((q_index.size, t_q), work)
    _flash(
        q, k, v, q_index, k_index, v_index, t_k, work(scale), offset is not None, offset or 0,
        block_q, block_k, out, lse,
    )
    out = out.reshape(*batch, t_q, d_v).astype(dtype, copy=False)
    lse = lse.reshape(*batch, t_q).astype(dtype, copy=False)
    return (out, lse) if return_lse else out


# -------------------------------------------------------------- softmax

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
