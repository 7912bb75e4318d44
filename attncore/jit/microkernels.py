"""The two micro-kernels of a key tile, each a Numba @intrinsic that emits LLVM vector IR,
with a plain-loop twin (the "loops" path, and a reference to test against):

* _tile_product: mr rows of a tile product, c = (column * c or 0) + a @ b, the mr x nr
  block of c in vector registers for the whole reduction (S = K qT, acc = alpha acc + V^T P);
* _dot: the same product over words of bf16 pairs, on vdpbf16ps (bf16.py, flash_bf16.py);
* _softmax_tile: one key tile of the online softmax for a panel, lane by lane.

How the pieces fit (a stub with an @overload picks the body by TileShape at compile time):
  _flash_block -> _tile_product -> _product_zero | _product_max | _product_rescale | _product_loops
  _flash_block_bf16 -> _dot -> _dot_zero | _dot_max | _dot_rescale
  _flash_block -> _softmax_tile -> _softmax_vectors | _softmax_loops
"""
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .bf16 import _dot_typer, _round_row, round_vector
from .compiling import FASTMATH, _jit
from .exponential import _exp2
from .isa import _TileShapeType
from .vector_ir import _VectorIR, store_tile, tile_block

PRODUCT_ZERO, PRODUCT_MAX, PRODUCT_RESCALE = 0, 1, 2  # the modes of _tile_product


def _product_codegen(mode, context, builder, signature, args):
    """c[rc:rc+mr, :nr] = (column * c if PRODUCT_RESCALE else 0) + a[ra:ra+mr, ka:ka+kc] @ b[:kc, :nr];
    with PRODUCT_MAX also column = max(column, the new rows of c), lane by lane."""
    shape = signature.args[-1]
    x = _VectorIR(context, builder, signature.args[0].dtype, shape)
    mr, nv = shape.mr, shape.nv
    block, kc = tile_block(x, context, builder, signature, args, rescale=mode == PRODUCT_RESCALE)
    acc = block.acc
    with cgutils.for_range(builder, kc) as loop:
        b_k = x.at(block.b.data, builder.mul(loop.index, block.b_row))
        b_vectors = [x.load(b_k, v) for v in range(nv)]
        a_k = builder.mul(loop.index, block.a_col)
        for i in range(mr):
            a_ik = x.broadcast(x.at(block.a_rows[i], a_k))
            for v in range(nv):
                builder.store(x.fma(a_ik, b_vectors[v], builder.load(acc[i][v])), acc[i][v])
    store_tile(x, block, [[builder.load(acc[i][v]) for v in range(nv)] for i in range(mr)],
               update_max=mode == PRODUCT_MAX)
    return context.get_dummy_value()


def _product_typer(mode):
    def typer(typingctx, a, ra, ka, b, c, rc, kc, column, shape):
        arrays = (a, b, c, column)
        if not (isinstance(shape, _TileShapeType) and all(isinstance(x, types.Array) for x in arrays)
                and all(isinstance(x, types.Integer) for x in (ra, ka, rc, kc))
                and len({x.dtype for x in arrays}) == 1 and b.layout == c.layout == column.layout == "C"):
            return None
        signature = types.void(a, ra, ka, b, c, rc, kc, column, shape)
        return signature, lambda *codegen_args: _product_codegen(mode, *codegen_args)

    return typer


_product_zero = intrinsic(_product_typer(PRODUCT_ZERO))
_product_max = intrinsic(_product_typer(PRODUCT_MAX))
_product_rescale = intrinsic(_product_typer(PRODUCT_RESCALE))


@_jit
def _product_loops(a, ra, ka, b, c, rc, kc, column, mode):
    """The same product as plain Numba loops: c rows in memory, four rows of a at a time
    (PRODUCT_MAX is never asked of it: see _max_in_product)."""
    nr = c.shape[1]
    for i in range(4):
        for j in range(nr):
            c[rc + i, j] = c[rc + i, j] * column[j] if mode == PRODUCT_RESCALE else 0
    k4 = kc // 4 * 4
    for kk in range(0, k4, 4):
        for i in range(4):
            x0, x1 = a[ra + i, ka + kk], a[ra + i, ka + kk + 1]
            x2, x3 = a[ra + i, ka + kk + 2], a[ra + i, ka + kk + 3]
            for j in range(nr):
                c[rc + i, j] += x0 * b[kk, j] + x1 * b[kk + 1, j] + x2 * b[kk + 2, j] + x3 * b[kk + 3, j]
    for kk in range(k4, kc):
        for i in range(4):
            x = a[ra + i, ka + kk]
            for j in range(nr):
                c[rc + i, j] += x * b[kk, j]


