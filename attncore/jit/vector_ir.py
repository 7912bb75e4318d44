"""LLVM vector IR for the micro-kernels: each IR builder call as a named operation (load,
store, broadcast, fma, maximum, exp2) on <lanes x float> vectors of one TileShape.

The AVX-512 instructions vscalefps and vreduceps are emitted only when host_features
(what Numba compiles for) has them.
"""
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils

from .exponential import EXP2_COEFFICIENTS
from .isa import host_features


class _VectorIR:
    """LLVM vector IR for one dtype and TileShape: loads, stores, fma, and exp2 of a vector."""

    def __init__(self, context, builder, dtype, shape):
        self.builder, self.shape = builder, shape
        self.itemsize, self.bitwidth = dtype.bitwidth // 8, dtype.bitwidth
        self.lanes = shape.bits // dtype.bitwidth
        self.intp = context.get_value_type(types.intp)
        self.scalar = context.get_value_type(dtype)
        self.vector = ir.VectorType(self.scalar, self.lanes)
        suffix = f"v{self.lanes}f{self.bitwidth}"
        module = builder.module
        self._fma = cgutils.get_or_insert_function(
            module, ir.FunctionType(self.vector, [self.vector] * 3), f"llvm.fma.{suffix}")
        self._floor = cgutils.get_or_insert_function(
            module, ir.FunctionType(self.vector, [self.vector]), f"llvm.floor.{suffix}")
        self._scalef = self._reduce = None
        features = host_features() if shape.bits == 512 else {}
        letter, mask, i32 = "s" if self.bitwidth == 32 else "d", ir.IntType(self.lanes), ir.IntType(32)
        if features.get("avx512f"):  # p * 2^floor(n) in one instruction
            self._scalef = cgutils.get_or_insert_function(
                module, ir.FunctionType(self.vector, [self.vector] * 3 + [mask, i32]),
                f"llvm.x86.avx512.mask.scalef.p{letter}.512")
        if features.get("avx512f") and features.get("avx512dq"):  # x - floor(x) in one instruction
            self._reduce = cgutils.get_or_insert_function(
                module, ir.FunctionType(self.vector, [self.vector, i32, self.vector, mask, i32]),
                f"llvm.x86.avx512.mask.reduce.p{letter}.512")

    def constant(self, value):
        return ir.Constant(self.vector, [ir.Constant(self.scalar, value)] * self.lanes)

    def at(self, pointer, offset):
        """pointer + offset bytes (offset an intp value or a Python int)."""
        offset = self.intp(offset) if isinstance(offset, int) else offset
        byte_ptr = ir.IntType(8).as_pointer()
        return self.builder.gep(self.builder.bitcast(pointer, byte_ptr), [offset])

    def pointer(self, pointer, v):
        """The address of the v-th vector from pointer."""
        return self.builder.bitcast(self.at(pointer, v * self.lanes * self.itemsize), self.vector.as_pointer())

    def load(self, pointer, v=0):
        return self.builder.load(self.pointer(pointer, v), align=self.itemsize)

    def store(self, value, pointer, v=0):
        self.builder.store(value, self.pointer(pointer, v), align=self.itemsize)

    def broadcast(self, pointer):
        """The scalar at pointer, in every lane."""
        b = self.builder
        x = b.load(b.bitcast(pointer, self.scalar.as_pointer()))
        undefined = ir.Constant(self.vector, ir.Undefined)
        lane0 = b.insert_element(undefined, x, self.intp(0))
        return b.shuffle_vector(lane0, undefined, ir.Constant(ir.VectorType(ir.IntType(32), self.lanes), None))

    def fma(self, x, y, z):
        """x * y + z: llvm.fma, or fmul and fadd that LLVM fuses where the target can."""
        if self.shape.fma:
            return self.builder.call(self._fma, [x, y, z])
        b = self.builder
        return b.fadd(b.fmul(x, y, flags=("contract",)), z, flags=("contract",))

    def maximum(self, x, y):
        return self.builder.select(self.builder.fcmp_ordered(">", x, y), x, y)

    def exp2(self, x):
        """2^x for x <= 0 (or -inf), as _exp2: n = floor(x), r = x - n, polynomial, 2^n; 0 below
        the normal range (denormal weights would make the products slow).

        With AVX-512, vreduceps gives r and vscalefps multiplies by 2^floor(x) itself; else
        2^n comes from exponent bits."""
        b = self.builder
        info = np.finfo(np.float32 if self.bitwidth == 32 else np.float64)
        lowest = self.constant(float(info.minexp))
        normal = b.fcmp_ordered(">=", x, lowest)  # false for -inf
        all_lanes = ir.Constant(ir.IntType(self.lanes), (1 << self.lanes) - 1)
        current_rounding = ir.Constant(ir.IntType(32), 4)  # _MM_FROUND_CUR_DIRECTION
        if not self._scalef:  # exponent bits need a finite n; the masked vscalefps zeroes any lane
            x = self.maximum(x, lowest)
        # with _reduce, n = x unfloored: vscalefps floors it itself (_reduce is only set with _scalef)
        if self._reduce:  # imm8 9: keep no fraction bits, round down, no precision exception
            n, r = x, b.call(self._reduce, [x, ir.Constant(ir.IntType(32), 9), x, all_lanes, current_rounding])
        else:
            n = b.call(self._floor, [x])
            r = b.fsub(x, n)  # exact, 0 <= r < 1
        coefficients = EXP2_COEFFICIENTS["float32" if self.bitwidth == 32 else "float64"]
        p = self.constant(coefficients[0])
        for c in coefficients[1:]:
            p = self.fma(p, r, self.constant(c))
        if self._scalef:
            power = b.call(self._scalef, [p, n, p, all_lanes, current_rounding])
        else:
            integers = ir.VectorType(ir.IntType(self.bitwidth), self.lanes)
            bits = b.fptosi(b.fadd(n, self.constant(float(info.maxexp - 1))), integers)
            mantissa_bits = ir.Constant(ir.IntType(self.bitwidth), info.nmant)
            bits = b.shl(bits, ir.Constant(integers, [mantissa_bits] * self.lanes))
            power = b.fmul(p, b.bitcast(bits, self.vector))
        return b.select(normal, power, self.constant(0.0))


