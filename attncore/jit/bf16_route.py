"""Which way precision="bf16" runs its products here (route), and the opt-in probe that times them.

The route is chosen from what the CPU offers, never from a timing, so that every process on
one machine runs the same kernel and gets the same bits (the ways differ in the order of
their float32 sums: bf16.py):

* "amx" where AMX tiles can run (amx.available: the CPU, Numba's target and the kernel's
  permission);
* else "native" (vdpbf16ps) where the avx512 path and a CPU with AVX512_BF16 can run it
  (bf16.native_available);
* else "emulated": the float32 kernel on operands rounded to bf16.

vdpbf16ps does two multiply-adds per float32 lane where vfmadd does one, but some cores issue
it at a fraction of vfmadd's rate, and there the emulated way is faster. The environment
variable ATTNCORE_JIT_BF16_ROUTE chooses instead: "native" or "emulated" (wherever vdpbf16ps
can run), or "auto": time the products of one key tile both ways, once per process
(native_speedup), and take vdpbf16ps where it runs them at least NATIVE_PAYS times as fast.
kernel_info() reports the route, what chose it and the measurement.
"""
import functools
import os
import time
import warnings
from typing import Literal

import numpy as np

from . import amx
from .bf16 import native_available
from .compiling import _jit
from .isa import TileShape, _tile_rows, host_features
from .microkernels import PRODUCT_ZERO, _dot, _tile_product

PRECISIONS = ("f32", "bf16", "bf16_native", "bf16_emulated")
Precision = Literal["f32", "bf16", "bf16_native", "bf16_emulated"]
ENV_ROUTE = "ATTNCORE_JIT_BF16_ROUTE"
ROUTE_CHOICES = ("native", "emulated", "auto")
NATIVE_PAYS = 1.25  # with "auto", vdpbf16ps is taken when it runs a tile's products at least this many times as fast
KEYS, D = 64, 64  # the probe's key tile: keys x d
REPEATS, ROUNDS = 400, 5  # tiles per timing, alternating rounds


def products(precision: Precision, shape: TileShape) -> str | None:
    """What shape.bf16 is for `precision` on the micro-kernel `shape`: None ("f32"), route(shape)
    ("bf16", with a RuntimeWarning once per path where there is no vdpbf16ps), "native"
    ("bf16_native", a ValueError where there is no vdpbf16ps) or "emulated" ("bf16_emulated")."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    if precision == "bf16_native" and not native_available(shape):
        raise ValueError(f"precision='bf16_native' needs vdpbf16ps: the avx512 path and a CPU with AVX512_BF16 that "
                         f"Numba compiles for; here the path is {shape.name!r}"
                         + ("" if bool(host_features().get("avx512bf16")) else " and the target has no AVX512_BF16"))
    if precision != "bf16":
        return {"f32": None, "bf16_native": "native", "bf16_emulated": "emulated"}[precision]
    taken = route(shape)
    if taken == "emulated" and not native_available(shape):
        _warn_emulated(shape.name)
    return taken


def route(shape: TileShape) -> str:
    """How precision="bf16" runs its products on the micro-kernel `shape` here: "amx", "native"
    or "emulated", from the CPU's features, or as ATTNCORE_JIT_BF16_ROUTE says (see above)."""
    if not native_available(shape):
        return "emulated"
    chosen = _chosen()
    if chosen in ("native", "emulated"):
        return chosen
    if amx.available():
        return "amx"
    if chosen == "auto":
        return "native" if native_speedup(shape) >= NATIVE_PAYS else "emulated"
    return "native"


def route_source(shape: TileShape) -> str:
    """What chose route(shape): "cpu features", or the environment variable ("ATTNCORE_JIT_BF16_ROUTE=auto", ...)."""
    chosen = _chosen()
    return "cpu features" if chosen is None or not native_available(shape) else f"{ENV_ROUTE}={chosen}"


def measured_speedup(shape: TileShape) -> float | None:
    """native_speedup(shape) where route(shape) was chosen by timing it ("auto"), else None."""
    timed = _chosen() == "auto" and native_available(shape) and not amx.available()
    return native_speedup(shape) if timed else None


def _chosen() -> str | None:
    """ATTNCORE_JIT_BF16_ROUTE, checked: None when unset or empty."""
    chosen = os.environ.get(ENV_ROUTE) or None
    if chosen is not None and chosen not in ROUTE_CHOICES:
        raise ValueError(f"{ENV_ROUTE} must be one of {', '.join(ROUTE_CHOICES)} (or unset: the CPU's features "
                         f"choose), got {chosen!r}")
    return chosen


@functools.cache
def _warn_emulated(path: str) -> None:
    warnings.warn(f"attncore.jit: precision='bf16' is emulated on the {path!r} path (no vdpbf16ps: it needs the "
                  f"avx512 path and a CPU with AVX512_BF16 that Numba compiles for); the results are the same "
                  f"bf16 products, summed in float32", RuntimeWarning, stacklevel=4)


@_jit
def _native_products(k_w, q_w, s, column, repeats, shape):
    """repeats x s = k . q on vdpbf16ps: k_w (keys, d/2) and q_w (d/2, nr) words of bf16 pairs."""
    mr = _tile_rows(shape)
    for _ in range(repeats):
        for r0 in range(0, k_w.shape[0], mr):
            _dot(k_w, r0, 0, q_w, s, r0, k_w.shape[1], column, np.float32(1), PRODUCT_ZERO, shape)


@_jit
def _float32_products(k, q_t, s, column, repeats, shape):
    """repeats x s = k . q on vfmadd: k (keys, d) and q_t (d, nr) in float32."""
    mr = _tile_rows(shape)
    for _ in range(repeats):
        for r0 in range(0, k.shape[0], mr):
            _tile_product(k, r0, 0, q_t, s, r0, k.shape[1], column, PRODUCT_ZERO, shape)


@functools.cache
def native_speedup(shape: TileShape) -> float:
    """How many times as fast vdpbf16ps runs one key tile's products (KEYS keys, d = D, one
    panel, in L1) as vfmadd does on the micro-kernel `shape` (one that bf16.native_available
    accepts), through the kernel's own micro-kernels: float32 time over vdpbf16ps time, the
    fastest of ROUNDS alternating timings each. Once per process and shape; only for "auto"."""
    native, float32 = shape.with_bf16("native"), shape.with_bf16(None)
    nr = float32.nr(4)
    ones = np.full((KEYS, D), 0x3F803F80, np.uint32)  # words of two bf16 1.0: the operands' values do not matter
    k_w, q_w = ones[:, :D // 2].copy(), ones[:D // 2, :nr].copy()
    k, q_t = np.ones((KEYS, D), np.float32), np.ones((D, nr), np.float32)
    s, column = np.empty((KEYS, nr), np.float32), np.zeros(nr, np.float32)
    runs = {"native": (_native_products, (k_w, q_w, s, column), native),
            "float32": (_float32_products, (k, q_t, s, column), float32)}
    best = {}
    for kernel, arrays, tile_shape in runs.values():
        kernel(*arrays, 1, tile_shape)  # compile or load
    for _ in range(ROUNDS):
        for name, (kernel, arrays, tile_shape) in runs.items():
            start = time.perf_counter()
            kernel(*arrays, REPEATS, tile_shape)
            best[name] = min(best.get(name, np.inf), time.perf_counter() - start)
    return best["float32"] / best["native"]
