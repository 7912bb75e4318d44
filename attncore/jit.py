"""FlashAttention and the online softmax as Numba kernels (optional: attncore[jit]).

Same algorithm and results as attncore.flash (read that first), compiled.
What makes it fast on a CPU:

* Transposed panels. A task owns a block of queries and walks it in panels of
  NR queries (NR a multiple of the machine's vector width). A panel is held as
  qT (d, NR), so scores, weights and the output accumulator are (keys, NR) and
  (d_v, NR): every vector runs along queries, and the running max and sum of
  the online softmax are lane-wise updates, with no horizontal reductions.
  Queries past a block's last full panel that fit in one vector run on the
  micro-kernel one vector wide (TileShape.narrow), not in a padded panel.
* A register-resident micro-kernel for both tile products, S = K qT and
  acc = alpha * acc + V^T P. It is a Numba @intrinsic that emits LLVM vector IR:
  an MR x NR block of the result lives in MR * NR / lanes vector registers for
  the whole reduction (llvm.fma on <lanes x float>, one scalar of the left
  factor broadcast per row), and is stored once at the end. Plain Numba loops
  cannot do this: arrays are not marked noalias, so LLVM must load and store
  the output around every multiply-add (the "loops" path keeps that version,
  for comparison). The rescaling of the accumulator by alpha happens in the
  product's first step; S needs no zeroing pass, and on a tile with no masked
  score the S product also takes the running max of its rows while they are
  still in registers, so the softmax step reads each score once.
* exp2 instead of exp: log2(e) is folded into the query scale, so a weight is
  2^(s - m): n = floor(x), r = x - n in [0, 1), 2^r by a degree-5 polynomial
  (float32; Taylor to degree 16 in float64) with value exactly 1 at r = 0, times
  2^n. With AVX-512 each step is one instruction: vreduceps returns r and
  vscalefps multiplies by 2^floor(x); elsewhere 2^n is built from exponent bits.
  Weights below the normal range are 0, and 2^-inf = 0.
  The log-sum-exp is m ln 2 + log l.
* Key tiles of 128; with causal, tiles entirely above the diagonal are skipped
  per panel. Tasks (batch entry, query block) come from a shared atomic counter:
  a thread takes the next task when it finishes one, so a core that runs slower
  (on a shared machine one often does) simply does fewer. The blocks shrink
  along the queue (default_blocks: up to 12 panels first, one panel at the
  end; with causal the queue starts at the last query), so the small ones fill
  in at the end.

The micro-kernel's shape follows the CPU features Numba compiles for (host_features:
the host's, minus AVX when Numba turns it off, e.g. NUMBA_ENABLE_AVX=0; a path slower
than the CPU could run comes with a RuntimeWarning and kernel_info()["note"]):
"avx512" (16 float32 lanes, 8 x 48 block: 24 of the 32 zmm registers), "avx2"
(8 lanes, 4 x 24: 12 of 16 ymm), "portable" (4 lanes, 4 x 8, fused only where
the target has FMA: SSE2, NEON, anything LLVM targets) and "loops" (plain Numba
loops, the kernel before the intrinsic). flash_attention(path=...) or the
environment variable ATTNCORE_JIT_PATH forces one; every path runs anywhere
(LLVM lowers wider vectors to what the CPU has), only slower off its own CPU.

Of the fast-math flags only `contract` (fused multiply-add) is on, and `reassoc`
for the sums in `softmax`: -inf marks masked scores, so no-inf or no-NaN
assumptions would be wrong here.

Kernels are compiled with cache=True (a second process loads the machine code
from __pycache__ or NUMBA_CACHE_DIR; each path is its own signature) and
parallel=True, with prange over (batch * heads) x query blocks;
NUMBA_NUM_THREADS sets the thread count. Everything that shapes the machine
code lives in this one file: Numba's cache checks only the file that defines
a kernel.
"""
import functools
import heapq
import math
import os
import platform
import warnings
from typing import NamedTuple

try:
    import numba
except ImportError as error:
    raise ImportError("attncore.jit needs Numba: pip install attncore[jit]") from error
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import NativeValue, intrinsic, models, overload, register_model, typeof_impl, unbox

from ._checks import (as_float_array, causal_allowed, causal_offset, check_qkv, positive_int, prepare_attention,
                      require_ndim, scores, value_headroom)

FASTMATH = {"contract"}
_jit = numba.njit(cache=True, fastmath=FASTMATH)
_parallel_jit = numba.njit(cache=True, fastmath=FASTMATH, parallel=True)
LOG2E = 1 / math.log(2)
LN2 = math.log(2)


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
    log2e, half, bias = f(LOG2E), f(0.5), f(np.finfo(f).maxexp - 1)
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

# 2^r = 1 + r (c1 + r (c2 + ...)) on [0, 1), highest degree first. float32: relative error
# 8.2e-8 in exact arithmetic (a minimax fit with the value 1 at r = 0, Lawson's iterations),
# 1.5e-7 evaluated in float32. float64: Taylor to degree 16.
EXP2_COEFFICIENTS = {
    "float32": (1.867130250881922e-3, 9.017029939492865e-3, 5.5799913377253575e-2,
                2.4016445008018833e-1, 6.931513118107434e-1, 1.0),
    "float64": tuple(LN2**k / math.factorial(k) for k in range(16, -1, -1)),
}


