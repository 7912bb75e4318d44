"""Interleaved timing of the implementations, errors against float64, the ratios of a run.

Within each repeat the implementations run one after another (each timed call right
after untimed ones of its own), so two calls of one repeat ran side by side: the ratio
of two implementations is the median over the repeats of their ratio within a repeat,
and a slow phase of the machine that hits one repeat moves neither. Times are medians.
FLOPs: 4 N^2 d (two matmuls), half of it when causal. Each repeat also times one float32
(1024, 1024) product on one BLAS thread, so the kernel's rate can be compared with the
single-thread sgemm rate measured beside it.

A pause (PAUSE seconds, settable, recorded in the results) comes before each timed call's
untimed calls, so that no thread pool still spinning from the previous implementation's call
(OpenBLAS, OpenMP, oneDNN/TBB under OpenVINO, ONNX Runtime's pool, XLA's Eigen pool) takes a
core from the next one. After the pause the implementation runs untimed for at least WARMUP
seconds (at least one call), because one call was not enough to wake the machine: on a
2-core Emerald Rapids VM, after a 50 ms pause, decoding at T_k = 4096 (1.2 ms warm) took
2.0 ms after one untimed call and 1.2 ms after 10 ms of them, while a chain of scalar adds
ran at full speed at once and a compute-bound call (N = 1024) within 10% of it. So it is
the memory system that wakes slowly, and the calls that stream memory and last a few ms
paid for it; a call longer than WARMUP is still called untimed exactly once.

The peers of attncore.bench.peers are prepared once per size (their fast-path layout,
compiled graphs, thread counts) and checked against float64 before any timing; one that
fails to import or prepare, or errs beyond its bound, is a row with a note saying why,
never a missing row.
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

from . import impls, isolated, machine, memory

D = 64
ITEMSIZE = 4  # float32
SGEMM_N = 1024


def flops(n, causal, d=D):
    return 4 * n * n * d / (2 if causal else 1)


def naive_bytes(n, name="naive"):
    """Peak of a naive implementation, estimated: its float32 (N, N) arrays."""
    return impls.MATRICES[name] * n * n * ITEMSIZE


def skip_reason(name, n, naive_budget_gib=2.0, numpy_flash_max=2048):
    """Why implementation `name` is not run at size n (a sentence), or None: the matrices
    would exceed the memory budget, or the NumPy tiles would take too long."""
    if name in impls.MATRICES and naive_bytes(n, name) > naive_budget_gib * 2**30:
        return f"skipped: ~{naive_bytes(n, name) / 2**30:.1f} GiB > naive budget {naive_budget_gib:g} GiB"
    if name == "numpy_flash" and n > numpy_flash_max:
        return f"skipped: too slow above N = {numpy_flash_max}"
    return None


PAUSE = 0.05  # seconds of sleep before each timed call (see the module's docstring)
WARMUP = 0.02  # seconds of untimed calls, at least one, between the pause and the timed call


def timed(fn, pause=PAUSE, sleep=time.sleep, clock=time.perf_counter, cpu=None, warmup=WARMUP):
    """Seconds of one call of fn(): after a pause, then untimed calls for at least warmup seconds
    (at least one: a call right after other work or a pause starts on an idled machine). cpu: a
    list that gets the process's CPU seconds of the timed call (every thread's, so about
    threads x wall when it has the cores to itself; far less when other jobs take them; Linux
    counts the other threads' time at scheduler ticks, so a call of a few ms can read as one
    thread's: decoding at T_k = 4096, 1.4 ms on 2 threads, read 1.01 x wall call by call and
    1.99 over 50 calls, on the course machine). An
    isolated.Call does all this in its own worker process."""
    if isinstance(fn, isolated.Call):
        seconds, cpu_seconds = fn.timed(pause, warmup)
        if cpu is not None:
            cpu.append(cpu_seconds)
        return seconds
    if pause:
        sleep(pause)
    warm_start = clock()
    fn()  # untimed
    while clock() - warm_start < warmup:
        fn()
    cpu_start, start = time.process_time(), clock()
    fn()
    seconds = clock() - start
    if cpu is not None:
        cpu.append(time.process_time() - cpu_start)
    return seconds


def rounds(calls, repeats, pause=PAUSE, between=None, sleep=time.sleep, clock=time.perf_counter, cpu=None,
           warmup=WARMUP):
    """{name: [seconds of each round]}: in each round every call of `calls` ({name: fn}) is timed
    once, in order, each after its pause and warm-up (timed); between() (if given) runs at the
    end of each round. cpu: a dict that gets {name: [CPU seconds of each round]}."""
    times = {name: [] for name in calls}
    for name in calls if cpu is not None else ():
        cpu[name] = []
    for _ in range(repeats):
        for name, fn in calls.items():
            times[name].append(timed(fn, pause, sleep, clock, None if cpu is None else cpu[name], warmup))
        if between:
            between()
    return times


def paired(mine, theirs):
    """Median over the rounds of theirs / mine within each round (None if either is missing)."""
    if not mine or not theirs:
        return None
    return statistics.median(t / s for s, t in zip(mine, theirs, strict=True))


def thread_scaling(call_on, counts=(1, 2), repeats=5, pause=PAUSE, warmup=WARMUP):
    """How a call speeds up with threads: call_on(n) is the call to time on n threads.
    {"seconds": {n: median seconds}, "speedup": {n: median over the rounds of the time on
    counts[0] threads over the time on n}}, the calls of each round timed side by side."""
    times = rounds({n: call_on(n) for n in counts}, repeats, pause, warmup=warmup)
    return {"seconds": {n: statistics.median(t) for n, t in times.items()},
            "speedup": {n: paired(times[n], times[counts[0]]) for n in counts}}


def check(names, q, k, v, causal, reference, threads, isolate=False):
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


def time_size(n, causal, names, repeats, d=D, sgemm=True, pause=PAUSE, threads=None, isolate=False):
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
                    fn = impls.IMPLS[name]
                    seconds = statistics.median(repeat_seconds[name])
                    # the peers' allocators are not traced; RSS of the course's own and PyTorch
                    traced = memory.traced(lambda: fn(q, k, v, causal)) if name in impls.TRACED else None
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


def peer_ratios(rows, base="jit", peers=None):
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


def lookup(rows, n, causal, impl, key="seconds"):
    return next((r.get(key) for r in rows if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def side_by_side(rows, n, causal, impl, other):
    """How many times as fast impl ran as other: the median over the repeats of other's time
    over impl's in the same repeat; None if either did not run."""
    mine, theirs = (lookup(rows, n, causal, name, "repeat_seconds") for name in (impl, other))
    return paired(mine, theirs)


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
