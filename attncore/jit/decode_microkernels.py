"""The decode path's micro-kernels, vectors along the head dimension d: few query rows
(G heads x T_q queries) against many keys, where the flash micro-kernels (vectors along
queries) would leave most lanes empty.

* _scores_block: s[r0:r0+RB, j0:j0+KB] = q[r0:r0+RB] . k[kk0:kk0+KB], RB x KB = one vector's
  lanes of dot products (4 rows x 4 keys in float32 on AVX-512). Each product is a vector
  of partial sums over d; the RB x KB vectors are then summed across lanes together
  (a transposing tree: log2(lanes) levels of two shuffles and an add) into one vector
  that holds all RB x KB scores, stored a row's KB keys at a time.
* _accumulate_block: acc[r0:r0+4, c0:c0+CB lanes] = alpha * acc + p[r0:r0+4, :n] @ v[kk0:kk0+n, c0:...],
  4 rows x CB vectors of accumulators in registers for the n keys; each row of v is read
  once as CB vectors, each weight broadcast once (p by rows, or the flash driver's weights
  transposed: any strides).
* _row_max: a row's max over the keys it sees and whether any of its scores is NaN or
  +-inf, a vector at a time (Numba's max() of floats does not vectorise: a scalar chain).

The first two need d (d_v) to be a multiple of the vector's lanes (of CB vectors); decode.py
takes the flash micro-kernels otherwise.
"""
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .isa import _TileShapeType
from .vector_ir import _VectorIR

ROWS = 4  # rows of q (of the weights) per block: the packed rows are padded to a multiple of this


def _score_rows(lanes):
    """RB, the rows of a _scores_block; KB = lanes // RB keys."""
    return min(ROWS, lanes)


def _value_vectors(bits):
    """CB, the vectors of columns of an _accumulate_block: 4 x 4 accumulators in 32 zmm, 4 x 2 in 16 ymm."""
    return 4 if bits >= 512 else 2


def _shuffle(builder, x, y, indices):
    mask = ir.Constant(ir.VectorType(ir.IntType(32), len(indices)), [ir.Constant(ir.IntType(32), i) for i in indices])
    return builder.shuffle_vector(x, y, mask)


def _sum_across(builder, vectors, lanes):
    """One vector whose lane i is the sum of the lanes of vectors[i] (len(vectors) = lanes, a power
    of two): pairs combined level by level, each source's partial sums halving in width."""
    width = lanes
    while len(vectors) > 1:
        half = width // 2
        chunks = range(0, lanes, width)
        low = [c + i for c in chunks for i in range(half)]
        high = [c + half + i for c in chunks for i in range(half)]
        vectors = [builder.fadd(_shuffle(builder, x, y, low + [lanes + i for i in low]),
                                _shuffle(builder, x, y, high + [lanes + i for i in high]))
                   for x, y in zip(vectors[::2], vectors[1::2])]
        width = half
    return vectors[0]