def _exp2_for(float_type, int_type, mantissa_bits, coefficients):
    """2^x for one float type: floor, a polynomial, exponent bits; vectorises in a loop."""
    f = float_type
    info = np.finfo(f)
    bias, shift = f(info.maxexp - 1), f(2.0**mantissa_bits)
    lo, hi = f(-(info.maxexp - 1)), f(info.maxexp)  # 2^lo builds the bits of 0.0, 2^hi those of inf
    c = tuple(f(x) for x in coefficients)

    def exp2(x):
        x = min(max(x, lo), hi)  # -inf -> lo -> exactly 0
        n = np.floor(x)
        r = x - n  # exact, 0 <= r < 1
        p = c[0]
        for coefficient in c[1:]:
            p = p * r + coefficient
        return p * _float_from_bits(int_type((n + bias) * shift))

    return exp2


_EXP2 = {
    types.float32: _exp2_for(np.float32, np.int32, 23, EXP2_COEFFICIENTS["float32"]),
    types.float64: _exp2_for(np.float64, np.int64, 52, EXP2_COEFFICIENTS["float64"]),
}


def _exp(x):
    """exp of a float32 or float64 scalar, for use inside kernels (implemented by _EXP)."""


def _exp2(x):
    """2^x of a float32 or float64 scalar, for use inside kernels (implemented by _EXP2)."""


@overload(_exp, jit_options={"fastmath": FASTMATH})
def _overload_exp(x):
    return _EXP.get(x)


@overload(_exp2, jit_options={"fastmath": FASTMATH})
def _overload_exp2(x):
    return _EXP2.get(x)


# The same functions under public names, for use inside a Numba function of your own.
exp_scalar, exp2_scalar = _exp, _exp2


@_jit
def _exp_into(x, out):
    for i in range(x.size):
        out[i] = _exp(x[i])


@_jit
def _exp2_into(x, out):
    for i in range(x.size):
        out[i] = _exp2(x[i])


def _elementwise(kernel, x):
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"x must be a float32 or float64 array, got dtype {x.dtype}")
    flat = np.require(x, requirements="CW").reshape(-1)
    out = np.empty_like(flat)
    kernel(flat, out)
    return out.reshape(x.shape)


def exp(x):
    """The vectorised exp of jit.softmax, for a float32 or float64 array: within 1 ulp, same shape and dtype."""
    return _elementwise(_exp_into, x)


def exp2(x):
    """The attention kernel's vectorised 2^x of a float32 or float64 array, same shape and dtype.

    Relative error below 2e-7 (float32) or 3e-16 (float64) where the result is normal;
    results below the normal range are 0, 2^-inf = 0, 2^x overflows to inf.
    """
    return _elementwise(_exp2_into, x)


# ------------------------------------------------------- micro-kernel shapes

class TileShape:
    """The shape of the tile-product micro-kernel for one kind of CPU.

    bits: vector register width; mr x nv: the result block, mr rows by nv vectors
    (mr * nv accumulators); fma: emit llvm.fma (else fmul and fadd that LLVM may
    contract); loops: plain Numba loops instead of the intrinsic.
    """

    def __init__(self, name, bits, mr, nv, fma=True, loops=False):
        self.name, self.bits, self.mr, self.nv, self.fma, self.loops = name, bits, mr, nv, fma, loops

    def lanes(self, itemsize):
        return self.bits // (8 * itemsize)

    def nr(self, itemsize):
        """Queries per panel: the result block's width in elements."""
        return self.nv * self.lanes(itemsize)

    @functools.cached_property
    def narrow(self):
        """The same micro-kernel one vector wide, for the queries of a block past its last full panel
        when they fit in one vector (the plain loops keep their width)."""
        return self if self.loops else TileShape(self.name, self.bits, self.mr, 1, self.fma)

    def __repr__(self):
        return f"TileShape({self.name!r}, {self.bits} bits, {self.mr} x {self.nv} vectors)"


PATHS = {
    # 24 accumulators + 3 vectors of b + 1 broadcast = 28 of 32 zmm registers
    "avx512": TileShape("avx512", 512, 8, 3),
    # 12 accumulators + 3 + 1 = 16 ymm registers: all of them, none spilled
    "avx2": TileShape("avx2", 256, 4, 3),
    # 8 accumulators in 128-bit registers: SSE2 has 16, NEON 32
    "portable": TileShape("portable", 128, 4, 2, fma=False),
    # plain Numba loops (the kernel before the intrinsic): 4-row blocks, panels of 528 float32
    "loops": TileShape("loops", 512, 4, 33, loops=True),
}
ENV_PATH = "ATTNCORE_JIT_PATH"


def host_features():
    """The CPU features that Numba compiles for, {name: enabled}: its JIT codegen's feature
    string, which is NUMBA_CPU_FEATURES if set ("" for NUMBA_CPU_NAME=generic), else the
    host's with every avx* feature off when AVX is disabled (NUMBA_ENABLE_AVX=0, or
    Numba's default on CPU names such as sandybridge and nocona). Emitting an instruction
    outside them aborts the process in LLVM, so the paths and intrinsics follow these."""
    from numba.core.registry import cpu_target

    text = cpu_target.target_context.codegen()._tm_features  # what the target machine was made with
    return {f[1:]: f[0] == "+" for f in text.split(",") if f}


def _cpu_features():
    """The features the CPU itself reports (llvmlite), whatever Numba compiles for; {} if unknown."""
    from llvmlite import binding

    try:
        return dict(binding.get_host_cpu_features())
    except RuntimeError:
        return {}


def host_path(features=None):
    """The path this CPU should run: avx512, avx2 (with FMA) or portable."""
    if features is None:
        return _host_path()
    if features.get("avx512f"):
        return "avx512"
    if features.get("avx2") and features.get("fma"):
        return "avx2"
    return "portable"


