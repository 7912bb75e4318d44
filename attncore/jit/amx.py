"""Intel AMX (amx-tile, amx-bf16): whether it can run here, and its tile instructions as Numba intrinsics.

AMX has 8 tile registers, tmm0..tmm7, of up to 16 rows x 64 bytes each, and a tile
multiply, tdpbf16ps: C (16 x 16 float32) += A (16 x 32 bf16) . B, where B (16 x 16 words)
holds the 32 x 16 bf16 right factor in pairs along the reduction (word [r, n] = the
bf16 pair B[2r, n], B[2r + 1, n]: the layout of bf16.py's _pack_pairs). Products are
exact in float32, the sums are float32 (denormals flushed to zero, as vdpbf16ps).

Before a thread uses a tile it loads a tile configuration (ldtilecfg: _tile_configure,
every tile 16 rows x 64 bytes here), and releases the tiles when done (_tile_release).
Linux hands out the tile state only to a process that asked for it (arch_prctl
ARCH_REQ_XCOMP_PERM); without it the first tile instruction kills the process, so
available() asks first, and kernels run AMX code only when it returned True.

The intrinsics take the tile number as a compile-time integer (a literal in the kernel)
and the tile's memory as a 2-D C-contiguous array and its first row and column: a tile
row is a row of the array (the stride is the array's row stride).
"""
import ctypes
import functools

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .compiling import _jit
from .isa import host_features

TILES = 8
ROWS, COLSB = 16, 64  # every tile: 16 rows x 64 bytes (16 float32, 16 words of two bf16)
_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA = 158, 0x1023, 18


@functools.cache
def available():
    """Whether AMX tiles and tdpbf16ps can run: Numba compiles for amx-tile and amx-bf16
    (host_features; NUMBA_ENABLE_AVX=0 or NUMBA_CPU_FEATURES without them turn this off),
    with avx512 (bf16.native_available), and Linux granted the tile state to this process
    (asked once, here). Never raises."""
    try:
        features = host_features()
        if not all(features.get(name) for name in ("amx-tile", "amx-bf16", "avx512f", "avx512bw", "avx512bf16")):
            return False
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) == 0
    except Exception:  # noqa: BLE001 (no AMX is an answer, not an error: another path runs)
        return False


@_jit
def tile_config():
    """The 64-byte tile configuration (uint8) for ldtilecfg: palette 1, tiles 0..7 of ROWS x COLSB
    (bytes 16 + 2t: colsb of tile t, little-endian uint16; byte 48 + t: its rows)."""
    config = np.zeros(64, np.uint8)
    config[0] = 1
    for t in range(TILES):
        config[16 + 2 * t] = COLSB
        config[48 + t] = ROWS
    return config


@_jit
def _aligned(raw, size):
    """raw[skip:skip + size] for the skip (raw: 1-D, 4-byte dtype, 16 entries longer than size)
    that starts it on a 64-byte boundary."""
    skip = (-raw.ctypes.data % 64) // 4
    return raw[skip:skip + size]


@_jit
def zeros(rows, cols, dtype):
    """np.zeros((rows, cols), dtype) (4-byte dtype) starting on a 64-byte boundary: a tile row
    that straddles two cache lines makes tileloadd several times slower (Numba's allocations are
    aligned to 32 bytes)."""
    return _aligned(np.zeros(rows * cols + 16, dtype), rows * cols).reshape((rows, cols))


@_jit
def empty(size, dtype):
    """np.empty(size, dtype) (4-byte dtype) starting on a 64-byte boundary, as zeros."""
    return _aligned(np.empty(size + 16, dtype), size)


def _function(builder, name, args):
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), args), name)


_I8, _I64, _PTR = ir.IntType(8), ir.IntType(64), ir.IntType(8).as_pointer()


def _tile_number(t):
    """The tile number of a typed argument: an integer literal below TILES, else None."""
    if isinstance(t, types.IntegerLiteral) and 0 <= t.literal_value < TILES:
        return t.literal_value
    return None


@intrinsic
def _tile_configure(typingctx, config):
    """ldtilecfg: load the configuration (uint8 array of 64, tile_config()) for this thread."""
    if not (isinstance(config, types.Array) and config.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        builder.call(_function(builder, "llvm.x86.ldtilecfg", [_PTR]), [builder.bitcast(data, _PTR)])
        return context.get_dummy_value()

    return types.void(config), codegen


@intrinsic
def _tile_release(typingctx):
    """tilerelease: this thread's tiles back to their initial state."""

    def codegen(context, builder, signature, args):
        builder.call(_function(builder, "llvm.x86.tilerelease", []), [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _tile_zero(typingctx, tile):
    """tilezero: tile `tile` = 0."""
    number = _tile_number(tile)
    if number is None:
        return None

    def codegen(context, builder, signature, args):
        builder.call(_function(builder, "llvm.x86.tilezero", [_I8]), [ir.Constant(_I8, number)])
        return context.get_dummy_value()

    return types.void(tile), codegen


def _tile_memory(name):
    """tileloadd / tilestored of tile `tile` from / to x[row:row + 16, col:...] (x 2-D, C-contiguous)."""

    def typer(typingctx, tile, x, row, col):
        number = _tile_number(tile)
        if (number is None or not (isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C")
                or not isinstance(row, types.Integer) or not isinstance(col, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            x_ty = signature.args[1]
            array = context.make_array(x_ty)(context, builder, args[1])
            row_, col_ = (context.cast(builder, value, t, types.intp) for value, t in
                          zip(args[2:], signature.args[2:]))
            pointer = cgutils.get_item_pointer(context, builder, x_ty, array, [row_, col_])
            stride = cgutils.unpack_tuple(builder, array.strides)[0]
            builder.call(_function(builder, name, [_I8, _PTR, _I64]),
                         [ir.Constant(_I8, number), builder.bitcast(pointer, _PTR), builder.sext(stride, _I64)
                          if stride.type.width < 64 else stride])
            return context.get_dummy_value()

        return types.void(tile, x, row, col), codegen

    return typer


_tile_load = intrinsic(_tile_memory("llvm.x86.tileloadd64"))
_tile_store = intrinsic(_tile_memory("llvm.x86.tilestored64"))


@intrinsic
def _tile_dot(typingctx, c, a, b):
    """tdpbf16ps: tile c (16 x 16 float32) += tile a (16 x 32 bf16) . tile b (16 x 16 bf16 pairs)."""
    numbers = [_tile_number(t) for t in (c, a, b)]
    if None in numbers or len(set(numbers)) < 3:
        return None

    def codegen(context, builder, signature, args):
        builder.call(_function(builder, "llvm.x86.tdpbf16ps", [_I8, _I8, _I8]), [ir.Constant(_I8, n) for n in numbers])
        return context.get_dummy_value()

    return types.void(c, a, b), codegen
