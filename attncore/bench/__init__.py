"""Measure attention on the CPU: the implementations, the machine, the timing and the memory.

The command-line harness (`python -m benchmarks.harness` in a clone of the course) and
chapter 7 both use this package; the course's published runs ship with it (`published()`),
so the chapter runs outside the clone too.

Thread pools: NumPy's OpenBLAS, Numba's and PyTorch's OpenMP share the cores, and idle
workers of one spin and take the cores from the next timed call of another. To time them
in one process (chapter 7's live rows do), set THREAD_ENV in the environment before NumPy is
imported; OMP_WAIT_POLICY=PASSIVE then puts OpenMP's workers to sleep between calls, and a
short call can start before they wake. So the harness times each implementation in a process
of its own, the others stopped meanwhile, with OpenMP's workers spinning (isolated).
"""
import json
from importlib import resources
from typing import Literal

from . import asm, decode, isolated, peers, stopwatch
from .impls import IMPLS, available, float64_reference, inputs, torch_backend
from .machine import (
    bandwidth,
    blas_threads,
    info,
    isa_flags,
    load_average,
    read_bandwidth,
    sgemm_rate,
    theoretical_peak,
)
from .memory import rss, traced
from .stopwatch import PAUSE
from .timing import compile_cost, flops, lookup, naive_bytes, peer_ratios, ratios, run, skip_reason, time_size

THREAD_ENV = {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE"}
RESULTS = "results"  # the folder of the committed runs, package data


def results_files() -> list[str]:
    """The names of the committed results files, oldest first (each name starts with its date)."""
    return sorted(f.name for f in resources.files(__package__).joinpath(RESULTS).iterdir() if f.name.endswith(".json"))


def read(name: str) -> dict:
    """One committed results file, with "file": its name."""
    text = resources.files(__package__).joinpath(RESULTS, name).read_text()
    return {**json.loads(text), "file": name}


def parts(results: dict) -> tuple[dict, dict | None]:
    """(prefill run, decoding run) of a results file: a run of the harness holds both (its rows and
    its "decode"); an older file kept them as two runs, "peers" and "decode". None where absent."""
    prefill = results.get("peers", results)
    decoding = results.get("decode")
    if decoding is not None and "machine" not in decoding:  # the decode scenario of this same run
        decoding = results
    return prefill, decoding


def holds(results: dict, kind: Literal["chapter7", "peers"]) -> bool:
    """Whether a results file holds what a page reads (published() says what)."""
    prefill, decoding = parts(results)
    timed = {r["impl"] for r in prefill.get("rows", []) if r.get("seconds")}
    if kind == "chapter7":  # the chapter reads N = 4096 (the roofline) and 16384 (memory) too
        sizes = set(prefill.get("settings", {}).get("sizes", ()))
        return {"naive", "jit"} <= timed and "compile_cost" in prefill and {4096, 16384} <= sizes
    return any(e["ratio"] for e in prefill.get("peer_ratios", [])) and decoding is not None


def published(kind: Literal["chapter7", "peers"] = "chapter7") -> dict:
    """The newest committed results file that holds what a page reads: "chapter7", the course's
    implementations (naive NumPy ... jit, PyTorch) up to N = 16384 and the compile cost; "peers",
    a timed peer's ratios and the decode scenario. With "file": its name."""
    for name in reversed(results_files()):
        results = read(name)
        if holds(results, kind):
            return results
    raise FileNotFoundError(f"no committed results file holds the {kind} runs")


__all__ = [
    "IMPLS", "PAUSE", "THREAD_ENV", "asm", "available", "bandwidth", "blas_threads", "compile_cost", "decode",
    "float64_reference", "flops", "holds", "info", "inputs", "isa_flags", "isolated", "load_average", "lookup",
    "naive_bytes", "parts", "peer_ratios", "peers", "published", "ratios", "read", "read_bandwidth", "results_files",
    "rss", "run", "sgemm_rate", "skip_reason", "stopwatch", "theoretical_peak", "time_size", "torch_backend", "traced",
]