@functools.cache
def _host_path():
    path = host_path(host_features())
    note = _slower_path_note(path)
    if note:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    return path


def _slower_path_note(path):
    """Why `path` (what Numba's target allows) is not the path the CPU could run; None when it is."""
    cpu_path = host_path(_cpu_features())
    if cpu_path == path:
        return None
    return (f"attncore.jit runs the {path!r} path, not {cpu_path!r}: Numba compiles without some features "
            f"this CPU has (NUMBA_ENABLE_AVX=0, NUMBA_CPU_NAME or NUMBA_CPU_FEATURES, or Numba's default "
            f"for this CPU name). Results are the same, only slower.")


def _resolve_path(path):
    path = path or os.environ.get(ENV_PATH) or host_path()
    if path not in PATHS:
        raise ValueError(f"path must be one of {sorted(PATHS)} (or None: {host_path()} here), got {path!r}")
    return path


class _TileShapeType(types.Dummy):
    """The Numba type of a TileShape: the shape is part of the type, so each path compiles
    (and caches) its own specialisation, with mr, nr and the vector width as constants."""

    def __init__(self, name, bits, mr, nv, fma, loops):
        self.bits, self.mr, self.nv, self.fma, self.loops = bits, mr, nv, fma, loops
        super().__init__(name=f"TileShape({name}, {bits}, {mr}, {nv}, {fma}, {loops})")


@typeof_impl.register(TileShape)
def _typeof_tile_shape(value, context):
    return _tile_shape_type(value.name, value.bits, value.mr, value.nv, value.fma, value.loops)


@functools.cache
def _tile_shape_type(*fields):
    """The Numba type of a TileShape, made once: typing an argument is part of every call."""
    return _TileShapeType(*fields)


register_model(_TileShapeType)(models.OpaqueModel)


@unbox(_TileShapeType)
def _unbox_tile_shape(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


def _tile_rows(shape):
    """mr of a TileShape, a compile-time constant inside kernels."""


def _tile_cols(shape, x):
    """nr of a TileShape for the dtype of array x, a compile-time constant inside kernels."""


@overload(_tile_rows)
def _overload_tile_rows(shape):
    mr = shape.mr
    return lambda shape: mr


@overload(_tile_cols)
def _overload_tile_cols(shape, x):
    nr = shape.nv * shape.bits // x.dtype.bitwidth
    return lambda shape, x: nr


# ------------------------------------------------------------- the intrinsic

PRODUCT_ZERO, PRODUCT_MAX, PRODUCT_RESCALE = 0, 1, 2  # the modes of _tile_product


def _product_codegen(mode, context, builder, signature, args):
    """c[rc:rc+mr, :nr] = (column * c if PRODUCT_RESCALE else 0) + a[ra:ra+mr, ka:ka+kc] @ b[:kc, :nr];
    with PRODUCT_MAX also column = max(column, the new rows of c), lane by lane."""
    a_ty, _, _, b_ty, c_ty, _, _, column_ty, shape = signature.args
    x = _VectorIR(context, builder, a_ty.dtype, shape)
    mr, nv = shape.mr, shape.nv
    a, b, c, column = (context.make_array(t)(context, builder, v) for t, v in
                       zip((a_ty, b_ty, c_ty, column_ty), (args[0], args[3], args[4], args[7])))
    ra, ka, rc, kc = (context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2, 5, 6))
    a_row, a_col = cgutils.unpack_tuple(builder, a.strides)
    b_row = cgutils.unpack_tuple(builder, b.strides)[0]
    c_row = cgutils.unpack_tuple(builder, c.strides)[0]
    a_base = x.at(a.data, builder.add(builder.mul(ra, a_row), builder.mul(ka, a_col)))
    a_rows = [x.at(a_base, builder.mul(x.intp(i), a_row)) for i in range(mr)]
    c_rows = [x.at(c.data, builder.mul(builder.add(rc, x.intp(i)), c_row)) for i in range(mr)]
    # the accumulators: allocas that LLVM's mem2reg turns into registers
    acc = [[cgutils.alloca_once(builder, x.vector) for _ in range(nv)] for _ in range(mr)]
    scales = [x.load(column.data, v) for v in range(nv)] if mode == PRODUCT_RESCALE else None
    for i in range(mr):
        for v in range(nv):
            start = builder.fmul(x.load(c_rows[i], v), scales[v]) if scales else x.constant(0.0)
            builder.store(start, acc[i][v])
    with cgutils.for_range(builder, kc) as loop:
        b_k = x.at(b.data, builder.mul(loop.index, b_row))
        b_vectors = [x.load(b_k, v) for v in range(nv)]
        a_k = builder.mul(loop.index, a_col)
        for i in range(mr):
            a_ik = x.broadcast(x.at(a_rows[i], a_k))
            for v in range(nv):
                builder.store(x.fma(a_ik, b_vectors[v], builder.load(acc[i][v])), acc[i][v])
    results = [[builder.load(acc[i][v]) for v in range(nv)] for i in range(mr)]
    for i in range(mr):
        for v in range(nv):
            x.store(results[i][v], c_rows[i], v)
    if mode == PRODUCT_MAX:  # the new rows are still in registers: no pass over c for the max
        for v in range(nv):
            top = x.load(column.data, v)
            for i in range(mr):
                top = x.maximum(results[i][v], top)
            x.store(top, column.data, v)
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


