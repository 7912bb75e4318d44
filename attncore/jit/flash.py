"""The flash driver: flash_attention, and the parallel kernel _flash that runs it.

_flash hands out tasks (batch entry, query block) from a shared atomic counter to one
prange iteration per thread; _flash_block runs one task: it walks its queries in panels of
nr (held transposed, qT (d, nr)) and, key tile by key tile, computes S = K qT, masks,
takes the online-softmax step and accumulates acc = alpha acc + V^T P with the
micro-kernels of microkernels.py. The Python side (_prepare in layout.py) checks the
arguments and lays them out for it.
"""
import math
import typing
from typing import Literal

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numpy.typing import ArrayLike

from .._checks import Causal, FloatArray, check_qkv, headroom
from .atomics import _take_next
from .bf16_route import Precision
from .compiling import FASTMATH, _jit, _parallel_jit
from .decode import decode_attention
from .flash_amx import _flash_block_amx, _key_value_tiles
from .flash_bf16 import _flash_block_bf16
from .isa import PathName, _tile_cols, _tile_rows
from .layout import (
    _check_scores,
    _far_from_overflow,
    _finish_rows,
    _mask_panel,
    _panel_keys,
    _prepare,
    _refuse_mask_and_window,
    _round_up,
)
from .microkernels import PRODUCT_MAX, PRODUCT_RESCALE, PRODUCT_ZERO, _max_in_product, _softmax_tile, _tile_product
from .schedule import BLOCK_K
from .transpose import _transpose