def _max_in_product(shape):
    """Whether the S product of this path takes the max of its rows (PRODUCT_MAX): every path
    but "loops", which stays the kernel before the intrinsic."""


@overload(_max_in_product)
def _overload_max_in_product(shape):
    in_product = not shape.loops
    return lambda shape: in_product


def _tile_product(a, ra, ka, b, c, rc, kc, column, mode, shape):
    """c[rc:rc+mr] = (column * c[rc:rc+mr] if mode is PRODUCT_RESCALE else 0) + a[ra:ra+mr, ka:ka+kc] @ b[:kc],
    by path; with PRODUCT_MAX also column = max(column, those rows of c)."""


# inline: all three bodies in the caller, since a call costs more
@overload(_tile_product, jit_options={"fastmath": FASTMATH}, inline="always")
def _overload_tile_product(a, ra, ka, b, c, rc, kc, column, mode, shape):
    if shape.loops:
        def loops(a, ra, ka, b, c, rc, kc, column, mode, shape):
            _product_loops(a, ra, ka, b, c, rc, kc, column, mode)

        return loops

    def product(a, ra, ka, b, c, rc, kc, column, mode, shape):
        if mode == PRODUCT_ZERO:
            _product_zero(a, ra, ka, b, c, rc, kc, column, shape)
        elif mode == PRODUCT_MAX:
            _product_max(a, ra, ka, b, c, rc, kc, column, shape)
        else:
            _product_rescale(a, ra, ka, b, c, rc, kc, column, shape)

    return product


_MODES = (PRODUCT_ZERO, PRODUCT_MAX, PRODUCT_RESCALE)
_dot_zero = intrinsic(_dot_typer(PRODUCT_ZERO, _MODES))
_dot_max = intrinsic(_dot_typer(PRODUCT_MAX, _MODES))
_dot_rescale = intrinsic(_dot_typer(PRODUCT_RESCALE, _MODES))


def _dot(a, ra, ka, b, c, rc, kc, column, scale, mode, shape):
    """c[rc:rc+mr] = (column * c[rc:rc+mr] if PRODUCT_RESCALE else 0) + scale * a[ra:ra+mr, ka:ka+kc] . b[:kc]
    over words of bf16 pairs (scale only for PRODUCT_ZERO and PRODUCT_MAX); PRODUCT_MAX also
    takes column = max(column, those rows of c)."""


@overload(_dot, jit_options={"fastmath": FASTMATH}, inline="always")
def _overload_dot(a, ra, ka, b, c, rc, kc, column, scale, mode, shape):
    def dot(a, ra, ka, b, c, rc, kc, column, scale, mode, shape):
        if mode == PRODUCT_ZERO:
            _dot_zero(a, ra, ka, b, c, rc, kc, column, scale, shape)
        elif mode == PRODUCT_MAX:
            _dot_max(a, ra, ka, b, c, rc, kc, column, scale, shape)
        else:
            _dot_rescale(a, ra, ka, b, c, rc, kc, column, scale, shape)

    return dot