@overload(_tile_product, jit_options={"fastmath": FASTMATH}, inline="always")  # all three bodies in the caller: a call costs more
def _overload_tile_product(a, ra, ka, b, c, rc, kc, column, mode, shape):
    if shape.loops:
        return lambda a, ra, ka, b, c, rc, kc, column, mode, shape: _product_loops(a, ra, ka, b, c, rc, kc, column, mode)

    def product(a, ra, ka, b, c, rc, kc, column, mode, shape):
        if mode == PRODUCT_ZERO:
            _product_zero(a, ra, ka, b, c, rc, kc, column, shape)
        elif mode == PRODUCT_MAX:
            _product_max(a, ra, ka, b, c, rc, kc, column, shape)
        else:
            _product_rescale(a, ra, ka, b, c, rc, kc, column, shape)

    return product


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
        self._fma = cgutils.get_or_insert_function(module, ir.FunctionType(self.vector, [self.vector] * 3), f"llvm.fma.{suffix}")
        self._floor = cgutils.get_or_insert_function(module, ir.FunctionType(self.vector, [self.vector]), f"llvm.floor.{suffix}")
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
            bits = b.shl(bits, ir.Constant(integers, [ir.Constant(ir.IntType(self.bitwidth), info.nmant)] * self.lanes))
            power = b.fmul(p, b.bitcast(bits, self.vector))
        return b.select(normal, power, self.constant(0.0))


def _softmax_codegen(context, builder, signature, args):
    """The online-softmax step of a panel, in vector registers (see _softmax_tile)."""
    s_ty, _, _, m_ty, l_ty, shift_ty, alpha_ty, shape = signature.args
    x = _VectorIR(context, builder, s_ty.dtype, shape)
    s, m, l, shift, alpha = (context.make_array(t)(context, builder, a) for t, a in
                             zip((s_ty, m_ty, l_ty, shift_ty, alpha_ty), (args[0], *args[3:7])))
    rows, max_rows = (context.cast(builder, args[i], signature.args[i], types.intp) for i in (1, 2))
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
            x.store(p, row, v)
            builder.store(builder.fadd(builder.load(running[v]), p), running[v])
    for v in range(nv):
        x.store(builder.load(running[v]), l.data, v)
    return context.get_dummy_value()


@intrinsic
def _softmax_vectors(typingctx, s, rows, max_rows, m, l, shift, alpha, shape):
    arrays = (s, m, l, shift, alpha)
    if not (isinstance(shape, _TileShapeType) and all(isinstance(a, types.Array) and a.layout == "C" for a in arrays)
            and isinstance(rows, types.Integer) and isinstance(max_rows, types.Integer)
            and len({a.dtype for a in arrays}) == 1):
        return None
    return types.void(s, rows, max_rows, m, l, shift, alpha, shape), _softmax_codegen


@_jit
def _softmax_loops(s, rows, max_rows, m, l, shift, alpha):
    """The same step as plain Numba loops (LLVM vectorises them at its preferred width)."""
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
            p = _exp2(s[j, i] - shift[i])
            s[j, i] = p
            l[i] += p


def _softmax_tile(s, rows, max_rows, m, l, shift, alpha, shape):
    """One key tile of the online softmax for a panel. On entry shift holds the max so far (m,
    or m and the rows whose max the S product took); the first max_rows rows of s are added
    to it. Then m = that max, alpha = 2^(m_old - m), s = 2^(s - m) for all rows, l = alpha l +
    the column sums of s, and shift = m (with 0 where m is -inf)."""


@overload(_softmax_tile, jit_options={"fastmath": FASTMATH})
def _overload_softmax_tile(s, rows, max_rows, m, l, shift, alpha, shape):
    if shape.loops:
        return lambda s, rows, max_rows, m, l, shift, alpha, shape: _softmax_loops(s, rows, max_rows, m, l, shift, alpha)
    return lambda s, rows, max_rows, m, l, shift, alpha, shape: _softmax_vectors(
        s, rows, max_rows, m, l, shift, alpha, shape)


