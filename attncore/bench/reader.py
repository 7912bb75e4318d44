"""The read roof's reader: a compiled pass that reads a large array once, as decoding reads K and V.

Each of Numba's threads sums its share of the rows (ROW floats each, 512 bytes in float32,
a row of K at d = 128) and asks the CPU for the row PREFETCH_ROWS ahead of the one it
reads, as the decode kernel asks for K. A roof must be the best a plain reader can do, and a
plain np.dot of the array with itself was slower than the decode kernel (benchmarks/NOTES.md).

A bandwidth measured once moves from run to run on a shared machine, so the decode scenario
(attncore.bench.decode) also times two readers in every
round, beside the implementations: memory_reader, a large array of its own (the memory's
bandwidth in that round), and kv_reader, the step's own K and V (how fast any reader gets
those bytes, from wherever they sit, a cache included).
"""
import time

import numba
import numpy as np
from numba import prange

from ..jit.compiling import _parallel_jit
from ..jit.decode_microkernels import _prefetch_rows
from . import peers

ROW = 128  # floats per row
PREFETCH_ROWS = 16  # rows asked for ahead of the one read (8 KiB in float32)


@_parallel_jit
def _sum_rows(rows, parts):
    """The sum of rows (n, ROW), split into `parts` contiguous runs of rows, one per prange iteration."""
    n = rows.shape[0]
    sums = np.zeros(parts, rows.dtype)
    for p in prange(parts):
        first, stop = n * p // parts, n * (p + 1) // parts
        total = np.zeros(rows.shape[1], rows.dtype)  # its own array: the loop over c vectorises
        for r in range(first, stop):
            if r + PREFETCH_ROWS < stop:
                _prefetch_rows(rows, r + PREFETCH_ROWS, 1)
            for c in range(rows.shape[1]):
                total[c] += rows[r, c]
        sums[p] = total.sum()
    return sums.sum()


def read_seconds(array: np.ndarray, threads: int, repeats: int) -> float:
    """Seconds of the fastest of `repeats` passes over array (float32, a multiple of ROW floats) on
    `threads` of Numba's threads, after one untimed pass. Numba's thread count is restored after."""
    rows = array.reshape(-1, ROW)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        _sum_rows(rows, threads)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            _sum_rows(rows, threads)
            times.append(time.perf_counter() - start)
    finally:
        numba.set_num_threads(before)
    return min(times)


def _reader(arrays, threads, what):
    """A peers.Call that reads each of arrays (2-D, C-contiguous rows) once, on `threads` of Numba's threads."""
    numba.set_num_threads(threads)
    details = {"method": f"a compiled sum of {what}, each thread asking for the row {PREFETCH_ROWS} ahead of the one "
                         "it reads", "threads": threads, "bytes": sum(a.nbytes for a in arrays)}
    return peers.Call(lambda: sum(_sum_rows(rows, threads) for rows in arrays), lambda total: total, details)


def kv_reader(k: np.ndarray, v: np.ndarray, threads: int) -> peers.Call:
    """Reads k and v (B, H_kv, T_k, d), C-contiguous, once each by their rows of d floats: what a
    decode step must read, and nothing else."""
    rows = [x.reshape(-1, x.shape[-1]) for x in (k, v)]
    return _reader(rows, threads, f"K and V by their rows of {rows[0].shape[1] * k.itemsize} bytes")


def memory_reader(mib: int, threads: int) -> peers.Call:
    """Reads an array of its own, `mib` MiB of float32 (at least twice the last-level cache, so
    from memory), by rows of ROW floats."""
    rows = np.ones((mib * 2**20 // 4 // ROW, ROW), np.float32)
    return _reader([rows], threads, f"{mib} MiB float32 by rows of {ROW * 4} bytes")
