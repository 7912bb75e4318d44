"""Interleaved timing of the implementations, errors against float64, the ratios of a run.

Within each repeat the implementations run one after another (each timed call right
after an untimed one of its own), so two calls of one repeat ran side by side: the ratio
of two implementations is the median over the repeats of their ratio within a repeat,
and a slow phase of the machine that hits one repeat moves neither. Times are medians.
FLOPs: 4 N^2 d (two matmuls), half of it when causal. Each repeat also times one float32
(1024, 1024) product on one BLAS thread, so the kernel's rate can be compared with the
single-thread sgemm rate measured beside it.
"""
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import impls, machine, memory

D = 64
ITEMSIZE = 4  # float32
SGEMM_N = 1024


def flops(n, causal, d=D):
    return 4 * n * n * d / (2 if causal else 1)


def naive_bytes(n, name="naive"):
    """Peak of a naive implementation, estimated: its float32 (N, N) arrays."""
    return impls.MATRICES[name] * n * n * ITEMSIZE


def skip_reason(name, n, naive_budget_gib=2.0, numpy_flash_max=2048):
    if name in impls.MATRICES and naive_bytes(n, name) > naive_budget_gib * 2**30:
        return f"skipped: ~{naive_bytes(n, name) / 2**30:.1f} GiB > naive budget {naive_budget_gib:g} GiB"
    if name == "numpy_flash" and n > numpy_flash_max:
        return f"skipped: too slow above N = {numpy_flash_max}"
    return None


def _timed(fn):
    fn()  # untimed: a call right after other work or a pause starts on an idled core
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def time_size(n, causal, names, repeats, d=D, sgemm=True):
    """The seconds of each repeat per implementation (interleaved), each output's max |error|
    against float64, the median single-thread sgemm rate of the same repeats (GFLOP/s, or
    None), and the SDPA backend torch picked (or None)."""
    q, k, v = impls.inputs(n, d)
    outputs = {name: impls.IMPLS[name](q, k, v, causal) for name in names}  # warm-up
    reference = impls.float64_reference(q, k, v, causal)
    errors = {name: float(np.max(np.abs(out - reference))) for name, out in outputs.items()}
    del outputs, reference
    backend = impls.torch_backend(q, k, v, causal) if "torch" in names else None
    a, b = (np.random.default_rng(i).standard_normal((SGEMM_N, SGEMM_N), dtype=np.float32) for i in range(2))
    times, sgemm_times = {name: [] for name in names}, []
    for _ in range(repeats):
        for name in names:
            times[name].append(_timed(lambda: impls.IMPLS[name](q, k, v, causal)))
        if sgemm:
            with machine.blas_threads(1) as limited:
                if limited:
                    sgemm_times.append(_timed(lambda: a @ b))
    rate = 2 * SGEMM_N**3 / statistics.median(sgemm_times) / 1e9 if sgemm_times else None
    return times, errors, rate, backend


def run(sizes, repeats=5, naive_budget_gib=2.0, numpy_flash_max=2048, rss=True, names=None, log=None):
    """Time every available implementation at each N, causal and not; the rows of a results file."""
    names = [name for name in (names or impls.available()) if name in impls.available()]
    rows, cores = [], machine.cores()
    for n in sizes:
        for causal in (False, True):
            active = [name for name in names if skip_reason(name, n, naive_budget_gib, numpy_flash_max) is None]
            repeat_seconds, errors, sgemm, backend = time_size(n, causal, active, repeats)
            q, k, v = impls.inputs(n, D)
            for name in names:
                note = skip_reason(name, n, naive_budget_gib, numpy_flash_max)
                row = {"n": n, "causal": causal, "impl": name, "note": note}
                if name in repeat_seconds:
                    fn = impls.IMPLS[name]
                    seconds = statistics.median(repeat_seconds[name])
                    traced = None if name == "torch" else memory.traced(lambda: fn(q, k, v, causal))
                    resident = memory.rss(name, n, D, causal) if rss and not causal else None
                    row.update(
                        seconds=seconds, repeat_seconds=repeat_seconds[name], gflops=flops(n, causal) / seconds / 1e9,
                        max_error=errors[name], traced_bytes=traced, rss_bytes=resident,
                        # each method misses some memory (see memory.py): keep the larger
                        peak_bytes=max((b for b in (traced, resident) if b is not None), default=None),
                        sgemm_1t_gflops=sgemm,
                    )
                    if sgemm:
                        row["sgemm_fraction"] = row["gflops"] / (sgemm * cores)
                    if name == "torch":
                        row["backend"] = backend
                rows.append(row)
            if log:
                log(f"  measured N = {n}, causal = {causal}")
    return rows


def lookup(rows, n, causal, impl, key="seconds"):
    return next((r.get(key) for r in rows if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def side_by_side(rows, n, causal, impl, other):
    """How many times as fast impl ran as other: the median over the repeats of other's time
    over impl's in the same repeat; None if either did not run."""
    mine, theirs = (lookup(rows, n, causal, name, "repeat_seconds") for name in (impl, other))
    return statistics.median(t / s for s, t in zip(mine, theirs, strict=True)) if mine and theirs else None


def ratios(rows):
    """Per N: jit against torch, naive and textbook (throughput, side_by_side), causal
    speed-ups (the ratio of two medians: the two calls ran at different moments), memory."""
    out = []
    for n in sorted({r["n"] for r in rows}):
        entry = {"n": n}
        for causal in (False, True):
            tag = "causal" if causal else "full"
            for other in ("torch", "naive", "textbook", "numpy_flash"):
                entry[f"jit_vs_{other}_{tag}"] = side_by_side(rows, n, causal, "jit", other)
            entry[f"jit_sgemm_fraction_{tag}"] = lookup(rows, n, causal, "jit", "sgemm_fraction")
        for name in ("jit", "torch", "naive", "textbook", "numpy_flash"):
            full, causal = (lookup(rows, n, c, name) for c in (False, True))
            entry[f"causal_speedup_{name}"] = full / causal if full and causal else None
        jit_rss = lookup(rows, n, False, "jit", "rss_bytes")
        naive_rss = lookup(rows, n, False, "naive", "rss_bytes")
        entry["naive_vs_jit_rss"] = naive_rss / jit_rss if naive_rss and jit_rss else None
        jit_bytes = lookup(rows, n, False, "jit", "peak_bytes")
        naive_measured = lookup(rows, n, False, "naive", "peak_bytes")
        entry["naive_estimated"] = naive_measured is None
        naive = naive_measured or naive_bytes(n)
        entry["naive_vs_jit_memory"] = naive / jit_bytes if jit_bytes else None
        out.append(entry)
    return out


COMPILE_PROBE = """
import time
start = time.perf_counter()
import numpy as np
from attncore import jit
imported = time.perf_counter()
x = np.ones((1, 1, 64, 64), np.float32)
jit.flash_attention(x, x, x)
called = time.perf_counter()
info = jit.kernel_info()
print(imported - start, called - imported, info["cache_hits"], info["cache_misses"], info["path"])
"""


def compile_cost():
    """First call of jit.flash_attention in two fresh processes sharing an empty NUMBA_CACHE_DIR."""
    if importlib.util.find_spec("numba") is None:
        return None
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty cache", "cache hit"):
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append({"run": label, "import_s": float(out[0]), "first_call_s": float(out[1]),
                         "cache_hits": int(out[2]), "cache_misses": int(out[3]), "path": out[4]})
        index_files = len(list(Path(cache).rglob("*.nbi")))
    return {"runs": runs, "index_files": index_files}
