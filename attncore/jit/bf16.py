"""bfloat16 products: the pieces of flash_attention(precision="bf16").

What is rounded: q, k and v to bfloat16 (round to nearest, ties to even: the rounding of
attncore.bfloat16) as the kernel packs them in pairs (_pair; emulated: before the kernel
reads them, round_to_bf16), and the weights P = 2^(s - m) of each key
tile as the softmax step makes them. Everything else is float32: the scores are sums of
bf16 x bf16 products in float32 (such a product is exact in float32: 8 + 8 significant
bits), the running max, the sum l, the exponentials and the output accumulator. l sums
the rounded weights, so the weights the output is made of, bf16(p) / l, add up to 1 as
float32 weights do: every output row is still a convex combination of the (rounded) v rows.

Three ways to run it, with the same operands and the same products:

* "native" (the avx512 path on a CPU with AVX512_BF16): vdpbf16ps, through the LLVM
  intrinsic llvm.x86.avx512bf16.dpbf16ps.512. Each float32 lane takes two bf16 x bf16
  products per instruction, so the reduction runs over pairs: q, k, v and P are packed
  as 32-bit words holding two bf16 (_pack_rows, _pack_columns), along d for S = K qT and
  along keys for V^T P. The instruction adds the odd product, then the even one, to the
  lane, in round-to-nearest-even, with denormal inputs and results flushed to zero.
  The scale (log2 e / sqrt(d)) multiplies S after the sum (flash_bf16.py). Whether this
  beats the float32 path depends on the CPU's rate for vdpbf16ps, which on some cores
  issues at a fraction of vfmadd's: bf16_route.py says which way precision="bf16" takes.
* "amx" (the same, on a CPU and a Numba target with AMX-BF16, where Linux grants the tile
  state: amx.available()): tdpbf16ps on 16 x 16 tiles of the same packed words, 16 float32
  sums of 32 products per row and instruction (flash_amx.py). Preferred to "native" wherever
  it can run: the products cost a fraction of the softmax there.
* "emulated" (every other path, a CPU without AVX512_BF16, or precision="bf16_emulated"):
  q, k and v rounded and stored as float32, then the float32 kernel, whose softmax step
  rounds P (shape.bf16).

"Exactly" means: the same bf16 operands and the same exact products, in every way and in
the NumPy reference (attncore.bfloat16.round_to_bfloat16, then float32 or float64 sums).
What differs is only float32 rounding: the order of the sums (pairs here, one by one in
the float32 kernel), where the scale is applied (the emulated kernel folds it into q, one
more float32 rounding; on AMX it shares one FMA with the max's subtraction), and
denormals (flushed by vdpbf16ps and tdpbf16ps). So the ways differ by float32
accumulation error, not by bf16 rounding: a weight that rounds differently (its
float32 value sat on a bf16 tie) is within that too, one bf16 step of one weight at most.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils

from .compiling import _jit
from .isa import host_features
from .transpose import _transpose


class _BFloat16Type(ir.Type):
    """LLVM's bfloat (llvmlite.ir has no class for it): the element of the vdpbf16ps operands."""

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, _BFloat16Type)

    def __hash__(self):
        return hash("bfloat")


def native_available(shape):
    """Whether `shape` (a TileShape) can run vdpbf16ps: the 512-bit path, and a target
    (host_features: what Numba compiles for) with AVX512_BF16. Emitting it elsewhere would
    abort the process in LLVM, so this is checked before any kernel is compiled."""
    features = host_features()
    return (shape.bits == 512 and not shape.loops and bool(features.get("avx512bf16"))
            and bool(features.get("avx512bw")) and bool(features.get("avx512f")))


def round_vector(builder, x):
    """bf16(x) as float32 for a <lanes x float> vector: the low 16 bits rounded away, to nearest
    with ties to even (finite x; weights here are in [0, 1])."""
    lanes = x.type.count
    words = ir.VectorType(ir.IntType(32), lanes)

    def splat(value):
        return ir.Constant(words, [ir.Constant(ir.IntType(32), value)] * lanes)

    bits = builder.bitcast(x, words)
    last_kept = builder.and_(builder.lshr(bits, splat(16)), splat(1))
    rounded = builder.and_(builder.add(builder.add(bits, splat(0x7FFF)), last_kept), splat(0xFFFF0000))
    return builder.bitcast(rounded, x.type)