def _softmax_codegen(context, builder, signature, args):
    """The online-softmax step of a panel, in vector registers (see _softmax_tile)."""
    s_ty, rows_ty, max_rows_ty, m_ty, l_ty, shift_ty, alpha_ty, shape = signature.args
    s, rows, max_rows, m, l, shift, alpha, _ = args
    x = _VectorIR(context, builder, s_ty.dtype, shape)
    s, m, l, shift, alpha = (context.make_array(t)(context, builder, value) for t, value in
                             ((s_ty, s), (m_ty, m), (l_ty, l), (shift_ty, shift), (alpha_ty, alpha)))
    rows, max_rows = (context.cast(builder, value, t, types.intp) for t, value in
                      ((rows_ty, rows), (max_rows_ty, max_rows)))
    s_row = cgutils.unpack_tuple(builder, s.strides)[0]
    nv = shape.nv
    m_old = [x.load(m.data, v) for v in range(nv)]
    running = [cgutils.alloca_once(builder, x.vector) for _ in range(nv)]
    for v in range(nv):
        builder.store(x.load(shift.data, v), running[v])
    with cgutils.for_range(builder, max_rows) as loop:  # the new max
        row = x.at(s.data, builder.mul(loop.index, s_row))
        for v in range(nv):
            builder.store(x.maximum(x.load(row, v), builder.load(running[v])), running[v])
    zero, minus_inf = x.constant(0.0), x.constant(float("-inf"))
    shifts = []
    for v in range(nv):
        new_max = builder.load(running[v])
        shifts.append(builder.select(builder.fcmp_ordered("==", new_max, minus_inf), zero, new_max))
        factor = x.exp2(builder.fsub(m_old[v], shifts[v]))
        x.store(new_max, m.data, v)
        x.store(shifts[v], shift.data, v)
        x.store(factor, alpha.data, v)
        builder.store(builder.fmul(x.load(l.data, v), factor), running[v])  # running now holds l
    with cgutils.for_range(builder, rows) as loop:  # weights and their sum
        row = x.at(s.data, builder.mul(loop.index, s_row))
        for v in range(nv):
            p = x.exp2(builder.fsub(x.load(row, v), shifts[v]))
            if shape.bf16:  # bfloat16 products: the weights rounded, and l sums what V^T P will use
                p = round_vector(builder, p)
            x.store(p, row, v)
            builder.store(builder.fadd(builder.load(running[v]), p), running[v])
    for v in range(nv):
        x.store(builder.load(running[v]), l.data, v)
    return context.get_dummy_value()


@intrinsic
def _softmax_vectors(typingctx, s, rows, max_rows, m, l, shift, alpha, shape):
    arrays = (s, m, l, shift, alpha)
    if not (isinstance(shape, _TileShapeType)
            and all(isinstance(a, types.Array) and a.layout == "C" for a in arrays)
            and isinstance(rows, types.Integer) and isinstance(max_rows, types.Integer)
            and len({a.dtype for a in arrays}) == 1):
        return None
    return types.void(s, rows, max_rows, m, l, shift, alpha, shape), _softmax_codegen


@_jit
def _softmax_loops(s, rows, max_rows, m, l, shift, alpha, rounded):
    """The same step as plain Numba loops (LLVM vectorises them at its preferred width);
    rounded: the weights rounded to bfloat16 before they are summed (bf16.py)."""
    nr = s.shape[1]
    for j in range(max_rows):
        for i in range(nr):
            shift[i] = max(shift[i], s[j, i])
    for i in range(nr):
        new_max = shift[i]
        shift[i] = 0 if new_max == -np.inf else new_max
        alpha[i] = _exp2(m[i] - shift[i])
        m[i] = new_max
        l[i] *= alpha[i]
    for j in range(rows):
        for i in range(nr):
            s[j, i] = _exp2(s[j, i] - shift[i])
        if rounded:
            _round_row(s[j])
        for i in range(nr):
            l[i] += s[j, i]


def _softmax_tile(s, rows, max_rows, m, l, shift, alpha, shape):
    """One key tile of the online softmax for a panel. On entry shift holds the max so far (m,
    or m and the rows whose max the S product took); the first max_rows rows of s are added
    to it. Then m = that max, alpha = 2^(m_old - m), s = 2^(s - m) for all rows, l = alpha l +
    the column sums of s, and shift = m (with 0 where m is -inf)."""


@overload(_softmax_tile, jit_options={"fastmath": FASTMATH})
def _overload_softmax_tile(s, rows, max_rows, m, l, shift, alpha, shape):
    if shape.loops:
        rounded = shape.bf16 is not None

        def loops(s, rows, max_rows, m, l, shift, alpha, shape):
            _softmax_loops(s, rows, max_rows, m, l, shift, alpha, rounded)

        return loops

    def vectors(s, rows, max_rows, m, l, shift, alpha, shape):
        _softmax_vectors(s, rows, max_rows, m, l, shift, alpha, shape)

    return vectors