@intrinsic
def _cycles(typingctx):
    """The CPU's cycle counter (llvm.readcyclecounter: rdtsc on x86), for the phase profile."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        counter = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, []), "llvm.readcyclecounter")
        return builder.call(counter, [])

    return types.int64(), codegen


PHASES = ("setup", "S = K qT", "causal mask", "max, exp2, sum", "acc = alpha acc + V^T P", "finish")


@_jit
def _tick(profiling, cycles, phase, start):
    """Add the cycles since `start` to phase `phase` when profiling; return the new start."""
    if not profiling:
        return start
    now = _cycles()
    cycles[phase] += now - start
    return now


@_jit
def _flash_block(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles):
    """Queries q0:q1 of queries (T_q, d) -> the same rows of outputs (T_q, d_v) and lses (T_q,).

    The block is cut into panels of nr queries; each key tile visits every panel that
    sees one of its keys, so the tile is read from memory once per block. k (T, d) holds
    settings.t_k keys, zero-padded so that every tile's rows round up to mr (layout.py; _flash
    checks it: _check_padding);
    v (T, d_vp) has d_vp a multiple of mr. Scores are in log2 units (settings.scale holds
    log2 e). settings: a _Settings record; shape: the TileShape of the micro-kernel.
    """
    t_k, scale, block_k = settings.t_k, settings.scale, settings.block_k
    causal, offset = settings.causal, settings.offset
    q, out, lse = queries[q0:q1], outputs[q0:q1], lses[q0:q1]
    rows, d, dtype = q.shape[0], q.shape[1], q.dtype
    mr, nr = _tile_rows(shape), _tile_cols(shape, q)
    d_vp = v.shape[1]
    panels = (rows + nr - 1) // nr
    v_t = v.T
    q_t = np.zeros((panels, d, nr), dtype)  # scaled queries, transposed, panel by panel
    acc_t = np.zeros((panels, d_vp, nr), dtype)  # running outputs, transposed
    m = np.full((panels, nr), -np.inf, dtype)  # running max per query (log2 units)
    l = np.zeros((panels, nr), dtype)  # running sum of 2^(s - m)
    s_t = np.empty((_round_up(min(block_k, t_k), mr), nr), dtype)  # a tile's scores, then weights
    shift = np.empty(nr, dtype)  # the max so far in a tile, then the new max with 0 where it is -inf
    alpha = np.empty(nr, dtype)  # 2^(old max - new max)
    start = _cycles() if profiling else 0
    for p in range(panels):
        q_p = q_t[p]
        _transpose(q[p * nr:], q_p, min(nr, rows - p * nr), d, shape)
        for c in range(d):
            for j in range(nr):
                q_p[c, j] = q_p[c, j] * scale
    # the last query of a block sees keys < k_end; with causal, later tiles are skipped
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    start = _tick(profiling, cycles, 0, start)
    for k0 in range(0, k_end, block_k):
        for p in range(panels):
            j0 = p * nr
            n, n_pad, masked = _panel_keys(min(block_k, t_k - k0), k0, q0, j0, nr, rows, mr, causal, offset, 1)
            if n <= 0:
                continue
            q_p, acc_p = q_t[p], acc_t[p]
            in_product = not masked and _max_in_product(shape)  # the max while the scores are in registers
            shift[:] = m[p]
            mode = PRODUCT_MAX if in_product else PRODUCT_ZERO
            for r0 in range(0, n_pad, mr):
                _tile_product(k, k0 + r0, 0, q_p, s_t, r0, d, shift, mode, shape)
            start = _tick(profiling, cycles, 1, start)
            if masked:
                _mask_panel(s_t, n, n_pad, k0, q0, j0, causal, offset, 1)
            start = _tick(profiling, cycles, 2, start)
            _softmax_tile(s_t, n_pad, 0 if in_product else n_pad, m[p], l[p], shift, alpha, shape)
            start = _tick(profiling, cycles, 3, start)
            for r0 in range(0, d_vp, mr):
                _tile_product(v_t, r0, k0, s_t, acc_p, r0, n, alpha, PRODUCT_RESCALE, shape)
            start = _tick(profiling, cycles, 4, start)
    _finish_rows(acc_t, m, l, out, lse, shape)
    _tick(profiling, cycles, 5, start)


def _shared_tiles(k, v, settings, shape):
    """What the tasks of a call share for the micro-kernel `shape`: amx's _key_value_tiles (each key
    tile packed once per call, not once per block), else nothing (empty arrays)."""


@overload(_shared_tiles, jit_options={"fastmath": FASTMATH})
def _overload_shared_tiles(k, v, settings, shape):
    if shape.bf16 == "amx":
        return lambda k, v, settings, shape: _key_value_tiles(k, v, settings)
    return lambda k, v, settings, shape: (np.empty((0, 0, 0, 0), np.uint32), np.empty((0, 0, 0, 0), np.uint32),
                                          np.empty(0, np.int64), np.empty(0, np.int64))


def _block(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles, tiles, k_entry, v_entry):
    """_flash_block, or for bfloat16 products (no profile) _flash_block_bf16 (native: flash_bf16.py)
    or _flash_block_amx (amx: flash_amx.py, with the call's _shared_tiles)."""


@overload(_block, jit_options={"fastmath": FASTMATH})
def _overload_block(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles, tiles, k_entry,
                    v_entry):
    def amx(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles, tiles, k_entry, v_entry):
        _flash_block_amx(queries, k, v, q0, q1, outputs, lses, settings, shape, tiles, k_entry, v_entry)

    def native(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles, tiles, k_entry, v_entry):
        _flash_block_bf16(queries, k, v, q0, q1, outputs, lses, settings, shape)

    def float32(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles, tiles, k_entry, v_entry):
        _flash_block(queries, k, v, q0, q1, outputs, lses, settings, shape, profiling, cycles)

    return {"amx": amx, "native": native}.get(shape.bf16, float32)


def _bits(x):
    """x's entries as integers of their width (a view), and the mask that clears the sign bit."""


@overload(_bits)
def _overload_bits(x):
    width = x.dtype.bitwidth
    integer = {32: np.int32, 64: np.int64}[width]
    mask = integer(2 ** (width - 1) - 1)
    return lambda x: (x.view(integer), mask)


@_jit
def _largest_bits(x):
    """The largest |entry| of a 1-D float array, as its bits (an integer of the same width).

    With the sign bit cleared, integer order is float order, and inf and NaN lie above
    every finite float: one integer max, which vectorises, finds the largest magnitude and
    whether an entry is not finite, and no NaN can hide from it as it can from a float max."""
    bits, mask = _bits(x)
    width = bits.dtype.type  # (Numba widens narrower integers to 64 bits; this keeps lanes of the float's width)
    top = width(0)
    for i in range(bits.size):
        top = max(top, width(bits[i] & mask))
    return top


@_jit
def _share_largest_bits(x, part, parts):
    """_largest_bits of part `part` of `parts` equal slices of the entries of x (C-contiguous)."""
    flat = x.reshape(x.size)
    size = (flat.size + parts - 1) // parts
    return _largest_bits(flat[part * size:(part + 1) * size])


@_jit
def _check_padding(q, k, v, settings, shape):
    """Raise unless k and v carry the padding that _flash_block's tiles read (layout.py pads them).

    A key tile from k0 reads rows k0 .. k0 + round_up(n, mr) - 1 of k, where n <= block_k
    keys are left (the last tile reaches furthest), the q . k products read d_k columns of k,
    and V^T P reads v in column groups of mr: the micro-kernels check no bound themselves.
    """
    mr, t_k, block_k = _tile_rows(shape), settings.t_k, settings.block_k
    last = max(t_k - 1, 0) // block_k * block_k  # where the last key tile starts
    if (k.shape[1] < last + _round_up(t_k - last, mr) or k.shape[2] < q.shape[2] or v.shape[1] < t_k
            or v.shape[2] % mr != 0):
        raise ValueError("attncore.jit: k and v lack the padding of the key tiles (layout.py)")


@_parallel_jit
def _flash(q, k, v, indices, starts, out, lse, extremes, settings, shape, narrow, profiling, cycles):
    """Tasks (batch entry, query block) from a shared counter: the _KernelArgs of layout.py.

    q (entries, T_q, d), k (entries, T, d), v (entries, T, d_vp) -> out (batch entries, T_q, d_v)
    and lse (batch entries, T_q); with indices = (q_index, k_index, v_index), batch entry b
    reads q[q_index[b]], k[k_index[b]], v[v_index[b]]. cycles (tasks, PHASES) gathers the
    profile when profiling.
    Block i holds queries starts[i]:starts[i + 1]. Each thread takes the next task when it
    finishes one, so a thread on a slower or busier core simply does fewer. With causal the
    blocks go from the last (most keys) to the first. Queries past a block's last full panel
    that fit in one vector run on the narrow micro-kernel (shape.narrow) instead of a
    panel that is mostly padding.
    Each thread first finds the largest |entry| of its share of q, k and v, as bits
    (_largest_bits), in its row of extremes (threads, 3); _run reads them before the results.
    Raises ValueError, once per call, if k and v are not padded as the tiles read them.
    """
    _check_padding(q, k, v, settings, shape)
    q_index, k_index, v_index = indices
    causal, threads = settings.causal, settings.threads
    n_batch, n_blocks = q_index.shape[0], starts.size - 1
    n_tasks = n_batch * n_blocks
    nr, lanes = _tile_cols(shape, q), _tile_cols(narrow, q)
    counter = np.zeros(1, np.int64)
    tiles = _shared_tiles(k, v, settings, shape)
    for thread in prange(threads):  # one iteration per thread
        for i, x in enumerate((q, k, v)):
            extremes[thread, i] = _share_largest_bits(x, thread, threads)
        task = _take_next(counter)
        while task < n_tasks:
            rank, b = task // n_batch, task % n_batch
            block = n_blocks - 1 - rank if causal else rank
            q0, q1 = starts[block], starts[block + 1]
            rest = (q1 - q0) % nr
            split = q1 - rest if rest <= lanes < nr else q1
            q_b, k_b, v_b, out_b, lse_b = q[q_index[b]], k[k_index[b]], v[v_index[b]], out[b], lse[b]
            if split > q0:
                _block(q_b, k_b, v_b, q0, split, out_b, lse_b, settings, shape, profiling, cycles[task], tiles,
                       k_index[b], v_index[b])
            if q1 > split:
                _block(q_b, k_b, v_b, split, q1, out_b, lse_b, settings, narrow, profiling, cycles[task], tiles,
                       k_index[b], v_index[b])
            task = _take_next(counter)


def _run(q, k, v, settings, profiling=False):
    """_prepare(q, k, v, *settings) and the kernel -> (arguments, layout, unit, cycles): the
    results are in arguments, to be multiplied by unit, and cycles are the phase counts.

    The kernel's one pass over q, k and v finds the largest |entry| of each. Only when one
    is NaN or inf, or so large that a score or a running sum might overflow, do the checks
    run: check_qkv and _check_scores name the argument or the score (they raise), or v is
    divided by a power of two (value_headroom) and the kernel runs again."""
    arguments, layout = _prepare(q, k, v, *settings)
    cycles = _kernel(arguments, profiling)
    q_max, k_max, v_max = (float(x) for x in arguments.extremes.max(axis=0).view(layout.work))
    if not math.isfinite(q_max + k_max + v_max):
        check_qkv(q, k, v)
    if not _far_from_overflow(q_max, k_max, arguments.q.shape[-1], layout):
        _check_scores(np.asarray(q), np.asarray(k), np.asarray(v), layout)
    unit = headroom(v_max, layout.t_k, layout.work)  # acc sums up to T_k rows of v: keep it finite
    if unit != 1:
        arguments, layout = _prepare(q, k, v, *settings, unit=unit)
        cycles = _kernel(arguments, profiling)
    return arguments, layout, unit, cycles


def _kernel(arguments, profiling):
    """_flash on arguments from _prepare; its cycle counts."""
    cycles = _cycle_counts(arguments)
    _flash(*arguments, profiling, cycles)
    return cycles


@typing.overload
def flash_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: None = None, causal: Causal = False,
                    window: None = None, scale: float | None = None, enable_gqa: bool = False,
                    return_lse: Literal[False] = False, block_q: int | None = None, block_k: int | None = None,
                    path: PathName | None = None, precision: Precision = "f32") -> FloatArray: ...


