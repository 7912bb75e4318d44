"""What attncore.jit runs and where its time goes, for study: profile (the cycle counter
around each phase of the kernel), kernel_info (the path, the micro-kernel, the cache, the
machine code), and tile_product (a @ b through the micro-kernel alone).
"""
import os
import platform
from typing import Any

import numba
import numpy as np
from numba import types
from numpy.typing import ArrayLike

from .._checks import Causal, FloatArray, positive_int
from .bf16_route import measured_speedup, route, route_source
from .compiling import FASTMATH, _compute_dtype
from .exponential import EXP2_COEFFICIENTS
from .flash import PHASES, _flash, _run
from .isa import ENV_PATH, PATHS, PathName, _resolve_path, _slower_path_note, _tile_cols, _tile_rows, host_path
from .layout import _round_up
from .microkernels import PRODUCT_ZERO, _tile_product
from .schedule import AMX_BLOCK_K, BLOCK_K, default_block_k


def profile(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: Causal = False, block_q: int | None = None,
            block_k: int = BLOCK_K, scale: float | None = None, path: PathName | None = None) -> dict[str, float]:
    """Where flash_attention's time goes: {phase: share of the cycles of all tasks}.

    Reads the cycle counter around each phase of each key tile (PHASES), a few
    dozen cycles per reading; summed over tasks, so with several threads it is
    the share of the threads' total time. The arguments are flash_attention's that shape its
    float32 kernel.
    Needs x86-64 (rdtsc): elsewhere it raises NotImplementedError before running anything.
    """
    _require_x86_64("jit.profile")
    cycles = _run(q, k, v, (causal, block_q, block_k, scale, path), profiling=True)[3]
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


def tile_product(a: ArrayLike, b: ArrayLike, *, path: PathName | None = None, repeats: int = 1) -> FloatArray:
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


def kernel_info(path: PathName | None = None, asm: bool = False) -> dict[str, Any]:
    """What attncore.jit runs here: the path and its micro-kernel, the CPU, how precision="bf16"
    runs its products ("bf16_products": "amx", "native" or "emulated"; "bf16_route_source":
    what chose it; "bf16_native_speedup": the measurement, with ATTNCORE_JIT_BF16_ROUTE=auto
    only: bf16_route.py), the exp2 polynomial, the compile cache of the attention kernel; with
    asm, the machine code of the float32 micro-kernel (the compiled tile_product of this
    path). "note" says why host_path is slower than the CPU could run (Numba compiles
    without AVX), or is None."""
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
        "block_k": default_block_k(),
        "amx_block_k": AMX_BLOCK_K,
        "bf16_products": route(shape),
        "bf16_route_source": route_source(shape),
        "bf16_native_speedup": measured_speedup(shape),
        "exp2_coefficients": EXP2_COEFFICIENTS,
        "phases": PHASES,
        "compiled_signatures": len(_flash.signatures),
        "cache_hits": sum(stats.cache_hits.values()),
        "cache_misses": sum(stats.cache_misses.values()),
    }
    if asm:
        x = np.zeros((shape.mr, 1), np.float32)
        tile_product(x, np.zeros((1, 1), np.float32), path=name)
        signature = next(s for s in _products.signatures
                         if s[0].dtype == types.float32 and s[3] == numba.typeof(shape))
        info["asm"] = _products.inspect_asm(signature)
    return info