@intrinsic
def _cycles(typingctx):
    """The CPU's cycle counter (llvm.readcyclecounter: rdtsc on x86), for the phase profile."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        counter = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, []), "llvm.readcyclecounter")
        return builder.call(counter, [])

    return types.int64(), codegen


# ------------------------------------------------------------ attention

PHASES = ("setup", "S = K qT", "causal mask", "max, exp2, sum", "acc = alpha acc + V^T P", "finish")


@_jit
def _round_up(n, multiple):
    return (n + multiple - 1) // multiple * multiple


@_jit
def _tick(profiling, cycles, phase, start):
    """Add the cycles since `start` to phase `phase` when profiling; return the new start."""
    if not profiling:
        return start
    now = _cycles()
    cycles[phase] += now - start
    return now


@_jit
def _flash_block(queries, k, v, t_k, q0, q1, scale, causal, offset, block_k, outputs, lses, shape, profiling, cycles):
    """Queries q0:q1 of queries (T_q, d) -> the same rows of outputs (T_q, d_v) and lses (T_q,).

    The block is cut into panels of nr queries; each key tile visits every panel that
    sees one of its keys, so the tile is read from memory once per block. k (T, d) holds
    t_k keys, zero-padded so that every tile's rows round up to mr; v (T, d_vp) has d_vp
    a multiple of mr. Scores are in log2 units (scale holds log2 e).
    """
    q, out, lse = queries[q0:q1], outputs[q0:q1], lses[q0:q1]
    rows, d, dtype = q.shape[0], q.shape[1], q.dtype
    mr, nr = _tile_rows(shape), _tile_cols(shape, q)
    d_v, d_vp = out.shape[1], v.shape[1]
    panels = (rows + nr - 1) // nr
    v_t = v.T
    q_t = np.zeros((panels, d, nr), dtype)  # scaled queries, transposed, panel by panel
    acc_t = np.zeros((panels, d_vp, nr), dtype)  # running outputs, transposed
    m = np.full((panels, nr), -np.inf, dtype)  # running max per query (log2 units)
    l = np.zeros((panels, nr), dtype)  # running sum of 2^(s - m)
    s_t = np.empty((_round_up(min(block_k, t_k), mr), nr), dtype)  # a tile's scores, then weights
    shift = np.empty(nr, dtype)  # the max so far in a tile, then the new max with 0 where it is -inf
    alpha = np.empty(nr, dtype)  # 2^(old max - new max)
    minus_inf = dtype.type(-np.inf)
    start = _cycles() if profiling else 0
    for i in range(rows):
        for c in range(d):
            q_t[i // nr, c, i % nr] = q[i, c] * scale
    # the last query of a block sees keys < k_end; with causal, later tiles are skipped
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    start = _tick(profiling, cycles, 0, start)
    for k0 in range(0, k_end, block_k):
        for p in range(panels):
            j0 = p * nr
            n = min(block_k, t_k - k0)
            if causal:  # keys past the panel's last query are no key of this panel
                n = min(n, q0 + min(j0 + nr, rows) + offset - k0)
            if n <= 0:
                continue
            n_pad = _round_up(n, mr)
            q_p, acc_p = q_t[p], acc_t[p]
            # padding keys, and keys k0 + j hidden from the queries q0 + j0 + i < k0 + j - offset
            masked = n < n_pad or (causal and k0 + n - 1 > q0 + j0 + offset)
            in_product = not masked and _max_in_product(shape)  # the max while the scores are in registers
            shift[:] = m[p]
            for r0 in range(0, n_pad, mr):
                _tile_product(k, k0 + r0, 0, q_p, s_t, r0, d, shift, PRODUCT_MAX if in_product else PRODUCT_ZERO, shape)
            start = _tick(profiling, cycles, 1, start)
            if masked:
                for j in range(n_pad):
                    cut = nr if j >= n else (max(0, min(nr, k0 + j - offset - q0 - j0)) if causal else 0)
                    s_t[j, :cut] = minus_inf
            start = _tick(profiling, cycles, 2, start)
            _softmax_tile(s_t, n_pad, 0 if in_product else n_pad, m[p], l[p], shift, alpha, shape)
            start = _tick(profiling, cycles, 3, start)
            for r0 in range(0, d_vp, mr):
                _tile_product(v_t, r0, k0, s_t, acc_p, r0, n, alpha, PRODUCT_RESCALE, shape)
            start = _tick(profiling, cycles, 4, start)
    for i in range(rows):
        p, c0 = i // nr, i % nr
        seen = l[p, c0] > 0
        lse[i] = m[p, c0] * LN2 + np.log(l[p, c0]) if seen else -np.inf
        inverse = 1 / l[p, c0] if seen else 0  # one division per query, not per output
        for c in range(d_v):
            out[i, c] = acc_t[p, c, c0] * inverse
    _tick(profiling, cycles, 5, start)


@intrinsic
def _take_next(typingctx, counter):
    """Atomically add 1 to counter[0] and return its old value: a shared queue of task numbers."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64 and counter.ndim == 1):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", data, ir.Constant(ir.IntType(64), 1), "monotonic")

    return types.int64(counter), codegen


@_jit
def _share_sum_of_differences(x, part, parts):
    """_sum_of_differences of part `part` of `parts` equal slices of the entries of x (C-contiguous)."""
    flat = x.reshape(x.size)
    size = (flat.size + parts - 1) // parts
    return _sum_of_differences(flat[part * size:(part + 1) * size])


@_parallel_jit
def _flash(q, k, v, q_index, k_index, v_index, t_k, scale, causal, offset, starts, block_k, out, lse,
           shape, narrow, threads, profiling, cycles):
    """Tasks (batch entry, query block) from a shared counter; batch b reads q[q_index[b]], k[k_index[b]], v[v_index[b]].

    Block i holds queries starts[i]:starts[i + 1]. Each thread takes the next task when it
    finishes one, so a thread on a slower or busier core simply does fewer. With causal the
    blocks go from the last (most keys) to the first. Queries past a block's last full panel
    that fit in one vector run on the narrow micro-kernel (shape.narrow) instead of a
    panel that is mostly padding.
    Each thread first sums x - x over its share of q, k and v: returns True if an entry is
    NaN or +-inf (then the results are not to be used).
    """
    n_batch, n_blocks = q_index.shape[0], starts.size - 1
    n_tasks = n_batch * n_blocks
    nr, lanes = _tile_cols(shape, q), _tile_cols(narrow, q)
    counter = np.zeros(1, np.int64)
    differences = 0.0
    for thread in prange(threads):  # one iteration per thread
        differences += (_share_sum_of_differences(q, thread, threads) + _share_sum_of_differences(k, thread, threads)
                        + _share_sum_of_differences(v, thread, threads))
        task = _take_next(counter)
        while task < n_tasks:
            rank, b = task // n_batch, task % n_batch
            block = n_blocks - 1 - rank if causal else rank
            q0, q1 = starts[block], starts[block + 1]
            rest = (q1 - q0) % nr
            split = q1 - rest if rest <= lanes < nr else q1
            q_b, k_b, v_b, out_b, lse_b = q[q_index[b]], k[k_index[b]], v[v_index[b]], out[b], lse[b]
            if split > q0:
                _flash_block(q_b, k_b, v_b, t_k, q0, split, scale, causal, offset, block_k, out_b, lse_b,
                             shape, profiling, cycles[task])
            if q1 > split:
                _flash_block(q_b, k_b, v_b, t_k, split, q1, scale, causal, offset, block_k, out_b, lse_b,
                             narrow, profiling, cycles[task])
            task = _take_next(counter)
    return differences != 0