@typing.overload
def flash_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: None = None, causal: Causal = False,
                    window: None = None, scale: float | None = None, enable_gqa: bool = False,
                    return_lse: Literal[True], block_q: int | None = None, block_k: int | None = None,
                    path: PathName | None = None, precision: Precision = "f32") -> tuple[FloatArray, FloatArray]: ...


def flash_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: ArrayLike | None = None, causal: Causal = False,
                    window: int | None = None, scale: float | None = None, enable_gqa: bool = False,
                    return_lse: bool = False, block_q: int | None = None, block_k: int | None = None,
                    path: PathName | None = None,
                    precision: Precision = "f32") -> FloatArray | tuple[FloatArray, FloatArray]:
    """attncore.flash_attention compiled: the same keyword tail, checks and results.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    with return_lse also the log-sum-exp of each scaled score row (..., T_q).
    causal: False, True (square), "top_left" or "bottom_right"; key tiles
    entirely above the diagonal are skipped. Never allocates (T_q, T_k). The kernel masks
    with causal alone: a mask or a window is refused, naming attncore.flash_attention.
    enable_gqa: grouped-query heads, q (..., H_q, T_q, d_k) and k, v (..., H_kv, T_k, d) with
    H_kv dividing H_q, as torch's enable_gqa=True, never guessed from the shapes; with
    H_kv < H_q they run on jit.decode_attention, in float32 (block_q plays no part).
    block_q: queries per block, or None for the guided blocks of default_blocks; tiles
    hold up to block_k keys (None: schedule.default_block_k, 256 on AMX tiles, else 128).
    path: "avx512", "avx2", "portable" or "loops" forces a micro-kernel (see the
    attncore.jit's docstring); None takes ATTNCORE_JIT_PATH, else the host CPU's.
    precision: "f32", or "bf16": q, k, v and the weights rounded to bfloat16 for the two
    products, float32 sums and softmax (AMX tiles, vdpbf16ps or emulated with the same
    products, as the CPU's features say: bf16_route.py; "bf16_native" and "bf16_emulated"
    force the last two): see bf16.py. Results in float32.

    Raises
    ------
    ValueError
        As attncore.flash_attention; also if mask or window is given, precision is not one
        of PRECISIONS, path not one of PATHS, or grouped-query heads come with a bf16 precision.
    """
    _refuse_mask_and_window("flash_attention", mask, window)
    q_heads, k_heads = np.shape(q)[-3:-2], np.shape(k)[-3:-2]
    if enable_gqa and q_heads and k_heads and q_heads != k_heads:
        if precision != "f32":
            raise ValueError(f"precision={precision!r} needs as many kv heads as query heads; grouped-query heads "
                             f"(q {np.shape(q)}, k {np.shape(k)}) run on jit.decode_attention, in float32")
        return decode_attention(q, k, v, causal=causal, scale=scale, enable_gqa=True, return_lse=return_lse,
                                block_k=BLOCK_K if block_k is None else block_k, path=path)
    arguments, layout, unit, _ = _run(q, k, v, (causal, block_q, block_k, scale, path, precision, enable_gqa))
    out, lse = arguments.out if unit == 1 else arguments.out * layout.work(unit), arguments.lse
    out = out.reshape(*layout.batch, layout.t_q, layout.d_v).astype(layout.dtype, copy=False)
    lse = lse.reshape(*layout.batch, layout.t_q).astype(layout.dtype, copy=False)
    return (out, lse) if return_lse else out


def _cycle_counts(arguments):
    """Zeroed cycle counters, one row of PHASES per task of _flash."""
    return np.zeros((arguments.out.shape[0] * (arguments.starts.size - 1), len(PHASES)), np.int64)
