"""The flash block with bfloat16 products on AMX tiles (tdpbf16ps): _flash_block_amx, the twin
of flash_bf16.py's _flash_block_bf16 for a TileShape with bf16 == "amx" (read that one first,
amx.py for the tiles, bf16.py for what is rounded).

The operands are the same packed words of two bf16, now in tiles of 16 rows x 16 words,
zero-padded to whole tiles (d to a multiple of 32, keys to 16 for S and 32 for V^T P,
d_v to 16). The panel of nr = 16 or 48 queries is 1 or 3 tiles wide:

  S^T (keys, nr) = K (keys, d) . qT       A: a tile's keys as rows (k_w), B: qT paired along d (q_w)
  acc (d_v, nr) += V^T (d_v, keys) . P^T  A: the values transposed (v_w), B: P paired along keys (p_w)

S leaves the tiles for memory (s_t); one vector pass takes its max (times the scale: the
same number as the max of the scaled scores, the scale being positive), a second makes the
weights 2^(scale s - m) (the scale after the sum, so the products stay exact; scale s - m in
one FMA), rounds them to bf16 and pairs them for the tiles with vcvtne2ps2bf16
(bf16.round_and_pair: _pack_pairs's words), and sums them into l (_weights:
microkernels._softmax_tile's step with the scale and the packing folded in). acc
is added to in the tiles; the vector code multiplies it by alpha first (_rescale), only in
a panel where some alpha is not 1 (a max moved), which gets rarer as the keys go by.
K and V are rounded and packed tile by tile once per call, not once per block: the first
thread to reach a key tile packs it into the call's _key_value_tiles, and a thread that
reaches it meanwhile waits for it (atomics.py): packing every tile again in each block
would cost a large share of the kernel. Every buffer a tile reads or writes
starts on a 64-byte boundary (amx.zeros, amx.empty). The thread loads its tile
configuration at the start of the block and releases the tiles at its end.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .amx import (
    _tile_configure,
    _tile_dot,
    _tile_load,
    _tile_release,
    _tile_store,
    _tile_zero,
    empty,
    tile_config,
    zeros,
)
from .atomics import _packing, _publish
from .bf16 import _pack_columns, _pack_panel, _pack_rows, round_and_pair
from .compiling import _jit
from .isa import _tile_cols, _TileShapeType
from .layout import _finish_rows, _mask_panel, _panel_keys, _round_up
from .transpose import _transpose
from .vector_ir import _VectorIR


def _weights_codegen(context, builder, signature, args):
    """The online-softmax step of a panel on its S^T (see _weights), in vector registers."""
    s_ty, _, scale_ty, m_ty, l_ty, alpha_ty, p_ty, shape = signature.args
    s, rows, scale, m, l, alpha, p_w, _ = args
    x = _VectorIR(context, builder, s_ty.dtype, shape)
    s, m, l, alpha, p_w = (context.make_array(t)(context, builder, value) for t, value in
                           ((s_ty, s), (m_ty, m), (l_ty, l), (alpha_ty, alpha), (p_ty, p_w)))
    rows = context.cast(builder, rows, signature.args[1], types.intp)
    s_row = cgutils.unpack_tuple(builder, s.strides)[0]
    p_row = cgutils.unpack_tuple(builder, p_w.strides)[0]
    nv = shape.nv
    words = ir.VectorType(ir.IntType(32), x.lanes)
    factor = builder.fptrunc(scale, x.scalar) if scale.type != x.scalar else scale
    factor = builder.shuffle_vector(builder.insert_element(ir.Constant(x.vector, ir.Undefined), factor, x.intp(0)),
                                    ir.Constant(x.vector, ir.Undefined), ir.Constant(words, None))
    m_old = [x.load(m.data, v) for v in range(nv)]
    zero, minus_inf = x.constant(0.0), x.constant(float("-inf"))
    running = [cgutils.alloca_once(builder, x.vector) for _ in range(nv)]
    for v in range(nv):
        builder.store(minus_inf, running[v])
    with cgutils.for_range(builder, rows) as loop:  # the max of the unscaled scores
        row = x.at(s.data, builder.mul(loop.index, s_row))
        for v in range(nv):
            builder.store(x.maximum(x.load(row, v), builder.load(running[v])), running[v])
    shifts = []
    for v in range(nv):  # scale > 0 and rounding is monotone: the max of the scaled scores, bit for bit
        new_max = x.maximum(builder.fmul(builder.load(running[v]), factor), m_old[v])
        shifts.append(builder.select(builder.fcmp_ordered("==", new_max, minus_inf), zero, new_max))
        rescale = x.exp2(builder.fsub(m_old[v], shifts[v]))
        x.store(new_max, m.data, v)
        x.store(rescale, alpha.data, v)
        builder.store(builder.fmul(x.load(l.data, v), rescale), running[v])  # running now holds l
    below = [builder.fsub(zero, shift) for shift in shifts]  # scale s - m in one rounding: an FMA
    pairs = builder.udiv(rows, rows.type(2))
    with cgutils.for_range(builder, pairs) as loop:  # weights in pairs of rows, their sum, packed
        row = x.at(s.data, builder.mul(builder.mul(loop.index, rows.type(2)), s_row))
        out = x.at(p_w.data, builder.mul(loop.index, p_row))
        for v in range(nv):
            word, even, odd = round_and_pair(builder, *(x.exp2(x.fma(x.load(r, v), factor, below[v]))
                                                        for r in (row, x.at(row, s_row))))
            builder.store(builder.fadd(builder.fadd(builder.load(running[v]), even), odd), running[v])
            builder.store(word, builder.bitcast(x.at(out, v * x.lanes * 4), words.as_pointer()), align=4)
    for v in range(nv):
        x.store(builder.load(running[v]), l.data, v)
    return context.get_dummy_value()


@intrinsic
def _weights(typingctx, s, rows, scale, m, l, alpha, p_w, shape):
    """The online-softmax step of microkernels._softmax_tile, with the scale and the packing of
    the weights folded in, over the first rows (even) rows of s (left as they are): m = max(m,
    scale s), alpha = 2^(m_old - m), the weights bf16(2^(scale s - m)) (0 where s is -inf)
    packed in pairs of rows into p_w[:rows / 2] (as _pack_pairs) and summed into l = alpha l +
    their column sums. scale s - m is one FMA (one rounding, where the other routes round the
    product first: a weight on a bf16 tie may round the other way)."""
    arrays = (s, m, l, alpha)
    if not (isinstance(shape, _TileShapeType) and shape.bf16 and isinstance(rows, types.Integer)
            and isinstance(scale, types.Float) and isinstance(p_w, types.Array) and p_w.dtype == types.uint32
            and p_w.layout == "C" and all(isinstance(a, types.Array) and a.layout == "C"
                                          and a.dtype == types.float32 for a in arrays)):
        return None
    return types.void(s, rows, scale, m, l, alpha, p_w, shape), _weights_codegen


def _rescale_codegen(context, builder, signature, args):
    """acc *= alpha row by row (see _rescale), in vector registers."""
    acc_ty, alpha_ty, shape = signature.args
    x = _VectorIR(context, builder, acc_ty.dtype, shape)
    acc, alpha = (context.make_array(t)(context, builder, value) for t, value in zip((acc_ty, alpha_ty), args[:2]))
    rows, _ = cgutils.unpack_tuple(builder, acc.shape)
    acc_row = cgutils.unpack_tuple(builder, acc.strides)[0]
    factors = [x.load(alpha.data, v) for v in range(shape.nv)]
    ones = x.constant(1.0)
    moved = builder.fcmp_unordered("!=", factors[0], ones)
    for factor in factors[1:]:
        moved = builder.or_(moved, builder.fcmp_unordered("!=", factor, ones))
    lanes_moved = builder.bitcast(moved, ir.IntType(x.lanes))
    with builder.if_then(builder.icmp_unsigned("!=", lanes_moved, lanes_moved.type(0))):
        with cgutils.for_range(builder, rows) as loop:
            row = x.at(acc.data, builder.mul(loop.index, acc_row))
            for v, factor in enumerate(factors):
                x.store(builder.fmul(x.load(row, v), factor), row, v)
    return context.get_dummy_value()


@intrinsic
def _rescale(typingctx, acc, alpha, shape):
    """acc (rows, nr) *= alpha (nr), row by row, unless every alpha is 1 (a panel whose max
    did not move; x * 1 is x, so skipping changes no bit). A loop over the rows with the
    nr / lanes vectors of alpha in registers: the plain Numba loop it replaces ran about one
    multiply a cycle here, a fifth of the AMX block's time at N = 4096."""
    if not (isinstance(shape, _TileShapeType) and all(isinstance(a, types.Array) and a.dtype == types.float32
                                                      and a.layout == "C" for a in (acc, alpha))
            and acc.ndim == 2 and alpha.ndim == 1):
        return None
    return types.void(acc, alpha, shape), _rescale_codegen