def _scores_codegen(context, builder, signature, args):
    q_ty, _, k_ty, _, s_ty, _, shape = signature.args
    q, r0, k, kk0, s, j0, _ = args
    x = _VectorIR(context, builder, q_ty.dtype, shape)
    lanes = x.lanes
    rb = _score_rows(lanes)
    kb = lanes // rb
    q, k, s = (context.make_array(t)(context, builder, value) for t, value in ((q_ty, q), (k_ty, k), (s_ty, s)))
    r0, kk0, j0 = (context.cast(builder, value, t, types.intp) for t, value in
                   zip((signature.args[1], signature.args[3], signature.args[5]), (r0, kk0, j0)))
    q_row = cgutils.unpack_tuple(builder, q.strides)[0]
    k_row = cgutils.unpack_tuple(builder, k.strides)[0]
    s_row = cgutils.unpack_tuple(builder, s.strides)[0]
    d = cgutils.unpack_tuple(builder, q.shape)[1]
    q_rows = [x.at(q.data, builder.mul(builder.add(r0, x.intp(i)), q_row)) for i in range(rb)]
    k_rows = [x.at(k.data, builder.mul(builder.add(kk0, x.intp(j)), k_row)) for j in range(kb)]
    acc = [[cgutils.alloca_once(builder, x.vector) for _ in range(kb)] for _ in range(rb)]
    for i in range(rb):
        for j in range(kb):
            builder.store(x.constant(0.0), acc[i][j])
    vector_bytes = x.intp(lanes * x.itemsize)
    with cgutils.for_range(builder, builder.udiv(d, x.intp(lanes))) as loop:
        offset = builder.mul(loop.index, vector_bytes)
        keys = [x.load(x.at(k_rows[j], offset)) for j in range(kb)]
        for i in range(rb):
            query = x.load(x.at(q_rows[i], offset))
            for j in range(kb):
                builder.store(x.fma(query, keys[j], builder.load(acc[i][j])), acc[i][j])
    total = _sum_across(builder, [builder.load(acc[i][j]) for i in range(rb) for j in range(kb)], lanes)
    row_type = ir.VectorType(x.scalar, kb)
    for i in range(rb):  # lanes i * kb ... are row r0 + i's scores of keys j0 ... j0 + kb - 1
        target = x.at(s.data, builder.add(builder.mul(builder.add(r0, x.intp(i)), s_row),
                                          builder.mul(j0, x.intp(x.itemsize))))
        part = _shuffle(builder, total, total, [i * kb + j for j in range(kb)])
        builder.store(part, builder.bitcast(target, row_type.as_pointer()), align=x.itemsize)
    return context.get_dummy_value()


@intrinsic
def _scores_block(typingctx, q, r0, k, kk0, s, j0, shape):
    """s[r0 + i, j0 + j] = q[r0 + i] . k[kk0 + j] for i < RB, j < KB (RB x KB = the lanes);
    q (rows, d), k (keys, d), s (rows, keys) C-contiguous, d a multiple of the lanes."""
    arrays = (q, k, s)
    if not (isinstance(shape, _TileShapeType) and all(isinstance(a, types.Array) and a.layout == "C"
                                                      and a.ndim == 2 for a in arrays)
            and all(isinstance(i, types.Integer) for i in (r0, kk0, j0)) and len({a.dtype for a in arrays}) == 1):
        return None
    return types.void(q, r0, k, kk0, s, j0, shape), _scores_codegen


def _accumulate_codegen(context, builder, signature, args):
    p_ty, _, v_ty, _, _, acc_ty, _, alpha_ty, shape = signature.args
    p, r0, v, kk0, n, acc, c0, alpha, _ = args
    x = _VectorIR(context, builder, p_ty.dtype, shape)
    cb = _value_vectors(shape.bits)
    p, v, acc, alpha = (context.make_array(t)(context, builder, value) for t, value in
                        ((p_ty, p), (v_ty, v), (acc_ty, acc), (alpha_ty, alpha)))
    r0, kk0, n, c0 = (context.cast(builder, value, t, types.intp) for t, value in
                      zip((signature.args[i] for i in (1, 3, 4, 6)), (r0, kk0, n, c0)))
    p_row, p_key = cgutils.unpack_tuple(builder, p.strides)
    v_row = cgutils.unpack_tuple(builder, v.strides)[0]
    acc_row = cgutils.unpack_tuple(builder, acc.strides)[0]
    column = builder.mul(c0, x.intp(x.itemsize))
    rows = [builder.add(r0, x.intp(i)) for i in range(ROWS)]
    p_rows = [x.at(p.data, builder.mul(r, p_row)) for r in rows]
    acc_rows = [x.at(acc.data, builder.add(builder.mul(r, acc_row), column)) for r in rows]
    registers = [[cgutils.alloca_once(builder, x.vector) for _ in range(cb)] for _ in range(ROWS)]
    for i in range(ROWS):
        factor = x.broadcast(x.at(alpha.data, builder.mul(rows[i], x.intp(x.itemsize))))
        for c in range(cb):
            builder.store(builder.fmul(factor, x.load(acc_rows[i], c)), registers[i][c])
    v_start = x.at(v.data, builder.add(builder.mul(kk0, v_row), column))
    with cgutils.for_range(builder, n) as loop:
        values = [x.load(x.at(v_start, builder.mul(loop.index, v_row)), c) for c in range(cb)]
        weight = builder.mul(loop.index, p_key)
        for i in range(ROWS):
            w = x.broadcast(x.at(p_rows[i], weight))
            for c in range(cb):
                builder.store(x.fma(w, values[c], builder.load(registers[i][c])), registers[i][c])
    for i in range(ROWS):
        for c in range(cb):
            x.store(builder.load(registers[i][c]), acc_rows[i], c)
    return context.get_dummy_value()


