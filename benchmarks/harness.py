"""Attention on the CPU: naive NumPy, NumPy FlashAttention, Numba FlashAttention, PyTorch SDPA.

    python -m benchmarks.harness                    # N = 512 ... 16384, about 4 minutes
    python -m benchmarks.harness --sizes 1024 4096
    python -m benchmarks.harness --quick --figures book/figures   # small sizes, for the book

float32, one head of width d = 64, causal and not. Within each repeat the
implementations run one after another, so ratios compare calls made side by
side (each timed call right after an untimed one of its own); the table shows
the median. FLOPs: 4 N^2 d (two matmuls), half of it
when causal. Results go to --out as JSON with the machine description.
"""
import os

# Three thread pools share the cores: OpenBLAS (NumPy), Numba's OpenMP and torch's own
# OpenMP. Idle workers of each spin-wait and take the cores from the next (timed)
# call of another: measured 5-20x slower calls at N = 256 on 2 cores. So, before
# any of them loads: OpenBLAS workers sleep after 2^4 cycles (the minimum; default
# 2^28), OpenMP workers sleep at once. Either can be overridden from outside.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from . import impls, machine, memory  # noqa: E402

SIZES = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (256, 512, 1024)
D = 64
ITEMSIZE = 4  # float32
NAIVE_MATRICES = 3  # naive holds scores, exp and weights, (N, N) each, at its peak (tracemalloc)
OUT = Path(__file__).parent / "out" / "results.json"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", help=f"sequence lengths (default {SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZES}, 3 repeats, no cache check")
    parser.add_argument("--repeats", type=int, help="timed calls per implementation (default 5, quick 3)")
    parser.add_argument("--naive-budget-gib", type=float, default=2.0, help="skip naive above this many GiB")
    parser.add_argument("--numpy-flash-max", type=int, default=4096, help="largest N for the NumPy tiles")
    parser.add_argument("--no-rss", action="store_true", help="skip the per-call subprocess RSS measurement")
    parser.add_argument("--no-compile-check", action="store_true", help="skip the Numba cache check")
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON results (default {OUT})")
    parser.add_argument("--figures", type=Path, help="write time and memory figures (PNG) here")
    args = parser.parse_args(argv)
    args.sizes = tuple(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.no_compile_check = args.no_compile_check or args.quick
    return args


def flops(n, causal):
    return 4 * n * n * D / (2 if causal else 1)


def naive_bytes(n):
    """Peak of naive attention, estimated: NAIVE_MATRICES float32 (N, N) arrays."""
    return NAIVE_MATRICES * n * n * ITEMSIZE


def skip_reason(name, n, args):
    if name == "naive" and naive_bytes(n) > args.naive_budget_gib * 2**30:
        return f"skipped: ~{naive_bytes(n) / 2**30:.1f} GiB > --naive-budget-gib {args.naive_budget_gib:g}"
    if name == "numpy_flash" and n > args.numpy_flash_max:
        return f"skipped: too slow above --numpy-flash-max {args.numpy_flash_max}"
    return None


def matmul_peak(n=4096, repeats=3):
    """GFLOP/s of a float32 (n, n) @ (n, n) np.matmul: the machine's practical peak."""
    a, b = (np.random.default_rng(i).standard_normal((n, n), dtype=np.float32) for i in range(2))
    a @ b
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * n**3 / statistics.median(times) / 1e9


COMPILE_PROBE = """
import time
start = time.perf_counter()
import numpy as np
from attncore import jit
imported = time.perf_counter()
x = np.ones((1, 1, 64, 64), np.float32)
jit.flash_attention(x, x, x)
called = time.perf_counter()
stats = jit._flash.stats
print(imported - start, called - imported, sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def compile_cost():
    """First call of jit.flash_attention in two fresh processes sharing an empty NUMBA_CACHE_DIR."""
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty cache", "cache hit"):
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append({"run": label, "import_s": float(out[0]), "first_call_s": float(out[1]),
                         "cache_hits": int(out[2]), "cache_misses": int(out[3])})
        index_files = len(list(Path(cache).rglob("*.nbi")))
    return {"runs": runs, "index_files": index_files}


def time_size(n, causal, names, repeats):
    """Median seconds per implementation, interleaved; also each output's max |error| vs float64.

    Each timed call follows an untimed call of the same implementation: a call made
    right after single-threaded NumPy work or a pause starts on an idled core, and
    measured up to 1.5x slower (jit more than torch) on this 2-vCPU machine.
    """
    q, k, v = impls.inputs(n, D)
    outputs = {name: impls.IMPLS[name](q, k, v, causal) for name in names}  # warm-up
    reference = impls.float64_reference(q, k, v, causal)
    errors = {name: float(np.max(np.abs(out - reference))) for name, out in outputs.items()}
    del outputs, reference
    times = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            impls.IMPLS[name](q, k, v, causal)
            start = time.perf_counter()
            impls.IMPLS[name](q, k, v, causal)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, errors


def run(args):
    names = impls.available()
    peak = matmul_peak()
    rows = []
    for n in args.sizes:
        for causal in (False, True):
            active = [name for name in names if skip_reason(name, n, args) is None]
            seconds, errors = time_size(n, causal, active, args.repeats)
            q, k, v = impls.inputs(n, D)
            for name in names:
                row = {"n": n, "causal": causal, "impl": name, "note": skip_reason(name, n, args)}
                if name in seconds:
                    fn = impls.IMPLS[name]
                    traced = None if name == "torch" else memory.traced(lambda: fn(q, k, v, causal))
                    rss = None if args.no_rss else memory.rss(name, n, D, causal)
                    row.update(
                        seconds=seconds[name], gflops=flops(n, causal) / seconds[name] / 1e9,
                        max_error=errors[name], traced_bytes=traced, rss_bytes=rss,
                        # each method misses some memory (see benchmarks/memory.py): keep the larger
                        peak_bytes=max((b for b in (traced, rss) if b is not None), default=None),
                    )
                    row["peak_fraction"] = row["gflops"] / peak
                rows.append(row)
            print(f"  measured N = {n}, causal = {causal}", file=sys.stderr, flush=True)
    return peak, rows


def lookup(rows, n, causal, impl, key):
    return next((r.get(key) for r in rows if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def ratios(rows):
    """Per N: jit vs torch and naive (throughput), causal speedups, naive / jit peak memory."""
    out = []
    for n in sorted({r["n"] for r in rows}):
        entry = {"n": n}
        for causal in (False, True):
            tag = "causal" if causal else "full"
            jit, torch, naive = (lookup(rows, n, causal, i, "seconds") for i in ("jit", "torch", "naive"))
            entry[f"jit_vs_torch_{tag}"] = torch / jit if jit and torch else None
            entry[f"jit_vs_naive_{tag}"] = naive / jit if jit and naive else None
        for name in ("jit", "torch", "naive"):
            full, causal = (lookup(rows, n, c, name, "seconds") for c in (False, True))
            entry[f"causal_speedup_{name}"] = full / causal if full and causal else None
        jit_bytes = lookup(rows, n, False, "jit", "peak_bytes")
        naive_measured = lookup(rows, n, False, "naive", "peak_bytes")
        entry["naive_estimated"] = naive_measured is None
        naive = naive_measured or naive_bytes(n)
        entry["naive_vs_jit_memory"] = naive / jit_bytes if jit_bytes else None
        out.append(entry)
    return out


def fmt(value, spec, scale=1, missing="-"):
    return missing if value is None else format(value * scale, spec)


def print_rows(columns, records):
    """columns: (title, width, cell(record) -> str); right-aligned, one line per record."""
    header = " ".join(f"{title:>{width}}" for title, width, _ in columns)
    print(header + "\n" + "-" * len(header))
    for record in records:
        print(" ".join(f"{cell(record):>{width}}" for _, width, cell in columns))


UNTRACED = {"torch": "n/a"}  # its allocator bypasses tracemalloc
TIMING_COLUMNS = [
    ("N", 6, lambda r: str(r["n"])),
    ("causal", 6, lambda r: str(r["causal"])),
    ("impl", 11, lambda r: r["impl"]),
    ("time ms", 9, lambda r: fmt(r.get("seconds"), ".2f", 1e3)),
    ("GFLOP/s", 8, lambda r: fmt(r.get("gflops"), ".1f")),
    ("%peak", 6, lambda r: fmt(r.get("peak_fraction"), ".1f", 100)),
    ("traced MiB", 10, lambda r: fmt(r.get("traced_bytes"), ".2f", 2**-20, UNTRACED.get(r["impl"], "-"))),
    ("RSS MiB", 8, lambda r: fmt(r.get("rss_bytes"), ".2f", 2**-20)),
    ("max|err|", 8, lambda r: fmt(r.get("max_error"), ".1e")),
    ("", 1, lambda r: ""),
]
RATIO_COLUMNS = [
    ("N", 6, lambda t: str(t["n"])),
    ("jit/torch", 9, lambda t: fmt(t["jit_vs_torch_full"], ".2f")),
    ("(causal)", 9, lambda t: fmt(t["jit_vs_torch_causal"], ".2f")),
    ("jit/naive", 9, lambda t: fmt(t["jit_vs_naive_full"], ".2f")),
    ("(causal)", 9, lambda t: fmt(t["jit_vs_naive_causal"], ".2f")),
    ("causal x jit", 12, lambda t: fmt(t["causal_speedup_jit"], ".2f")),
    ("torch", 6, lambda t: fmt(t["causal_speedup_torch"], ".2f")),
    ("naive", 6, lambda t: fmt(t["causal_speedup_naive"], ".2f")),
    ("naive/jit memory", 16, lambda t: fmt(t["naive_vs_jit_memory"], ".0f") + "*" * t["naive_estimated"]),
]


def print_table(peak, rows, table):
    print(f"\nmatmul peak (4096^2 float32 np.matmul): {peak:.1f} GFLOP/s\n")
    print_rows(TIMING_COLUMNS, rows)
    for r in rows:
        if r["note"]:
            print(f"  N = {r['n']}, causal = {r['causal']}, {r['impl']}: {r['note']}")
    print("traced: tracemalloc peak in this process (torch: n/a, its allocator is not traced).\n"
          "RSS: resident high-water mark of the call in a fresh subprocess (all allocators, touched pages).\n"
          "max|err|: largest difference from the same attention computed in float64.\n")
    print_rows(RATIO_COLUMNS, table)
    print("jit/x: throughput of jit over that of x (> 1: jit is faster). causal x: non-causal time over\n"
          "causal time. naive/jit memory: the larger of traced and RSS, non-causal; * = naive not run,\n"
          f"estimated as {NAIVE_MATRICES} float32 (N, N) arrays.")


def print_header(info, args):
    print(f"attncore attention benchmark, {info['date']}")
    print(f"CPU: {info['cpu']}, {info['cores']} cores; Python {info['python']}; "
          + ", ".join(f"{p} {v}" for p, v in info["versions"].items() if v))
    if "numba_threads" in info:
        print(f"Numba: {info['numba_threads']} threads, threading layer {info['numba_threading_layer']}")
    print("environment: " + ", ".join(f"{k}={v}" for k, v in info["env"].items() if v is not None))
    print(f"load average at start: {fmt(info['load_average'], '.2f')} (on {info['cores']} cores)")
    slow = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if info["env"][k]]
    if slow:
        print(f"note: {' and '.join(slow)} are set; they slow NumPy's BLAS here, and are left as they are.")
    print(f"float32, d = {D}, one head; sizes {list(args.sizes)}; "
          f"median of {args.repeats} interleaved repeats")


def numba_info():
    """Thread count and threading layer, after one parallel call."""
    import numba

    from attncore import jit

    x = np.ones((1, 4, 4), np.float32)
    jit.flash_attention(x, x, x)
    return {"numba_threads": numba.config.NUMBA_NUM_THREADS, "numba_threading_layer": numba.threading_layer()}


def figures(rows, directory):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    names = [name for name in impls.IMPLS if any(r["impl"] == name and "seconds" in r for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, causal in zip(axes, (False, True)):
        for name in names:
            points = [(r["n"], r["seconds"]) for r in rows
                      if r["impl"] == name and r["causal"] == causal and "seconds" in r]
            ax.loglog(*zip(*points), marker="o", label=name)
        ax.set(title="causal" if causal else "non-causal", xlabel="sequence length N")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("time per call (s), float32, d = 64")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(directory / "attention_time.png", dpi=150)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 4))
    for name in names:
        points = [(r["n"], r["peak_bytes"] / 2**20) for r in rows
                  if r["impl"] == name and not r["causal"] and r.get("peak_bytes")]
        if points:
            ax.loglog(*zip(*points), marker="o", label=name)
    ax.set(xlabel="sequence length N", ylabel="peak extra memory (MiB)",
           title="memory, non-causal (max of tracemalloc, RSS)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(directory / "attention_memory.png", dpi=150)
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    info = machine.info()
    if "jit" in impls.available():
        info.update(numba_info())
    print_header(info, args)
    results = {"machine": info, "settings": {"d": D, "dtype": "float32", "sizes": list(args.sizes),
                                             "repeats": args.repeats}}
    if not args.no_compile_check and "jit" in impls.available():
        results["compile_cost"] = cost = compile_cost()
        print("\ncompile cost of jit.flash_attention (fresh process, temporary NUMBA_CACHE_DIR):")
        for r in cost["runs"]:
            print(f"  {r['run']:<12} import {r['import_s']:.2f} s, first call {r['first_call_s']:.2f} s "
                  f"(cache hits {r['cache_hits']}, misses {r['cache_misses']})")
        print(f"  {cost['index_files']} cache index files written")
    peak, rows = run(args)
    table = ratios(rows)
    print_table(peak, rows, table)
    print(f"load average at end: {fmt(machine.load_average(), '.2f')}")
    results.update(matmul_peak_gflops=peak, rows=rows, ratios=table, load_average_end=machine.load_average())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {args.out}")
    if args.figures:
        figures(rows, args.figures)
        print(f"wrote figures to {args.figures}")


if __name__ == "__main__":
    main()