@_jit
def _tile_matmul(a, rows, b, c, words, subs, accumulate):
    """c[:rows, :16 subs] = (c if accumulate else 0) + a[:rows, :words] . b[:words, :16 subs] (rows and
    words multiples of 16, subs <= 3): S^T = K qT (k_w, q_p into s_t) and acc += V^T P^T (v_w, p_w
    into acc_t). Each tile of a (the key tile: K or V, from L2) is loaded once for all subs; b (a
    panel's queries or weights, small) once per use. Per 16 rows of c: tiles 0..2 hold its subs,
    3 and 4 the two tiles of a in flight, 5..7 those of b: loading a once per sub instead costs
    more cycles per tdpbf16ps, a being in L2."""
    for r in range(0, rows, 16):
        if accumulate:
            _tile_load(0, c, r, 0)
            if subs > 1:
                _tile_load(1, c, r, 16)
            if subs > 2:
                _tile_load(2, c, r, 32)
        else:
            _tile_zero(0)
            _tile_zero(1)
            _tile_zero(2)
        for w in range(0, words, 32):
            _tile_load(3, a, r, w)
            _tile_load(5, b, w, 0)
            _tile_dot(0, 3, 5)
            if subs > 1:
                _tile_load(6, b, w, 16)
                _tile_dot(1, 3, 6)
            if subs > 2:
                _tile_load(7, b, w, 32)
                _tile_dot(2, 3, 7)
            if w + 16 < words:
                _tile_load(4, a, r, w + 16)
                _tile_load(5, b, w + 16, 0)
                _tile_dot(0, 4, 5)
                if subs > 1:
                    _tile_load(6, b, w + 16, 16)
                    _tile_dot(1, 4, 6)
                if subs > 2:
                    _tile_load(7, b, w + 16, 32)
                    _tile_dot(2, 4, 7)
        _tile_store(0, c, r, 0)
        if subs > 1:
            _tile_store(1, c, r, 16)
        if subs > 2:
            _tile_store(2, c, r, 32)