def round_and_pair(builder, even, odd):
    """Weights (<16 x float>, finite, >= 0, no denormals) rounded to bf16 two vectors at a time, on
    a CPU with AVX512_BF16: (the <16 x i32> words pairing bf16(even) (low half) with bf16(odd), and
    both as float32). One vcvtne2ps2bf16 (round to nearest, ties to even: round_vector's rounding
    of such values, bit for bit) and one shuffle interleaving its two halves."""
    lanes = even.type.count
    halves, words = ir.VectorType(ir.IntType(16), 2 * lanes), ir.VectorType(ir.IntType(32), lanes)
    convert = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VectorType(_BFloat16Type(), 2 * lanes), [even.type, even.type]),
        "llvm.x86.avx512bf16.cvtne2ps2bf16.512")
    both = builder.bitcast(builder.call(convert, [odd, even]), halves)  # bf16(even) then bf16(odd)
    interleave = ir.Constant(ir.VectorType(ir.IntType(32), 2 * lanes),
                             [ir.Constant(ir.IntType(32), i // 2 + (lanes if i % 2 else 0)) for i in range(2 * lanes)])
    pairs = builder.bitcast(builder.shuffle_vector(both, both, interleave), words)

    def splat(value):
        return ir.Constant(words, [ir.Constant(ir.IntType(32), value)] * lanes)

    return (pairs, builder.bitcast(builder.shl(pairs, splat(16)), even.type),
            builder.bitcast(builder.and_(pairs, splat(0xFFFF0000)), even.type))


@_jit
def _round_bits(bits):
    """bf16 rounding of float32 bits (uint32), ties to even; NaN and inf pass through (a select,
    not a branch: loops over arrays vectorise)."""
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return bits if bits & np.uint32(0x7F800000) == np.uint32(0x7F800000) else rounded


@_jit
def _round_row(row):
    """Round a 1-D float32 array to bf16 in place."""
    bits = row.view(np.uint32)
    for i in range(bits.size):
        bits[i] = _round_bits(bits[i])


@_jit
def _round_copy(x):
    """bf16(x) as float32, a new C-contiguous array (x: float32, C-contiguous, any shape). One
    thread, vectorised: waking a parallel loop's threads costs more than the rounding."""
    flat = x.reshape(x.size).view(np.uint32)
    out = np.empty(x.size, np.uint32)
    for i in range(x.size):
        out[i] = _round_bits(flat[i])
    return out.view(np.float32).reshape(x.shape)


def round_to_bf16(x):
    """x (float32, C-contiguous) rounded to bfloat16, stored as float32: a copy."""
    return _round_copy(np.ascontiguousarray(x, np.float32))


@_jit
def _pair(low, high):
    """The 32-bit word of two bf16: float32 bits low and high, each rounded (_round_bits: the
    rounding of attncore.bfloat16, a no-op on a value that is bf16 already), low in the low half."""
    return (_round_bits(low) >> np.uint32(16)) | (_round_bits(high) & np.uint32(0xFFFF0000))


@_jit
def _pack_rows(x, r0, rows, out):
    """Rows r0:r0+rows of x (R, d) float32, rounded to bf16 -> out[:rows] (rows, ceil(d/2)) uint32:
    word c holds x[:, 2c] in its low half, x[:, 2c + 1] (0 past d) in its high half."""
    d = x.shape[1]
    bits = x.view(np.uint32)
    for r in range(rows):
        for c in range(d // 2):
            out[r, c] = _pair(bits[r0 + r, 2 * c], bits[r0 + r, 2 * c + 1])
        if d % 2:
            out[r, d // 2] = _pair(bits[r0 + r, d - 1], np.uint32(0))


@_jit
def _pack_panel(q, p, q_pairs):
    """q_pairs (nr, d / 2) = queries p * nr ... of q (T, d) paired along d (_pack_rows), the
    rows past q's end zero (nr = q_pairs.shape[0])."""
    nr = q_pairs.shape[0]
    width = min(nr, q.shape[0] - p * nr)
    _pack_rows(q, p * nr, width, q_pairs)
    q_pairs[width:] = 0


@_jit
def _pack_columns(x, r0, rows, out, shape):
    """Rows r0:r0+rows of x (R, C) float32, rounded to bf16, transposed and paired ->
    out[:, :ceil(rows/2)] (C, words) uint32: out[c, w] holds x[r0 + 2w, c] (low half) and
    x[r0 + 2w + 1, c] (high half, 0 past rows). The pairs are made row by row (a loop that
    vectorises), then transposed (transpose.py)."""
    pairs = np.empty(((rows + 1) // 2, x.shape[1]), np.uint32)
    _pack_pairs(x[r0:r0 + rows], rows, pairs)
    _transpose(pairs, out, pairs.shape[0], x.shape[1], shape)


@_jit
def _pack_pairs(x, rows, out):
    """Pairs of rows of x (R, nr) float32, rounded to bf16 -> out[:ceil(rows/2)] (words, nr)
    uint32: out[w, j] holds x[2w, j] (low half) and x[2w + 1, j] (high half, 0 past rows)."""
    bits = x.view(np.uint32)
    nr = x.shape[1]
    for w in range(rows // 2):
        for j in range(nr):
            out[w, j] = _pair(bits[2 * w, j], bits[2 * w + 1, j])
    if rows % 2:
        for j in range(nr):
            out[rows // 2, j] = _pair(bits[rows - 1, j], np.uint32(0))


def _dot_codegen(mode, modes, context, builder, signature, args):
    """c[rc:rc+mr, :nr] = (column * c if rescale else 0) + scale * (a[ra:ra+mr, ka:ka+kc] . b[:kc, :nr])
    over kc words of bf16 pairs (vdpbf16ps); with the max mode also column = max(column, the new rows).
    modes: (zero, max, rescale), the mode numbers of microkernels.py."""
    zero_mode, max_mode, rescale_mode = modes
    a_ty, ra_ty, ka_ty, b_ty, c_ty, rc_ty, kc_ty, column_ty, scale_ty, shape = signature.args
    a, ra, ka, b, c, rc, kc, column, scale, _ = args
    from .vector_ir import _VectorIR, store_tile, tile_block

    x = _VectorIR(context, builder, c_ty.dtype, shape)
    lanes, mr, nv = x.lanes, shape.mr, shape.nv
    words = ir.VectorType(ir.IntType(32), lanes)
    pairs = ir.VectorType(_BFloat16Type(), 2 * lanes)
    dot = cgutils.get_or_insert_function(builder.module, ir.FunctionType(x.vector, [x.vector, pairs, pairs]),
                                         "llvm.x86.avx512bf16.dpbf16ps.512")
    block, kc = tile_block(x, context, builder, signature, args, rescale=mode == rescale_mode)
    acc, a_rows, a_col, b, b_row = block.acc, block.a_rows, block.a_col, block.b, block.b_row
    scale = context.cast(builder, scale, scale_ty, c_ty.dtype)
    undefined = ir.Constant(words, ir.Undefined)
    splat = ir.Constant(ir.VectorType(ir.IntType(32), lanes), None)
    with cgutils.for_range(builder, kc) as loop:
        b_k = x.at(b.data, builder.mul(loop.index, b_row))
        b_vectors = [builder.bitcast(builder.load(builder.bitcast(x.pointer(b_k, v), words.as_pointer()), align=4),
                                     pairs) for v in range(nv)]
        a_k = builder.mul(loop.index, a_col)
        for i in range(mr):
            word = builder.load(builder.bitcast(x.at(a_rows[i], a_k), ir.IntType(32).as_pointer()), align=4)
            a_ik = builder.shuffle_vector(builder.insert_element(undefined, word, x.intp(0)), undefined, splat)
            a_ik = builder.bitcast(a_ik, pairs)
            for v in range(nv):
                builder.store(builder.call(dot, [builder.load(acc[i][v]), a_ik, b_vectors[v]]), acc[i][v])
    results = [[builder.load(acc[i][v]) for v in range(nv)] for i in range(mr)]
    if mode != rescale_mode:  # the scores: the scale after the sum, so the products stay exact
        factor = builder.insert_element(ir.Constant(x.vector, ir.Undefined), scale, x.intp(0))
        factor = builder.shuffle_vector(factor, ir.Constant(x.vector, ir.Undefined), splat)
        results = [[builder.fmul(r, factor) for r in row] for row in results]
    store_tile(x, block, results, update_max=mode == max_mode)
    return context.get_dummy_value()


def _dot_typer(mode, modes):
    def typer(typingctx, a, ra, ka, b, c, rc, kc, column, scale, shape):
        from .isa import _TileShapeType

        if not (isinstance(shape, _TileShapeType) and shape.bf16 == "native" and shape.bits == 512
                and all(isinstance(x, types.Array) for x in (a, b, c, column))
                and a.dtype == b.dtype == types.uint32 and c.dtype == column.dtype == types.float32
                and all(isinstance(x, types.Integer) for x in (ra, ka, rc, kc)) and isinstance(scale, types.Float)
                and b.layout == c.layout == column.layout == "C"):
            return None
        signature = types.void(a, ra, ka, b, c, rc, kc, column, scale, shape)
        return signature, lambda *codegen_args: _dot_codegen(mode, modes, *codegen_args)

    return typer