@intrinsic
def _accumulate_block(typingctx, p, r0, v, kk0, n, acc, c0, alpha, shape):
    """acc[r0 + i, c0:c0 + CB lanes] = alpha[r0 + i] acc[...] + sum_j p[r0 + i, j] v[kk0 + j, c0:...]
    for i < ROWS, j < n; p (rows, keys) any strides (the flash driver's weights (keys, rows), transposed),
    v (keys, d_v), acc (rows, d_v), alpha (rows,) C-contiguous."""
    arrays = (p, v, acc, alpha)
    if not (isinstance(shape, _TileShapeType) and all(isinstance(a, types.Array) for a in arrays)
            and all(a.layout == "C" for a in arrays[1:])
            and p.ndim == v.ndim == acc.ndim == 2 and alpha.ndim == 1
            and all(isinstance(i, types.Integer) for i in (r0, kk0, n, c0)) and len({a.dtype for a in arrays}) == 1):
        return None
    return types.void(p, r0, v, kk0, n, acc, c0, alpha, shape), _accumulate_codegen


def _row_max_codegen(context, builder, signature, args):
    x_ty, n_ty, seen_ty, _, shape = signature.args
    x_array, n, seen, top, _ = args
    x = _VectorIR(context, builder, x_ty.dtype, shape)
    data = context.make_array(x_ty)(context, builder, x_array).data
    n, seen = (context.cast(builder, value, t, types.intp) for value, t in ((n, n_ty), (seen, seen_ty)))
    vectors = builder.udiv(n, x.intp(x.lanes))

    def splat(value):
        undefined = ir.Constant(ir.VectorType(value.type, x.lanes), ir.Undefined)
        return builder.shuffle_vector(builder.insert_element(undefined, value, x.intp(0)), undefined,
                                      ir.Constant(ir.VectorType(ir.IntType(32), x.lanes), None))

    def step(value, index, limit, tops, junk, zero):
        """junk += value * 0 (NaN once a value is NaN or +-inf); tops = value where higher, at index < limit."""
        builder.store(builder.fadd(builder.load(junk), builder.fmul(value, zero)), junk)
        current = builder.load(tops)
        higher = builder.and_(builder.icmp_signed("<", index, limit), builder.fcmp_ordered(">", value, current))
        builder.store(builder.select(higher, value, current), tops)

    lane = ir.Constant(ir.VectorType(x.intp, x.lanes), [ir.Constant(x.intp, i) for i in range(x.lanes)])
    tops, junk = (cgutils.alloca_once_value(builder, x.constant(value)) for value in (-np.inf, 0.0))
    with cgutils.for_range(builder, vectors) as loop:
        first = builder.mul(loop.index, x.intp(x.lanes))
        step(x.load(x.at(data, builder.mul(first, x.intp(x.itemsize)))), builder.add(splat(first), lane),
             splat(seen), tops, junk, x.constant(0.0))
    top_slot, junk_slot = (cgutils.alloca_once_value(builder, value) for value in (top, ir.Constant(x.scalar, 0.0)))
    with cgutils.for_range_slice(builder, builder.mul(vectors, x.intp(x.lanes)), n, x.intp(1), inc=True) as (j, _):
        at = builder.bitcast(x.at(data, builder.mul(j, x.intp(x.itemsize))), x.scalar.as_pointer())
        step(builder.load(at), j, seen, top_slot, junk_slot, ir.Constant(x.scalar, 0.0))
    suffix = f"v{x.lanes}f{x.bitwidth}"
    reduce_max, reduce_add = (cgutils.get_or_insert_function(builder.module, ir.FunctionType(x.scalar, operands), name)
                              for operands, name in (([x.vector], f"llvm.vector.reduce.fmax.{suffix}"),
                                                     ([x.scalar, x.vector], f"llvm.vector.reduce.fadd.{suffix}")))
    vector_top, top = builder.call(reduce_max, [builder.load(tops)]), builder.load(top_slot)
    top = builder.select(builder.fcmp_ordered(">", vector_top, top), vector_top, top)
    junk = builder.call(reduce_add, [builder.load(junk_slot), builder.load(junk)])
    return context.make_tuple(builder, signature.return_type, [top, builder.fcmp_unordered("uno", junk, junk)])