@_jit
def _key_value_tiles(k, v, settings):
    """Room for every key tile of k (entries, T, d) and v (entries, T, d_vp) as the tiles read
    them, each written once per call by the first thread that needs it (_flash_block_amx):
    (k_words (entries, tiles, tile, words), v_words (entries, tiles, d_vt, tile / 2), and a
    pack-once flag per entry and tile for each, atomics.py), every tile 64-byte aligned."""
    t_k, block_k = settings.t_k, settings.block_k
    tiles = (t_k + block_k - 1) // block_k
    tile, words = _round_up(min(block_k, t_k), 32), _round_up((k.shape[2] + 1) // 2, 16)
    d_vt = _round_up(v.shape[2], 16)
    k_words = empty(k.shape[0] * tiles * tile * words, np.uint32).reshape((k.shape[0], tiles, tile, words))
    v_words = empty(v.shape[0] * tiles * d_vt * tile // 2, np.uint32).reshape((v.shape[0], tiles, d_vt, tile // 2))
    return k_words, v_words, np.zeros(k.shape[0] * tiles, np.int64), np.zeros(v.shape[0] * tiles, np.int64)


@_jit
def _pack_key_tile(k, k0, n_tile, k_w):
    """k_w (tile, words) = keys k0 ... k0 + n_tile - 1 of k (T, d) paired along d (_pack_rows), 0 elsewhere."""
    _pack_rows(k, k0, n_tile, k_w)
    k_w[:n_tile, (k.shape[1] + 1) // 2:] = 0
    k_w[n_tile:] = 0


@_jit
def _pack_value_tile(v, k0, n_tile, v_w, shape):
    """v_w (d_vt, tile / 2) = the values of keys k0 ... k0 + n_tile - 1 of v (T, d_vp) transposed and
    paired along keys (_pack_columns), 0 elsewhere."""
    _pack_columns(v, k0, n_tile, v_w, shape)
    v_w[:v.shape[1], (n_tile + 1) // 2:] = 0
    v_w[v.shape[1]:] = 0


@_jit
def _flash_block_amx(queries, k, v, q0, q1, outputs, lses, settings, shape, tiles, k_entry, v_entry):
    """Queries q0:q1 of queries (T_q, d) -> the same rows of outputs (T_q, d_v) and lses (T_q,),
    as _flash_block_bf16, on AMX tiles (only where amx.available()). tiles: _key_value_tiles
    of the call; k and v are entries k_entry and v_entry of it."""
    t_k, scale, block_k = settings.t_k, settings.scale, settings.block_k
    causal, offset = settings.causal, settings.offset
    k_words, v_words, k_packed, v_packed = tiles
    n_tiles = k_words.shape[1]
    q, out, lse = queries[q0:q1], outputs[q0:q1], lses[q0:q1]
    rows, d = q.shape[0], q.shape[1]
    nr = _tile_cols(shape, q)
    subs = nr // 16
    dw, words, d_vt = (d + 1) // 2, k_words.shape[3], v_words.shape[2]  # words: bf16 pairs along d, whole tiles
    panels = (rows + nr - 1) // nr
    tile = k_words.shape[2]
    q_w = zeros(panels * words, nr, np.uint32)  # tiles: 64-byte aligned (amx.zeros)
    acc_t = zeros(panels * d_vt, nr, np.float32).reshape((panels, d_vt, nr))
    m = np.full((panels, nr), -np.inf, np.float32)
    l = np.zeros((panels, nr), np.float32)
    s_t = empty(tile * nr, np.float32).reshape((tile, nr))  # rows past a tile's n_pad are never read
    p_w = empty(tile // 2 * nr, np.uint32).reshape((tile // 2, nr))  # zeroed past the weights before each use
    alpha = np.empty(nr, np.float32)
    q_pairs = np.empty((nr, dw), np.uint32)
    for p in range(panels):
        _pack_panel(q, p, q_pairs)
        _transpose(q_pairs, q_w[p * words:p * words + dw], nr, dw, shape)
    _tile_configure(tile_config())
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    for k0 in range(0, k_end, block_k):
        t, n_tile = k0 // block_k, min(block_k, t_k - k0)
        k_w, v_w = k_words[k_entry, t], v_words[v_entry, t]
        if _packing(k_packed, k_entry * n_tiles + t):
            _pack_key_tile(k, k0, n_tile, k_w)
            _publish(k_packed, k_entry * n_tiles + t)
        if _packing(v_packed, v_entry * n_tiles + t):
            _pack_value_tile(v, k0, n_tile, v_w, shape)
            _publish(v_packed, v_entry * n_tiles + t)
        for p in range(panels):
            j0 = p * nr
            n, n_pad, masked = _panel_keys(n_tile, k0, q0, j0, nr, rows, 16, causal, offset, 1)
            if n <= 0:
                continue
            _tile_matmul(k_w, n_pad, q_w[p * words:(p + 1) * words], s_t, words, subs, False)
            if masked:
                _mask_panel(s_t, n, n_pad, k0, q0, j0, causal, offset, 1)
            _weights(s_t, n_pad, scale, m[p], l[p], alpha, p_w, shape)  # the scale after the sum: exact products
            n_words = _round_up(n_pad // 2, 16)  # the weights past n are 0
            p_w[n_pad // 2:n_words] = 0
            acc_p = acc_t[p]
            _rescale(acc_p, alpha, shape)
            _tile_matmul(v_w, acc_p.shape[0], p_w, acc_p, n_words, subs, True)
    _tile_release()
    _finish_rows(acc_t, m, l, out, lse, shape)
