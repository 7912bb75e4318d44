"""Whether vdpbf16ps pays here: native_speedup, measured once per process.

vdpbf16ps does two multiply-adds per float32 lane where vfmadd does one, so the products
of precision="bf16" could run twice as fast on it. Whether they do depends on the rate at
which the core issues it: on the course's Emerald Rapids machine without AMX, one
vdpbf16ps took 3.4 to 3.9 times as long as one vfmadd (ten independent chains of each),
so it did about half the multiply-adds per second: in the harness the native route ran at
0.54 to 0.70 times the float32 kernel's speed, the emulated one (the float32 kernel on
rounded operands: vfmadd) at 0.80 to 1.02.

So before the native route is taken, the products of one key tile (64 keys, d = 64,
one panel, in L1) are timed both ways through the kernel's own micro-kernels, alternating,
and the fastest of each compared. Packing q, k, v and the weights in pairs costs the
native route a little more than rounding them costs the emulated one, so it is taken
only when its products run at least NATIVE_PAYS times as fast.
"""
import functools
import time

import numpy as np

from .compiling import _jit
from .flash_bf16 import _dot
from .isa import _tile_rows
from .microkernels import PRODUCT_ZERO, _tile_product

NATIVE_PAYS = 1.25  # vdpbf16ps is taken when it runs a tile's products at least this many times as fast as vfmadd
KEYS, D = 64, 64  # the probe's key tile: keys x d
REPEATS, ROUNDS = 400, 5  # tiles per timing (about 1 ms), alternating rounds


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
def native_speedup(shape):
    """How many times as fast vdpbf16ps runs one key tile's products as vfmadd does on the
    micro-kernel `shape` (a TileShape that bf16.native_available accepts): float32 time over
    vdpbf16ps time, the fastest of ROUNDS alternating timings each. Once per process and shape."""
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