@intrinsic
def _row_max(typingctx, x, n, seen, top, shape):
    """(max(top, x[:seen]), whether x[:n] holds NaN or +-inf), seen <= n, a vector at a time:
    x (keys,) C-contiguous, top of x's dtype."""
    if not (isinstance(shape, _TileShapeType) and isinstance(x, types.Array) and x.layout == "C" and x.ndim == 1
            and all(isinstance(i, types.Integer) for i in (n, seen)) and top == x.dtype):
        return None
    return types.Tuple((x.dtype, types.boolean))(x, n, seen, top, shape), _row_max_codegen


CACHE_LINE = 64  # bytes


def _prefetch_codegen(context, builder, signature, args):
    x_ty, row_ty, count_ty = signature.args
    x = context.make_array(x_ty)(context, builder, args[0])
    row, count = (context.cast(builder, value, t, types.intp) for t, value in zip((row_ty, count_ty), args[1:]))
    intp, byte_ptr = context.get_value_type(types.intp), ir.IntType(8).as_pointer()
    row_bytes = cgutils.unpack_tuple(builder, x.strides)[0]
    start = builder.gep(builder.bitcast(x.data, byte_ptr), [builder.mul(row, row_bytes)])
    lines = builder.udiv(builder.add(builder.mul(count, row_bytes), intp(CACHE_LINE - 1)), intp(CACHE_LINE))
    i32 = ir.IntType(32)
    prefetch = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32]),
                                              "llvm.prefetch.p0")
    with cgutils.for_range(builder, lines) as loop:  # a read, kept in every cache level, of data
        line = builder.gep(start, [builder.mul(loop.index, intp(CACHE_LINE))])
        builder.call(prefetch, [line, i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def _prefetch_rows(typingctx, x, row, count):
    """Ask the CPU to bring rows row:row + count of x (2-D, C-contiguous rows) into its caches:
    a hint that reads nothing and cannot fault; the caller keeps the rows inside x."""
    if not (isinstance(x, types.Array) and x.layout == "C" and x.ndim == 2
            and all(isinstance(i, types.Integer) for i in (row, count))):
        return None
    return types.void(x, row, count), _prefetch_codegen


def _block_sizes(shape, x):
    """(RB, KB, CB * lanes) of a TileShape for the dtype of array x, compile-time constants in kernels."""


@overload(_block_sizes)
def _overload_block_sizes(shape, x):
    lanes = shape.bits // x.dtype.bitwidth
    rb = _score_rows(lanes)
    sizes = (rb, lanes // rb, _value_vectors(shape.bits) * lanes)
    return lambda shape, x: sizes


def fits(shape, itemsize, d, d_v):
    """Whether the micro-kernels here take d and d_v on this TileShape (plain Python)."""
    lanes = shape.bits // (8 * itemsize)
    return not shape.loops and d % lanes == 0 and d_v % (_value_vectors(shape.bits) * lanes) == 0 and d_v > 0
