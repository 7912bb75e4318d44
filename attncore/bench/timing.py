"""The harness's runs: errors against float64, interleaved timing of the implementations, the
ratios of a run.

Each size checks every implementation against float64 before any timing (a peer that fails
to import or prepare, or errs beyond its bound, is a row with a note saying why, never a
missing row), then times them in rounds (attncore.bench.stopwatch): times are medians, the
ratio of two implementations the median of their ratios within a round. FLOPs: 4 N^2 d (two
matmuls), half of it when causal. Each round also times one float32 (1024, 1024) product on
one BLAS thread, so the kernel's rate can be compared with the single-thread sgemm rate
measured beside it.
"""
import functools
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import impls, isolated, machine, memory
from .stopwatch import PAUSE, paired, rounds, timed

D = 64
ITEMSIZE = 4  # float32
SGEMM_N = 1024


def flops(n: int, causal: bool, d: int = D) -> float:
    return 4 * n * n * d / (2 if causal else 1)


def naive_bytes(n: int, name: str = "naive") -> int:
    """Peak of a naive implementation, estimated: its float32 (N, N) arrays."""
    return impls.MATRICES[name] * n * n * ITEMSIZE


def skip_reason(name: str, n: int, naive_budget_gib: float = 2.0, numpy_flash_max: int = 2048) -> str | None:
    """Why implementation `name` is not run at size n (a sentence), or None: the matrices
    would exceed the memory budget, or the NumPy tiles would take too long."""
    if name in impls.MATRICES and naive_bytes(n, name) > naive_budget_gib * 2**30:
        return f"skipped: ~{naive_bytes(n, name) / 2**30:.1f} GiB > naive budget {naive_budget_gib:g} GiB"
    if name == "numpy_flash" and n > numpy_flash_max:
        return f"skipped: too slow above N = {numpy_flash_max}"
    return None


def check(names: Sequence[str], q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, reference: np.ndarray,
          threads: int, isolate: bool = False) -> tuple[dict, dict, dict, dict]:
    """Prepare each implementation (isolate: each in its worker process, attncore.bench.isolated)
    and compare its output with the float64 reference, before any timing: ({name: call},
    {name: max |error|}, {name: details}, {name: skip note})."""
    calls, errors, details, notes = {}, {}, {}, {}
    for name in names:
        try:
            call = (isolated.prepare(name, impls.prepare, name, q, k, v, causal, threads) if isolate
                    else impls.prepare(name, q, k, v, causal, threads))
            out = call.result()
        except Exception as error:  # a peer's failure is a row with its reason
            notes[name] = f"skipped: {isolated.describe(error)}"
            continue
        errors[name] = float(np.max(np.abs(out - reference)))
        details[name] = call.details
        bound = impls.tolerance(name)
        if bound is not None and not errors[name] <= bound:
            notes[name] = f"skipped: max |error| {errors[name]:.1e} against float64 > bound {bound:.0e}"
            continue
        calls[name] = call
    return calls, errors, details, notes


def time_size(n: int, causal: bool, names: Sequence[str], repeats: int, d: int = D, sgemm: bool = True,
              pause: float = PAUSE, threads: int | None = None, isolate: bool = False) -> tuple:
    """The seconds of each repeat per implementation (interleaved), each output's max |error|
    against float64, the median single-thread sgemm rate of the same repeats (GFLOP/s, or
    None), what ran ({name: details}) and why some did not ({name: note}). isolate: each
    implementation timed in its own process (attncore.bench.isolated)."""
    threads = threads or machine.cores()
    q, k, v = impls.inputs(n, d)
    reference = impls.float64_reference(q, k, v, causal)
    calls, errors, details, notes = check(names, q, k, v, causal, reference, threads, isolate)
    del reference
    a, b = (np.random.default_rng(i).standard_normal((SGEMM_N, SGEMM_N), dtype=np.float32) for i in range(2))
    sgemm_times = []

    def sgemm_once():
        with machine.blas_threads(1) as limited:
            if limited:
                sgemm_times.append(timed(lambda: a @ b, pause))

    cpu = {}
    times = rounds(calls, repeats, pause, between=sgemm_once if sgemm else None, cpu=cpu)
    rate = 2 * SGEMM_N**3 / statistics.median(sgemm_times) / 1e9 if sgemm_times else None
    for name in details:
        if name in cpu:
            details[name]["repeat_cpu_seconds"] = cpu[name]
    return times, errors, rate, details, notes