def _compute_dtype(dtype):
    """Numba kernels run in float32 or float64; float16 is computed in float32."""
    return np.float64 if dtype == np.float64 else np.float32


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


BLOCK_K = 128  # keys per tile


def default_blocks(n_batch, t_q, causal, *, threads=None, path=None, dtype=np.float32, t_k=None):
    """The query blocks flash_attention makes when block_q is None, as (start, stop) pairs in
    the order the task queue hands them out (with causal, from the last query back).

    Guided, like OpenMP's schedule(guided): walking the panels (nr queries each) in queue
    order, a block takes panels while each of its tasks (one per batch entry) stays within
    1/(2 threads) of the work still queued when the task is taken, and at most MAX_PANELS.
    While there is plenty of work the blocks are large, so each key tile is read once for
    many panels; towards the end they shrink to one panel, so the threads end together even
    when one core runs slower or starts later. A panel's work is the keys it sees (with
    causal, up to its last query). On one thread every block but the last is MAX_PANELS panels.
    causal: False, True, "top_left" or "bottom_right"; threads: Numba's thread count if None.
    """
    threads = numba.get_num_threads() if threads is None else threads
    t_k = t_q if t_k is None else t_k
    starts = _block_starts(n_batch, t_q, t_k, causal_offset(causal, t_q, t_k), threads, _resolve_path(path),
                           np.dtype(_compute_dtype(dtype)))
    blocks = list(zip(starts[:-1], starts[1:]))
    return tuple(blocks[::-1] if causal else blocks)


