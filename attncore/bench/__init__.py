"""Measure attention on the CPU: the implementations, the machine, the timing and the memory.

The command-line harness (`python -m benchmarks.harness` in a clone of the course) and
chapter 7 both use this package; the results of the course's published run ship with it
(`published()`), so the chapter runs outside the clone too.

Thread pools: NumPy's OpenBLAS, Numba's and PyTorch's OpenMP, OpenVINO's TBB and ONNX
Runtime's pool share the cores, and idle workers of one spin and would take the cores from
the next timed call of another. The pause before each timed call (timing.PAUSE, 50 ms) is
what keeps them apart: measured on the course machine, the CPU a pool burns after a call
(OpenMP 4-5 ms, ONNX Runtime 26 ms, OpenVINO 1 ms) is over within it. OpenBLAS would spin
for 2^28 cycles (0.1 s), so THREAD_ENV makes its workers sleep after 2^4; set it in the
environment before NumPy is imported (the harness does). OpenMP keeps its default wait
policy: with OMP_WAIT_POLICY=PASSIVE its workers slept between the untimed and the timed
call, and on the course machine (a VM) waking one took 0.7-3 ms, which only OpenMP pools
paid: attncore.jit's N = 1024 calls ran on one core (CPU / wall 1.01).
"""
import json
from importlib import resources

from .impls import IMPLS, available, float64_reference, inputs, torch_backend
from . import asm, decode, peers, story
from .machine import (bandwidth, blas_threads, info, isa_flags, load_average, read_bandwidth, sgemm_rate,
                      theoretical_peak)
from .memory import rss, traced
from .timing import (PAUSE, compile_cost, flops, lookup, naive_bytes, peer_ratios, ratios, run, skip_reason,
                     time_size)

THREAD_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4"}
PUBLISHED = "2026-11-30-xeon-emerald-rapids-2-cores.json"


def published(name=PUBLISHED):
    """The results of a committed full run of the harness (package data)."""
    return json.loads(resources.files(__package__).joinpath("results", name).read_text())


__all__ = [
    "IMPLS", "PAUSE", "PUBLISHED", "THREAD_ENV", "asm", "available", "bandwidth", "blas_threads", "compile_cost",
    "decode", "float64_reference", "flops", "info", "inputs", "isa_flags", "load_average", "lookup", "naive_bytes",
    "peer_ratios", "peers", "published", "ratios", "read_bandwidth", "rss", "run", "sgemm_rate", "skip_reason",
    "story", "theoretical_peak", "time_size", "torch_backend", "traced",
]