def run(sizes, repeats=5, naive_budget_gib=2.0, numpy_flash_max=2048, rss=True, names=None, log=None,
        pause=PAUSE, threads=None, isolate=False):
    """Time every available implementation at each N, causal and not; the rows of a results file.
    Implementations named but not installed are rows with a note. isolate: each implementation
    timed in its own process (attncore.bench.isolated)."""
    wanted = list(names or impls.IMPLS)
    rows, cores = [], machine.cores()
    for n in sizes:
        for causal in (False, True):
            active = [name for name in wanted if skip_reason(name, n, naive_budget_gib, numpy_flash_max) is None
                      and impls.missing(name) is None]
            load = machine.load_average()
            repeat_seconds, errors, sgemm, details, notes = time_size(n, causal, active, repeats, pause=pause,
                                                                      threads=threads, isolate=isolate)
            q, k, v = impls.inputs(n, D)
            for name in wanted:
                note = skip_reason(name, n, naive_budget_gib, numpy_flash_max) or impls.missing(name) or notes.get(name)
                row = {"n": n, "causal": causal, "impl": name, "note": note, "load_average": load}
                if name in errors:
                    row["max_error"] = errors[name]
                    row["error_bound"] = impls.tolerance(name)
                if name in details:
                    row["details"] = dict(details[name])
                    cpu = row["details"].pop("repeat_cpu_seconds", None)
                    if cpu:
                        row["repeat_cpu_seconds"], row["cpu_seconds"] = cpu, statistics.median(cpu)
                    if details[name].get("backend"):
                        row["backend"] = details[name]["backend"]
                if name in repeat_seconds:
                    seconds = statistics.median(repeat_seconds[name])
                    # the peers' allocators are not traced; RSS of the course's own and PyTorch
                    traced = (memory.traced(functools.partial(impls.IMPLS[name], q, k, v, causal))
                              if name in impls.TRACED else None)
                    resident = memory.rss(name, n, D, causal) if rss and not causal and name in impls.RSS else None
                    row.update(
                        seconds=seconds, repeat_seconds=repeat_seconds[name], gflops=flops(n, causal) / seconds / 1e9,
                        traced_bytes=traced, rss_bytes=resident,
                        # each method misses some memory (see memory.py): keep the larger
                        peak_bytes=max((b for b in (traced, resident) if b is not None), default=None),
                        sgemm_1t_gflops=sgemm,
                    )
                    if sgemm:
                        row["sgemm_fraction"] = row["gflops"] / (sgemm * cores)
                rows.append(row)
            if log:
                log(f"  measured N = {n}, causal = {causal}")
    return rows


def peer_ratios(rows: list[dict], base: str = "jit", peers: Sequence[str] | None = None) -> list[dict]:
    """[{n, causal, impl, ratio}]: each implementation's time over base's, the median over the
    rounds of the ratio within each round (> 1: base is faster); None where either did not run."""
    peers = peers or sorted({r["impl"] for r in rows} - {base})
    out = []
    for n, causal in sorted({(r["n"], r["causal"]) for r in rows}):
        mine = lookup(rows, n, causal, base, "repeat_seconds")
        for impl in peers:
            theirs = lookup(rows, n, causal, impl, "repeat_seconds")
            out.append({"n": n, "causal": causal, "impl": impl, "ratio": paired(mine, theirs),
                        "max_error": lookup(rows, n, causal, impl, "max_error"),
                        "note": lookup(rows, n, causal, impl, "note")})
    return out


def lookup(rows: list[dict], n: int, causal: bool, impl: str, key: str = "seconds"):
    return next((r.get(key) for r in rows if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def side_by_side(rows: list[dict], n: int, causal: bool, impl: str, other: str) -> float | None:
    """How many times as fast impl ran as other: the median over the repeats of other's time
    over impl's in the same repeat; None if either did not run."""
    mine, theirs = (lookup(rows, n, causal, name, "repeat_seconds") for name in (impl, other))
    return paired(mine, theirs)


def ratios(rows: list[dict]) -> list[dict]:
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


def compile_cost() -> dict | None:
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