class _TileBlock(NamedTuple):
    """The operands of one micro-kernel call in IR: b and column as arrays, the pointers to
    a's mr rows at column ka and to c's mr rows from rc, and the mr x nv accumulators."""
    b: object
    b_row: object
    column: object
    a_rows: list
    a_col: object
    c_rows: list
    acc: list


def tile_block(x, context, builder, signature, args, rescale):
    """_TileBlock of a micro-kernel whose first eight arguments are (a, ra, ka, b, c, rc, kc,
    column); the accumulators start at column * c (rescale) or 0. Also returns kc as intp."""
    a_ty, ra_ty, ka_ty, b_ty, c_ty, rc_ty, kc_ty, column_ty = signature.args[:8]
    a, ra, ka, b, c, rc, kc, column = args[:8]
    mr, nv = x.shape.mr, x.shape.nv
    a, b, c, column = (context.make_array(t)(context, builder, value) for t, value in
                       ((a_ty, a), (b_ty, b), (c_ty, c), (column_ty, column)))
    ra, ka, rc, kc = (context.cast(builder, value, t, types.intp) for t, value in
                      ((ra_ty, ra), (ka_ty, ka), (rc_ty, rc), (kc_ty, kc)))
    a_row, a_col = cgutils.unpack_tuple(builder, a.strides)
    b_row = cgutils.unpack_tuple(builder, b.strides)[0]
    c_row = cgutils.unpack_tuple(builder, c.strides)[0]
    a_base = x.at(a.data, builder.add(builder.mul(ra, a_row), builder.mul(ka, a_col)))
    a_rows = [x.at(a_base, builder.mul(x.intp(i), a_row)) for i in range(mr)]
    c_rows = [x.at(c.data, builder.mul(builder.add(rc, x.intp(i)), c_row)) for i in range(mr)]
    # the accumulators: allocas that LLVM's mem2reg turns into registers
    acc = [[cgutils.alloca_once(builder, x.vector) for _ in range(nv)] for _ in range(mr)]
    scales = [x.load(column.data, v) for v in range(nv)] if rescale else None
    for i in range(mr):
        for v in range(nv):
            start = builder.fmul(x.load(c_rows[i], v), scales[v]) if scales else x.constant(0.0)
            builder.store(start, acc[i][v])
    return _TileBlock(b, b_row, column, a_rows, a_col, c_rows, acc), kc


def store_tile(x, block, results, update_max):
    """Store the mr x nv result vectors into c's rows; update_max: also column = max(column,
    the new rows), lane by lane, while they are still in registers (no pass over c)."""
    for i, row in enumerate(results):
        for v, result in enumerate(row):
            x.store(result, block.c_rows[i], v)
    if update_max:
        for v in range(len(results[0])):
            top = x.load(block.column.data, v)
            for row in results:
                top = x.maximum(row[v], top)
            x.store(top, block.column.data, v)
