"""Transposing a 2-D array a square block at a time in vector registers: _transpose.

The kernels keep queries in the lanes (acc_t (d_v, nr), q_w (words, nr)) and the caller's
arrays keep them in the rows, and the AMX tiles read V transposed: a plain Numba loop over
such a copy reads or writes with a stride, several cycles a word, and packing q, k and v
and finishing the rows would then take a large share of the AMX block's time.
_transpose_block loads L rows of an
L x L block (L: the lanes of the TileShape's vectors in the array's dtype), swaps one bit
of the row index with the same bit of the lane index per round of shuffles (log2 L rounds
of L two-vector shuffles), and stores the L columns as rows.
"""
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .compiling import _jit
from .isa import _tile_lanes, _TileShapeType


def _transpose_block_codegen(context, builder, signature, args):
    src_ty, _, _, dst_ty, _, _, shape = signature.args
    lanes = shape.bits // src_ty.dtype.bitwidth
    words = ir.VectorType(ir.IntType(src_ty.dtype.bitwidth), lanes)
    intp = context.get_value_type(types.intp)
    src, dst = (context.make_array(t)(context, builder, value) for t, value in ((src_ty, args[0]), (dst_ty, args[3])))
    r0, c0, r1, c1 = (context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2, 4, 5))

    def rows(array, row, column):
        """Pointers to the L rows of array from (row, column), as <L x iN>*."""
        row_stride, column_stride = cgutils.unpack_tuple(builder, array.strides)
        base = builder.bitcast(array.data, ir.IntType(8).as_pointer())
        start = builder.add(builder.mul(row, row_stride), builder.mul(column, column_stride))
        return [builder.bitcast(builder.gep(base, [builder.add(start, builder.mul(intp(i), row_stride))]),
                                words.as_pointer()) for i in range(lanes)]

    align = src_ty.dtype.bitwidth // 8
    vectors = [builder.load(pointer, align=align) for pointer in rows(src, r0, c0)]
    bit = lanes // 2
    while bit:  # swap this bit of the row index with the same bit of the lane index
        low = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [j if not j & bit else lanes + (j ^ bit)
                                                                 for j in range(lanes)])
        high = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [j | bit if not j & bit else lanes + j
                                                                  for j in range(lanes)])
        for i in range(lanes):
            if not i & bit:
                pair = vectors[i], vectors[i | bit]
                vectors[i], vectors[i | bit] = builder.shuffle_vector(*pair, low), builder.shuffle_vector(*pair, high)
        bit //= 2
    for vector, pointer in zip(vectors, rows(dst, r1, c1)):
        builder.store(vector, pointer, align=align)
    return context.get_dummy_value()


@intrinsic
def _transpose_block(typingctx, src, r0, c0, dst, r1, c1, shape):
    """dst[r1 + j, c1 + i] = src[r0 + i, c0 + j] for i, j < L, the lanes of shape's vectors in
    src's dtype (src and dst 2-D, C-contiguous, of one 32- or 64-bit dtype; no bound is
    checked: _transpose's job)."""
    if not (isinstance(shape, _TileShapeType) and src == dst and isinstance(src, types.Array) and src.ndim == 2
            and src.layout == "C" and src.dtype.bitwidth in (32, 64)
            and all(isinstance(i, types.Integer) for i in (r0, c0, r1, c1))):
        return None
    return types.void(src, r0, c0, dst, r1, c1, shape), _transpose_block_codegen


@_jit
def _transpose(src, dst, rows, cols, shape):
    """dst[:cols, :rows] = src[:rows, :cols].T (2-D, C-contiguous, the same 32- or 64-bit
    dtype): the whole L x L blocks in registers (_transpose_block), the edges in a loop."""
    size = _tile_lanes(shape, src)
    full_rows, full_cols = rows - rows % size, cols - cols % size
    for i in range(0, full_rows, size):
        for j in range(0, full_cols, size):
            _transpose_block(src, i, j, dst, j, i, shape)
    for i in range(rows):
        for j in range(full_cols if i < full_rows else 0, cols):
            dst[j, i] = src[i, j]