@functools.lru_cache(maxsize=256)
def _block_starts(n_batch, t_q, t_k, offset, threads, path, dtype):
    """The first query of each block of default_blocks, in query order, then t_q (cached)."""
    nr = PATHS[path].nr(dtype.itemsize)
    panels = -(-t_q // nr)
    queue = range(panels - 1, -1, -1) if offset is not None else range(panels)
    work = [t_k if offset is None else min(t_k, max(0, min(t_q, (p + 1) * nr) + offset)) for p in queue]
    queued, sizes, first = n_batch * sum(work), [], 0
    while first < panels:
        # the last of the block's n_batch tasks is taken when queued - (n_batch - 1) * taken is left
        size, taken = 1, work[first]
        while (first + size < panels and size < MAX_PANELS
               and (threads == 1 or (taken + work[first + size]) * (2 * threads + n_batch - 1) <= queued)):
            taken += work[first + size]
            size += 1
        sizes.append(size)
        first, queued = first + size, queued - n_batch * taken
    starts = [0]
    for size in sizes[::-1] if offset is not None else sizes:
        starts.append(min(t_q, starts[-1] + size * nr))
    return tuple(starts)


def queue_time(work, speeds):
    """When the last of the tasks ends if each thread, as it finishes one, takes the next:
    work in queue order, speeds[t] = the work thread t does per unit of time."""
    free = [(0.0, t) for t in range(len(speeds))]
    for w in work:
        start, t = heapq.heappop(free)
        heapq.heappush(free, (start + w / speeds[t], t))
    return max(end for end, _ in free)


MAX_PANELS = 12  # a block's panel states (q_t, acc_t: 24 KiB a panel in float32) stay within a core's L2


@numba.njit(cache=True, fastmath={"reassoc"})  # reassoc only: the sum may run in vector lanes
def _sum_of_differences(x):
    """The sum of x - x over a 1-D array: 0 if every entry is finite, NaN otherwise."""
    total = x.dtype.type(0)
    for i in range(x.size):
        total += x[i] - x[i]
    return total


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
    block_k: int
    shape: TileShape
    threads: int


class _KernelArgs(NamedTuple):
    """The arguments of _flash by name, in its order (_flash(*arguments, profiling, cycles))."""
    q: np.ndarray  # (its leading dims flattened, T_q, d_k) in the kernel's float type
    k: np.ndarray  # (..., k_rows, d_k), zero-padded
    v: np.ndarray  # (..., T_k, v_cols), zero-padded
    q_index: np.ndarray  # batch entry b reads q[q_index[b]]
    k_index: np.ndarray
    v_index: np.ndarray
    t_k: int
    scale: float  # in log2 units: scale * log2(e), in the kernel's float type
    causal: bool
    offset: int  # 0 when not causal
    starts: np.ndarray
    block_k: int
    out: np.ndarray  # (batch entries, T_q, d_v), written by the kernel
    lse: np.ndarray  # (batch entries, T_q)
    shape: TileShape
    narrow: TileShape
    threads: int


def _layout(q, k, v, causal, block_q, block_k, scale, path):
    """Every check of flash_attention's arguments but finiteness, and the _Layout of the call."""
    # finiteness is left to the kernel: each thread of _flash sums x - x over its share of q, k, v
    p = prepare_attention(q, k, v, causal=causal, scale=scale, check_finite=False)
    shape = PATHS[_resolve_path(path)]
    work = _compute_dtype(p.dtype)
    if block_q is None:
        starts = _block_starts(math.prod(p.batch), p.t_q, p.t_k, p.offset, numba.get_num_threads(), shape.name,
                               np.dtype(work))
    else:
        starts = (*range(0, p.t_q, positive_int("block_q", block_q)), p.t_q)
    block_k = positive_int("block_k", block_k)
    # a key tile's rows are computed mr at a time: up to mr - 1 rows past t_k
    k_rows = _round_up(p.t_k, shape.mr) if block_k % shape.mr == 0 else p.t_k + shape.mr - 1
    return _Layout(p.batch, p.t_q, p.t_k, p.d_v, p.dtype, work, p.scale, p.offset, k_rows,
                   _round_up(p.d_v, shape.mr), tuple(_batch_index(x.shape[:-2], p.batch) for x in (p.q, p.k, p.v)),
                   np.array(starts, np.int64), block_k, shape, numba.get_num_threads())


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


def _prepare(q, k, v, causal, block_q, block_k, scale, path):
    """The kernel's _KernelArgs for a call of flash_attention, its _Layout, and the power of
    two the output is to be multiplied by (v was divided by it: value_headroom).

    The _Layout of each combination of shapes, dtypes and settings is worked out once
    and remembered, so a repeated call only reshapes its arrays and allocates the results:
    Python run right after a kernel call is slow (its caches are cold), and at N = 1024
    the checks took a tenth of the call. What depends on the values (scores that
    overflow) is checked on every call.
    """
    key = _layout_key(q, k, v, causal, block_q, block_k, scale, path)
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = _layout(q, k, v, causal, block_q, block_k, scale, path)
        if key is not None:
            if len(_LAYOUTS) >= MAX_LAYOUTS:
                _LAYOUTS.clear()
            _LAYOUTS[key] = layout
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_scores(q, k, v, layout)
    unit = value_headroom(v, layout.t_k, layout.work)  # acc sums up to T_k rows of v: keep it finite
    v = _flatten(v, layout.work, cols=layout.v_cols)
    count = layout.indices[0].size
    arguments = _KernelArgs(
        _flatten(q, layout.work), _flatten(k, layout.work, rows=layout.k_rows),
        v if unit == 1 else v / layout.work(unit), *layout.indices, layout.t_k,
        layout.work(layout.scale * LOG2E), layout.offset is not None, layout.offset or 0, layout.starts,
        layout.block_k, np.empty((count, layout.t_q, layout.d_v), layout.work),
        np.empty((count, layout.t_q), layout.work), layout.shape, layout.shape.narrow, layout.threads)
    return arguments, layout, unit


def _check_scores(q, k, v, layout, chunk=256):
    """Raise, as attention and attncore.flash_attention do, if a score overflows the kernel's
    float type (it would come back as a silent zero row: exp2 of NaN is 0 in the kernel).

    The kernel forms (scale log2(e) q) . k. Every partial sum is at most d_k max|q| max|k| in
    size, so below a quarter of the largest float nothing can overflow: one pass over q and
    k, no more. Past it (or with NaN or inf, named first) the scores are formed here, in
    blocks of queries: as the NumPy implementations form them, then in the kernel's log2 units.
    """
    if q.size == 0 or k.size == 0:
        return
    # Python floats: a product past the range is inf, with no warning
    limit, factor = float(np.finfo(layout.work).max) / 4, float(layout.scale) * LOG2E
    q_max, k_max = max(float(q.max()), -float(q.min())), max(float(k.max()), -float(k.min()))
    if factor * q_max * k_max * q.shape[-1] < limit and factor * q_max < limit:
        return
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


def _run(arguments, profiling, q, k, v):
    """Run the kernel on arguments from _prepare(q, k, v, ...); return its cycle counts.

    If it met a NaN or inf, check_qkv names the argument and the entry."""
    cycles = _cycle_counts(arguments)
    if _flash(*arguments, profiling, cycles):
        check_qkv(q, k, v)
    return cycles


def flash_attention(q, k, v, *, causal=False, block_q=None, block_k=BLOCK_K, scale=None, return_lse=False,
                    path=None):
    """attncore.flash_attention compiled: same arguments, checks and results.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v),
    with return_lse also the log-sum-exp of each scaled score row (..., T_q).
    causal: False, True (square), "top_left" or "bottom_right"; key tiles
    entirely above the diagonal are skipped. Never allocates (T_q, T_k).
    block_q: queries per block, or None for the guided blocks of default_blocks; tiles
    hold up to block_k keys.
    path: "avx512", "avx2", "portable" or "loops" forces a micro-kernel (see the
    module docstring); None takes ATTNCORE_JIT_PATH, else the host CPU's.
    """
    arguments, layout, unit = _prepare(q, k, v, causal, block_q, block_k, scale, path)
    _run(arguments, False, q, k, v)
    out, lse = arguments.out if unit == 1 else arguments.out * layout.work(unit), arguments.lse
    out = out.reshape(*layout.batch, layout.t_q, layout.d_v).astype(layout.dtype, copy=False)
    lse = lse.reshape(*layout.batch, layout.t_q).astype(layout.dtype, copy=False)
    return (out, lse) if return_lse else out


def _cycle_counts(arguments):
    """Zeroed cycle counters, one row of PHASES per task of _flash."""
    return np.zeros((arguments.q_index.size * (arguments.starts.size - 1), len(PHASES)), np.int64)


# ------------------------------------------------------- introspection

def profile(q, k, v, *, causal=False, block_q=None, block_k=BLOCK_K, scale=None, path=None):
    """Where flash_attention's time goes: {phase: share of the cycles of all tasks}.

    Reads the cycle counter around each phase of each key tile (PHASES), a few
    dozen cycles per reading; summed over tasks, so with several threads it is
    the share of the threads' total time. Same arguments as flash_attention.
    Needs x86-64 (rdtsc): elsewhere it raises NotImplementedError before running anything.
    """
    _require_x86_64("jit.profile")
    arguments, _, _ = _prepare(q, k, v, causal, block_q, block_k, scale, path)
    cycles = _run(arguments, True, q, k, v)
    total = cycles.sum(axis=0)
    return dict(zip(PHASES, (total / max(total.sum(), 1)).tolist()))


def _require_x86_64(what):
    """Refuse off x86-64: llvm.readcyclecounter is rdtsc there, but on AArch64 it reads
    PMCCNTR_EL0, which Linux and macOS keep from user space (the process dies of SIGILL)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise NotImplementedError(
            f"{what} reads the x86-64 cycle counter (rdtsc), and this machine is {platform.machine()!r}; "
            f"time flash_attention itself instead (time.perf_counter around calls)"
        )


@numba.njit(fastmath=FASTMATH)  # not cached: its machine code stays inspectable (kernel_info)
def _products(a, b, out, shape, repeats):
    """out = a @ b through the micro-kernel, `repeats` times: a (M, K), b (K, nr * panels),
    out (M, nr * panels), M a multiple of mr. b is packed into panels (K, nr) once."""
    mr, nr = _tile_rows(shape), _tile_cols(shape, a)
    if b.shape[0] < a.shape[1]:  # the micro-kernel reads a.shape[1] rows of b, unchecked
        raise ValueError("_products: b has fewer rows than a has columns")
    panels = b.shape[1] // nr
    b_panels = np.empty((panels, b.shape[0], nr), b.dtype)
    for p in range(panels):
        b_panels[p] = b[:, p * nr:(p + 1) * nr]
    c_panels = np.empty((panels, a.shape[0], nr), b.dtype)
    ones = np.ones(nr, b.dtype)
    for _ in range(repeats):
        for p in range(panels):
            b_p, c_p = b_panels[p], c_panels[p]
            for r0 in range(0, a.shape[0], mr):
                _tile_product(a, r0, 0, b_p, c_p, r0, a.shape[1], ones, PRODUCT_ZERO, shape)
    for p in range(panels):
        out[:, p * nr:(p + 1) * nr] = c_panels[p]


def tile_product(a, b, *, path=None, repeats=1):
    """a @ b (float32 or float64) computed by the attention kernel's micro-kernel, for study.

    a (M, K), b (K, N) -> (M, N); M and N are zero-padded to multiples of the block.
    repeats > 1 computes the product that many times inside compiled code (for timing)."""
    shape = PATHS[_resolve_path(path)]
    a, b = _check_product(a, b)
    repeats = positive_int("repeats", repeats)
    dtype = _compute_dtype(np.result_type(a, b))
    nr = shape.nr(np.dtype(dtype).itemsize)
    m, n = _round_up(a.shape[0], shape.mr), _round_up(b.shape[1], nr)
    a_pad, b_pad = np.zeros((m, a.shape[1]), dtype), np.zeros((b.shape[0], n), dtype)
    a_pad[: a.shape[0]], b_pad[:, : b.shape[1]] = a, b
    out = np.empty((m, n), dtype)
    _products(a_pad, b_pad, out, shape, repeats)
    return out[: a.shape[0], : b.shape[1]]


def _check_product(a, b):
    """a (M, K) and b (K, N) as arrays, checked before the micro-kernel reads K rows of b."""
    a, b = np.asarray(a), np.asarray(b)
    for name, x, layout in (("a", a, "(M, K)"), ("b", b, "(K, N)")):
        if x.ndim != 2:
            raise ValueError(f"{name} must have shape {layout}, got shape {x.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a and b must share K (a's columns, b's rows): a has shape {a.shape}, b has shape {b.shape}; "
            f"b needs shape ({a.shape[1]}, N)"
        )
    return a, b


def kernel_info(path=None, asm=False):
    """What attncore.jit runs here: the path and its micro-kernel, the CPU, the exp2
    polynomial, the compile cache of the attention kernel; with asm, the machine code
    of the float32 micro-kernel (the compiled tile_product of this path). "note" says
    why host_path is slower than the CPU could run (Numba compiles without AVX), or is None."""
    name = _resolve_path(path)
    shape = PATHS[name]
    stats = _flash.stats
    from llvmlite import binding

    info = {
        "path": name,
        "host_path": host_path(),
        "note": _slower_path_note(host_path()),
        "forced_by": "argument" if path else ENV_PATH if os.environ.get(ENV_PATH) else None,
        "cpu_name": numba.config.CPU_NAME or binding.get_host_cpu_name(),
        "vector_bits": shape.bits,
        "lanes": {"float32": shape.lanes(4), "float64": shape.lanes(8)},
        "mr": shape.mr,
        "nr": {"float32": shape.nr(4), "float64": shape.nr(8)},
        "accumulators": shape.mr * shape.nv,
        "fma_intrinsic": shape.fma and not shape.loops,
        "intrinsic": not shape.loops,
        "block_k": BLOCK_K,
        "exp2_coefficients": EXP2_COEFFICIENTS,
        "phases": PHASES,
        "compiled_signatures": len(_flash.signatures),
        "cache_hits": sum(stats.cache_hits.values()),
        "cache_misses": sum(stats.cache_misses.values()),
    }
    if asm:
        x = np.zeros((shape.mr, 1), np.float32)
        tile_product(x, np.zeros((1, 1), np.float32), path=name)
        signature = next(s for s in _products.signatures if s[0].dtype == types.float32 and s[3] == numba.typeof(shape))
        info["asm"] = _products.inspect_asm(signature)
    return info


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
