"""Measure attention on the CPU: the implementations, the machine, the timing and the memory.

The command-line harness (`python -m benchmarks.harness` in a clone of the course) and
chapter 7 both use this package; the results of the course's published run ship with it
(`published()`), so the chapter runs outside the clone too.

Thread pools: NumPy's OpenBLAS, Numba's and PyTorch's OpenMP share the cores, and idle
workers of one spin and take the cores from the next timed call of another. To time them
in one process (chapter 7 does), set THREAD_ENV in the environment before NumPy is imported.

OMP_WAIT_POLICY=PASSIVE has a price on the course machine (a VM): a worker asleep since the
last call took 0.7-5 ms to wake, which only OpenMP pools (attncore.jit, torch) pay, and a
call under 2 ms often ran on one thread. OpenMP's default policy was worse in one process:
with torch's and Numba's OpenMP runtimes together, torch at N = 1024 took 8 ms instead of
1-2 in most rounds, and jit timed after torch 12 ms instead of 2 (measured 2026-12-02, the
50 ms pause before each call kept). So the harness times each implementation in a process
of its own, the others stopped meanwhile, with OpenMP's workers spinning (isolated).
"""
import json
from importlib import resources

from .impls import IMPLS, available, float64_reference, inputs, torch_backend
from . import asm, decode, isolated, peers, story
from .machine import (bandwidth, blas_threads, info, isa_flags, load_average, read_bandwidth, sgemm_rate,
                      theoretical_peak)
from .memory import rss, traced
from .timing import (PAUSE, compile_cost, flops, lookup, naive_bytes, peer_ratios, ratios, run, skip_reason,
                     time_size)

THREAD_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE"}
PUBLISHED = "2026-11-30-xeon-emerald-rapids-2-cores.json"


def published(name=PUBLISHED):
    """The results of a committed full run of the harness (package data)."""
    return json.loads(resources.files(__package__).joinpath("results", name).read_text())


__all__ = [
    "IMPLS", "PAUSE", "PUBLISHED", "THREAD_ENV", "asm", "available", "bandwidth", "blas_threads", "compile_cost",
    "decode", "float64_reference", "flops", "info", "inputs", "isa_flags", "isolated", "load_average", "lookup",
    "naive_bytes", "peer_ratios", "peers", "published", "ratios", "read_bandwidth", "rss", "run", "sgemm_rate",
    "skip_reason", "story", "theoretical_peak", "time_size", "torch_backend", "traced",
]
