"""From a call of flash_attention to the arguments of its kernel: the checks, the layout of
the arrays (flattened, padded, in the kernel's float type) and the scalars by name.

The padding invariant the micro-kernels rely on (they have no bounds checks): a key tile's
rows are computed mr at a time, so k is zero-padded to at least t_k + mr - 1 rows, or to
round_up(t_k, mr) when block_k is a multiple of mr (every tile then starts at a multiple
of mr); v is padded to a multiple of mr columns. _layout sets both.
"""
import math
import os
from typing import NamedTuple

import numba
import numpy as np

from .._checks import causal_allowed, check_qkv, positive_int, prepare_attention, scores
from .bf16 import round_to_bf16
from .bf16_route import products
from .compiling import _compute_dtype, _jit
from .exponential import LN2, LOG2E
from .isa import ENV_PATH, PATHS, TileShape, _resolve_path
from .schedule import _block_starts, default_block_k
from .transpose import _transpose


@_jit
def _round_up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


@_jit
def _panel_keys(n_tile, k0, first, r0, nr, rows, multiple, causal, offset, group):
    """The keys k0 ... of a tile of n_tile that the panel of rows r0 ... r0 + nr - 1 (of a block
    of rows; row r is query first + r // group: group = 1 in the flash driver, G packed heads in
    decoding) sees -> (n, n_pad, masked): n of them (with causal, up to the panel's last query;
    0 or less: none), n rounded up to `multiple` for the micro-kernel, and whether a score must
    be masked: a padding key, or key k0 + j hidden from a query before k0 + j - offset."""
    n = n_tile
    if causal:  # keys past the panel's last query are no key of this panel
        n = min(n, first + (min(r0 + nr, rows) - 1) // group + offset - k0 + 1)
    n_pad = _round_up(n, multiple)
    return n, n_pad, n < n_pad or (causal and k0 + n - 1 > first + r0 // group + offset)


@_jit
def _mask_panel(s_t, n, n_pad, k0, first, r0, causal, offset, group):
    """Where _panel_keys said masked: s_t[j, i] = -inf (s_t (keys, nr), a panel's scores of the
    keys k0 + j) for a padding key (j >= n: the whole row) and, with causal, for the lanes whose
    query first + (r0 + i) // group comes before key k0 + j - offset."""
    nr = s_t.shape[1]
    for j in range(n_pad):
        if j >= n:
            cut = nr
        elif causal:
            cut = max(0, min(nr, group * (k0 + j - offset - first) - r0))
        else:
            cut = 0
        s_t[j, :cut] = -np.inf


@_jit
def _finish_rows(acc_t, m, l, out, lse, shape):
    """out (rows, d_v) = acc / l and lse (rows,) = m ln 2 + log l for each query row, from its
    panel's online-softmax state (acc_t (panels, d_vp, nr), m and l (panels, nr), log2 units);
    0 and -inf for a row that saw no key. acc is transposed into out first (_transpose)."""
    nr, d_v = m.shape[1], out.shape[1]
    for p in range(m.shape[0]):
        first = p * nr
        width = min(nr, out.shape[0] - first)
        _transpose(acc_t[p], out[first:first + width], d_v, width, shape)
        for c0 in range(width):
            seen = l[p, c0] > 0
            lse[first + c0] = m[p, c0] * LN2 + np.log(l[p, c0]) if seen else -np.inf
            inverse = 1 / l[p, c0] if seen else 0  # one division per query, not per output
            row = out[first + c0]
            for c in range(d_v):
                row[c] = row[c] * inverse


def _flatten(x, dtype, rows=None, cols=None):
    """x (*lead, T, d) -> (its own flattened leading dims, T, d), C-contiguous in dtype; with
    rows (cols), T (d) zero-padded to that many. A copy only when a dtype, layout or shape changes."""
    x = x.reshape(math.prod(x.shape[:-2]), *x.shape[-2:])
    shape = (x.shape[0], rows or x.shape[1], cols or x.shape[2])
    if shape == x.shape:  # (np.require would do the same, in four times the Python)
        if x.dtype == dtype and x.flags.c_contiguous and x.flags.writeable:
            return x
        return np.array(x, dtype, order="C")
    padded = np.zeros(shape, dtype)
    padded[:, : x.shape[1], : x.shape[2]] = x
    return padded


def _batch_index(lead, batch):
    """Which entry of x's flattened leading dims lead each batch entry reads: broadcast
    leading dims are not copied."""
    count = math.prod(lead)
    if lead == tuple(batch):
        return np.arange(count)
    return np.broadcast_to(np.arange(count).reshape(lead), batch).flatten()


class _Settings(NamedTuple):
    """The scalars of a call as the kernels read them, by name (a Numba record: a
    namedtuple of scalars, one argument instead of six)."""
    t_k: int  # keys (k holds more rows: padding)
    scale: float  # in log2 units: scale * log2(e), in the kernel's float type
    causal: bool
    offset: int  # causal: query i sees key j when j <= i + offset; 0 when not causal
    block_k: int  # keys per tile
    threads: int  # prange iterations of _flash, one per thread


class _Layout(NamedTuple):
    """What a call of flash_attention does that depends only on shapes, dtypes and settings."""
    batch: tuple  # the broadcast leading dims
    t_q: int
    t_k: int
    d_v: int
    dtype: np.dtype  # of the results
    work: type  # the kernel's float type
    scale: float  # the resolved scale (natural units)
    offset: object  # causal: query i sees key j when j <= i + offset; None if not causal
    k_rows: int  # k zero-padded to this many keys
    v_cols: int  # v zero-padded to this many columns
    indices: tuple  # q_index, k_index, v_index (see _batch_index)
    starts: np.ndarray  # the first query of each block, then t_q
    shape: TileShape
    settings: _Settings  # the kernel's scalars (block_k and the thread count among them)


class _KernelArgs(NamedTuple):
    """The arguments of _flash by name, in its order (_flash(*arguments, profiling, cycles))."""
    q: np.ndarray  # (its leading dims flattened, T_q, d_k) in the kernel's float type
    k: np.ndarray  # (..., k_rows, d_k), zero-padded
    v: np.ndarray  # (..., T_k, v_cols), zero-padded
    indices: tuple  # (q_index, k_index, v_index): batch entry b reads q[q_index[b]], ...
    starts: np.ndarray  # the first query of each block, then T_q
    out: np.ndarray  # (batch entries, T_q, d_v), written by the kernel
    lse: np.ndarray  # (batch entries, T_q)
    extremes: np.ndarray  # (threads, 3): each thread's largest |entry| of its share of q, k, v, as bits
    settings: _Settings
    shape: TileShape
    narrow: TileShape  # shape.narrow, for the queries past a block's last full panel


def _layout(q, k, v, causal, block_q, block_k, scale, path, precision="f32", grouped=False):
    """Every check of flash_attention's arguments but finiteness, and the _Layout of the call
    (grouped: enable_gqa with as many kv heads as query heads, checked as such)."""
    # finiteness is left to the kernel: each thread of _flash finds the largest |entry| of its share of q, k, v
    p = prepare_attention(q, k, v, causal=causal, scale=scale, check_finite=False, grouped=grouped)
    shape = PATHS[_resolve_path(path)]
    shape = shape.with_bf16(products(precision, shape))  # bfloat16 products: bf16.py, bf16_route.py
    work = np.float32 if shape.bf16 else _compute_dtype(p.dtype)
    if block_q is None:
        starts = _block_starts(math.prod(p.batch), p.t_q, p.t_k, p.offset, numba.get_num_threads(), shape.name,
                               np.dtype(work))
    else:
        starts = (*range(0, p.t_q, positive_int("block_q", block_q)), p.t_q)
    block_k = default_block_k(shape.bf16) if block_k is None else positive_int("block_k", block_k)
    # a key tile's rows are computed mr at a time: up to mr - 1 rows past t_k
    k_rows = _round_up(p.t_k, shape.mr) if block_k % shape.mr == 0 else p.t_k + shape.mr - 1
    settings = _Settings(t_k=p.t_k, scale=work(p.scale * LOG2E), causal=p.offset is not None, offset=p.offset or 0,
                         block_k=block_k, threads=numba.get_num_threads())
    return _Layout(batch=p.batch, t_q=p.t_q, t_k=p.t_k, d_v=p.d_v, dtype=p.dtype, work=work, scale=p.scale,
                   offset=p.offset, k_rows=k_rows, v_cols=_round_up(p.d_v, shape.mr),
                   indices=tuple(_batch_index(x.shape[:-2], p.batch) for x in (p.q, p.k, p.v)),
                   starts=np.array(starts, np.int64), shape=shape, settings=settings)


def _layout_key(q, k, v, *settings):
    """The key of a call in _LAYOUTS: shapes, dtypes, settings (each with its type: True
    and 1 are different causal arguments), the path and the thread count; None when an
    argument is not an ndarray or a setting is not hashable."""
    if not type(q) is type(k) is type(v) is np.ndarray:
        return None
    key = (q.shape, q.dtype, k.shape, k.dtype, v.shape, v.dtype, settings, tuple(map(type, settings)),
           os.environ.get(ENV_PATH), numba.get_num_threads())
    try:
        hash(key)
    except TypeError:
        return None
    return key


_LAYOUTS = {}
MAX_LAYOUTS = 256


def _remembered(make, q, k, v, *settings):
    """make(q, k, v, *settings), a layout that depends only on shapes, dtypes and settings:
    worked out once per key (_layout_key, with make) and remembered in _LAYOUTS."""
    key = _layout_key(q, k, v, make, *settings)
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = make(q, k, v, *settings)
        if key is not None:
            if len(_LAYOUTS) >= MAX_LAYOUTS:
                _LAYOUTS.clear()
            _LAYOUTS[key] = layout
    return layout


def _prepare(q, k, v, causal, block_q, block_k, scale, path, precision="f32", grouped=False, unit=1):
    """The kernel's _KernelArgs for a call of flash_attention and its _Layout; v divided by
    unit, a power of two (value_headroom), when the output is to be multiplied by it.

    The _Layout of each combination of shapes, dtypes and settings is worked out once
    and remembered, so a repeated call only reshapes its arrays and allocates the results:
    Python run right after a kernel call is slow (its caches are cold), and at small N the
    checks would be a sizeable part of the call. What depends on the values (NaN, inf, scores
    that overflow) is found by the kernel's pass over q, k and v (flash._run).
    """
    layout = _remembered(_layout, q, k, v, causal, block_q, block_k, scale, path, precision, grouped)
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    v = _flatten(v, layout.work, cols=layout.v_cols)
    count = layout.indices[0].size
    q, k = _flatten(q, layout.work), _flatten(k, layout.work, rows=layout.k_rows)
    v = v if unit == 1 else v / layout.work(unit)
    if layout.shape.bf16 == "emulated":  # the float32 kernel on operands rounded to bfloat16 (bf16.py)
        q, k, v = round_to_bf16(q), round_to_bf16(k), round_to_bf16(v)
    arguments = _KernelArgs(
        q=q, k=k, v=v, indices=layout.indices, starts=layout.starts,
        out=np.empty((count, layout.t_q, layout.d_v), layout.work), lse=np.empty((count, layout.t_q), layout.work),
        extremes=np.zeros((layout.settings.threads, 3), f"i{np.dtype(layout.work).itemsize}"),
        settings=layout.settings, shape=layout.shape, narrow=layout.shape.narrow)
    return arguments, layout


def _refuse_mask_and_window(function, mask, window):
    """attncore.jit's kernels mask with causal= alone: a mask or a window is refused, naming
    what does take it."""
    if mask is not None:
        raise ValueError(f"attncore.jit.{function} takes no mask (its kernel masks only with causal=), got a mask "
                         f"of shape {np.shape(mask)}; attncore.flash_attention(q, k, v, mask=...) or "
                         f"attncore.attention(q, k, v, mask=...) take one")
    if window is not None:
        raise ValueError(f"attncore.jit.{function} takes no window (its kernel masks only with causal=), got "
                         f"window={window!r}; attncore.flash_attention(q, k, v, causal=..., window=...) takes one")


def _far_from_overflow(q_max, k_max, d_k, layout):
    """Whether no score can overflow the kernel's float type, given the largest |entry| of q
    and of k: the kernel forms (scale log2(e) q) . k, and every partial sum is at most
    d_k max|q| max|k| in size, so below a quarter of the largest float nothing overflows."""
    # Python floats: a product past the range is inf, with no warning
    limit, factor = float(np.finfo(layout.work).max) / 4, float(layout.scale) * LOG2E
    q_max, k_max = float(q_max), float(k_max)
    return factor * q_max * k_max * d_k < limit and factor * q_max < limit


def _check_scores(q, k, v, layout, chunk=256):
    """Raise, as attention and attncore.flash_attention do, if a score overflows the kernel's
    float type (it would come back as a silent zero row: exp2 of NaN is 0 in the kernel).

    The callers run it only where _far_from_overflow says no (each finds the largest |q| and
    |k| its own way). NaN or inf is named first; then the scores are formed here, in blocks
    of queries: as the NumPy implementations form them, then in the kernel's log2 units.
    """
    if q.size == 0 or k.size == 0:
        return
    factor = float(layout.scale) * LOG2E
    q, k, v = check_qkv(q, k, v)
    q = np.broadcast_to(q, (*layout.batch, *q.shape[-2:]))
    k = np.broadcast_to(k, (*layout.batch, *k.shape[-2:]))
    work = layout.work
    for index in np.ndindex(*layout.batch):
        q_b, k_b = q[index].astype(work), k[index].astype(work)
        for q0 in range(0, layout.t_q, chunk):
            q1 = min(q0 + chunk, layout.t_q)
            allowed = None if layout.offset is None else causal_allowed(
                np.arange(q0, q1), np.arange(layout.t_k), layout.offset)  # a hidden score plays no part
            with np.errstate(over="ignore"):
                q_log2 = q_b[q0:q1] * work(factor)
            scores(q_b[q0:q1], k_b, layout.scale, allowed, origin=(*index, q0, 0))
            scores(q_log2, k_b, 1.0, allowed, origin=(*index, q0, 0))
