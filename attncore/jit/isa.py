"""Which micro-kernel this CPU runs (host_features, host_path, PATHS), and its TileShape as a
compile-time constant of the kernels.

A path is a TileShape: the vector width, the mr x nv block of accumulators, fused
multiply-add or not. host_path picks one from the CPU features Numba compiles for (not
the raw host's: an instruction outside them aborts the process in LLVM).
flash_attention(path=...) or ATTNCORE_JIT_PATH forces one; every path runs anywhere
(LLVM lowers wider vectors to what the CPU has), only slower off its own CPU.

Adding a path: a TileShape in PATHS, a rule in host_path, and in vector_ir.py the
intrinsics it may use, guarded by host_features (the tests run every path in PATHS).
"""
import functools
import os
import warnings
from typing import Literal

from numba import types
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

from .compiling import _warn_numba_moved


class TileShape:
    """The shape of the tile-product micro-kernel for one kind of CPU.

    bits: vector register width; mr x nv: the result block, mr rows by nv vectors
    (mr * nv accumulators); fma: emit llvm.fma (else fmul and fadd that LLVM may
    contract); loops: plain Numba loops instead of the intrinsic; bf16: None (float32
    products), "emulated" or "native" (bfloat16 products: see bf16.py).
    """

    def __init__(self, name: str, bits: int, mr: int, nv: int, fma: bool = True, loops: bool = False,
                 bf16: str | None = None) -> None:
        self.name, self.bits, self.mr, self.nv, self.fma, self.loops = name, bits, mr, nv, fma, loops
        self.bf16 = bf16

    def lanes(self, itemsize: int) -> int:
        """Elements of itemsize bytes per vector register."""
        return self.bits // (8 * itemsize)

    def nr(self, itemsize: int) -> int:
        """Queries per panel: the result block's width in elements."""
        return self.nv * self.lanes(itemsize)

    @functools.cached_property
    def narrow(self) -> "TileShape":
        """The same micro-kernel one vector wide, for the queries of a block past its last full panel
        when they fit in one vector (the plain loops keep their width)."""
        return self if self.loops else TileShape(self.name, self.bits, self.mr, 1, self.fma, bf16=self.bf16)

    @functools.lru_cache(maxsize=None)  # noqa: B019 (a handful of TileShapes, kept for the process anyway)
    def with_bf16(self, bf16: str | None) -> "TileShape":
        """This micro-kernel with bfloat16 products (bf16 "emulated" or "native"), or float32 (None)."""
        if bf16 == self.bf16:
            return self
        return TileShape(self.name, self.bits, self.mr, self.nv, self.fma, self.loops, bf16)

    def __repr__(self) -> str:
        products = f", {self.bf16} bf16 products" if self.bf16 else ""
        return f"TileShape({self.name!r}, {self.bits} bits, {self.mr} x {self.nv} vectors{products})"


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
PathName = Literal["avx512", "avx2", "portable", "loops"]  # the keys of PATHS


def host_features() -> dict[str, bool]:
    """The CPU features that Numba compiles for, {name: enabled}: its JIT codegen's feature
    string, which is NUMBA_CPU_FEATURES if set ("" for NUMBA_CPU_NAME=generic), else the
    host's with every avx* feature off when AVX is disabled (NUMBA_ENABLE_AVX=0, or
    Numba's default on CPU names such as sandybridge and nocona). Emitting an instruction
    outside them aborts the process in LLVM, so the paths and intrinsics follow these."""
    return {f[1:]: f[0] == "+" for f in _target_features().split(",") if f}


def _target_features():
    """The feature string Numba's JIT target machine was made with: a private attribute of its
    codegen (the truth), else, with a warning, what Numba's public functions say it uses."""
    from numba.core import codegen, config
    from numba.core.registry import cpu_target

    text = getattr(cpu_target.target_context.codegen(), "_tm_features", None)
    if text is None:
        _warn_numba_moved("the JIT codegen's _tm_features", "numba.core.codegen.get_host_cpu_features()")
        text = config.CPU_FEATURES if config.CPU_FEATURES is not None else codegen.get_host_cpu_features()
    return text


def _cpu_features():
    """The features the CPU itself reports (llvmlite), whatever Numba compiles for; {} if unknown."""
    from llvmlite import binding

    try:
        return dict(binding.get_host_cpu_features())
    except RuntimeError:
        return {}


def host_path(features: dict[str, bool] | None = None) -> PathName:
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

    def __init__(self, name, bits, mr, nv, fma, loops, bf16=None):
        self.bits, self.mr, self.nv, self.fma, self.loops, self.bf16 = bits, mr, nv, fma, loops, bf16
        products = f", {bf16}" if bf16 else ""  # float32 paths keep their type names (and cache entries)
        super().__init__(name=f"TileShape({name}, {bits}, {mr}, {nv}, {fma}, {loops}{products})")


@typeof_impl.register(TileShape)
def _typeof_tile_shape(value, context):
    return _tile_shape_type(value.name, value.bits, value.mr, value.nv, value.fma, value.loops, value.bf16)


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


def _tile_lanes(shape, x):
    """The lanes of a TileShape's vectors for the dtype of array x, a compile-time constant inside kernels."""


@overload(_tile_rows)
def _overload_tile_rows(shape):
    mr = shape.mr
    return lambda shape: mr


@overload(_tile_cols)
def _overload_tile_cols(shape, x):
    nr = shape.nv * shape.bits // x.dtype.bitwidth
    return lambda shape, x: nr


@overload(_tile_lanes)
def _overload_tile_lanes(shape, x):
    lanes = shape.bits // x.dtype.bitwidth
    return lambda shape, x: lanes
