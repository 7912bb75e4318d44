"""Attention on the CPU: careful and textbook NumPy, NumPy tiles, attncore.jit, PyTorch SDPA.

    python -m benchmarks.harness                    # N = 512 ... 16384, several minutes
    python -m benchmarks.harness --sizes 1024 4096
    python -m benchmarks.harness --quick            # N = 256, 512, 1024; 3 repeats; no RSS
    python -m benchmarks.harness --decode           # also decoding: 32/8 heads, d = 128, T_k 4096, 32768
    python -m benchmarks.harness --decode-only --decode-long   # decoding alone, T_k up to 131072
    python -m benchmarks.harness --publish          # the course's published run (see below)

float32, (batch, heads) = (1, 1), d = 64, causal and not, on every core. Within each
repeat the implementations run one after another (see attncore.bench.timing): times
are medians, and jit/x is the median of the ratios within each repeat. Peak two ways:
theoretical (cores x FMA pipes x lanes x 2 x clock) and measured (single-thread sgemm
rate per core x cores, timed beside each size); bandwidth of a large copy on one core
and on all of them, for the sloped roof.
The CPU peers (attncore.bench.peers, `pip install -e ".[bench-peers]"`): PyTorch SDPA, ONNX
Runtime, OpenVINO in float32 and in its default precision, JAX, each in its fast-path layout;
and jit's own bfloat16 products (precision="bf16", vdpbf16ps where the CPU has it, and
"bf16_emulated"), timed like a peer, so their row is bf16 time / float32 time;
checked against float64 before it is timed; a peer that is missing or errs beyond its bound is
a row with the reason. Each implementation runs in a worker process of its own,
stopped while another one is timed (attncore.bench.isolated), so no two thread pools meet;
every timed call comes after a pause (--pause) and untimed calls (timing.WARMUP); peer/jit is the median
over the rounds of the ratio within a round.
Results go to --out as JSON with the machine description (CPU, ISA, caches, measured clock,
sgemm peak, bandwidth), the commit measured and the method as run (pause, warm-up, processes,
thread policy): the book's "how this was measured" boxes are read from these fields.

--publish is the run the book reads: every implementation and peer at N = 512 ... 16384 and
decoding up to T_k = 131072, written to attncore/bench/results/DATE-CPU-COMMIT.json, where
both pages of chapter 7 find it (attncore.bench.published: the newest file that holds their
runs). It refuses to run when attncore/ differs from the commit, since the file names that
commit as the code it measured. Run it on a quiet machine, then commit the file.
"""
import argparse
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np  # noqa: F401  (after benchmarks/__init__ has set the thread settings)

from attncore import bench
from attncore.bench import clock, stopwatch, timing

SIZES = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (256, 512, 1024)
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "results.json"
PUBLISHED = ROOT / "attncore" / "bench" / "results"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", help=f"sequence lengths (default {SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SIZES}, 3 repeats, no RSS, no cache check")
    parser.add_argument("--repeats", type=int, help="timed calls per implementation (default 5, quick 3)")
    parser.add_argument("--impls", nargs="+", choices=list(bench.IMPLS), help="only these implementations")
    parser.add_argument("--naive-budget-gib", type=float, default=2.0, help="skip a naive one above this many GiB")
    parser.add_argument("--numpy-flash-max", type=int, default=2048, help="largest N for the NumPy tiles")
    parser.add_argument("--no-rss", action="store_true", help="skip the per-call subprocess RSS measurement")
    parser.add_argument("--no-compile-check", action="store_true", help="skip the Numba cache check")
    parser.add_argument("--pause", type=float, default=stopwatch.PAUSE,
                        help=f"seconds of sleep before each timed call, so no thread pool still spins "
                             f"(default {stopwatch.PAUSE})")
    parser.add_argument("--decode", action="store_true", help="also the decode scenario (attncore.bench.decode)")
    parser.add_argument("--decode-only", action="store_true", help="the decode scenario alone")
    parser.add_argument("--decode-long", action="store_true", help=f"decode also at T_k = {bench.decode.LONG_T_K}")
    parser.add_argument("--decode-t-k", type=int, nargs="+", help=f"decode KV lengths (default {bench.decode.T_KS})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON results (default {OUT})")
    parser.add_argument("--publish", action="store_true",
                        help=f"the book's run: every size, peer and decoding length, into {PUBLISHED}")
    args = parser.parse_args(argv)
    if args.publish:  # the published settings, whatever else the command line says
        args.sizes = args.impls = args.decode_t_k = args.repeats = None
        args.quick = args.decode_only = args.no_rss = args.no_compile_check = False
        args.decode_long, args.pause = True, stopwatch.PAUSE
    args.decode = args.decode or args.decode_only or args.decode_long or bool(args.decode_t_k)
    longest = (bench.decode.LONG_T_K,) if args.decode_long else ()
    args.decode_t_k = tuple(args.decode_t_k or bench.decode.T_KS) + longest
    args.sizes = tuple(args.sizes or (QUICK_SIZES if args.quick else SIZES))
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.no_compile_check = args.no_compile_check or args.quick
    args.no_rss = args.no_rss or args.quick
    return args


def fmt(value, spec, scale=1, missing="-"):
    return missing if value is None else format(value * scale, spec)


def print_rows(columns, records):
    """columns: (title, width, cell(record) -> str); right-aligned, one line per record."""
    header = " ".join(f"{title:>{width}}" for title, width, _ in columns)
    print(header + "\n" + "-" * len(header))
    for record in records:
        print(" ".join(f"{cell(record):>{width}}" for _, width, cell in columns))


UNTRACED = {name: "n/a" for name in bench.peers.PEER_NAMES}  # their allocators bypass tracemalloc
TIMING_COLUMNS = [
    ("N", 6, lambda r: str(r["n"])),
    ("causal", 6, lambda r: str(r["causal"])),
    ("impl", 11, lambda r: r["impl"]),
    ("time ms", 9, lambda r: fmt(r.get("seconds"), ".2f", 1e3)),
    ("GFLOP/s", 8, lambda r: fmt(r.get("gflops"), ".1f")),
    ("%sgemm", 6, lambda r: fmt(r.get("sgemm_fraction"), ".0f", 100)),
    ("traced MiB", 10, lambda r: fmt(r.get("traced_bytes"), ".2f", 2**-20, UNTRACED.get(r["impl"], "-"))),
    ("RSS MiB", 8, lambda r: fmt(r.get("rss_bytes"), ".2f", 2**-20)),
    ("max|err|", 8, lambda r: fmt(r.get("max_error"), ".1e")),
    ("cpu/wall", 8, lambda r: fmt(r["cpu_seconds"] / r["seconds"] if r.get("cpu_seconds") else None, ".2f")),
    ("", 1, lambda r: ""),
]
RATIO_COLUMNS = [
    ("N", 6, lambda t: str(t["n"])),
    ("jit/torch", 9, lambda t: fmt(t["jit_vs_torch_full"], ".2f")),
    ("(causal)", 9, lambda t: fmt(t["jit_vs_torch_causal"], ".2f")),
    ("jit/naive", 9, lambda t: fmt(t["jit_vs_naive_full"], ".2f")),
    ("(causal)", 9, lambda t: fmt(t["jit_vs_naive_causal"], ".2f")),
    ("%sgemm", 6, lambda t: fmt(t["jit_sgemm_fraction_full"], ".0f", 100)),
    ("causal x jit", 12, lambda t: fmt(t["causal_speedup_jit"], ".2f")),
    ("torch", 6, lambda t: fmt(t["causal_speedup_torch"], ".2f")),
    ("naive RSS/jit", 13, lambda t: fmt(t["naive_vs_jit_rss"], ".0f")),
]


PEER_TITLES = {name: title for name, title in bench.peers.TITLES.items() if name != "jit"}


def peer_table(results):
    """Peer time / jit time (median of the paired rounds), with each peer's max |error|."""
    table = results.get("peer_ratios") or []
    names = [name for name in PEER_TITLES if any(e["impl"] == name for e in table)]
    if not names:
        return

    def cell(r, name):
        e = next(e for e in table if (e["n"], e["causal"], e["impl"]) == (*r, name))
        return (fmt(e["ratio"], ".2f") + f" ({fmt(e['max_error'], '.0e')})") if e["ratio"] else "skipped"

    columns = [("N", 6, lambda r: str(r[0])), ("causal", 6, lambda r: str(r[1]))] + [
        (PEER_TITLES[name], 18, lambda r, name=name: cell(r, name))
        for name in names]
    print("\npeer time / jit time (median over paired rounds), (max |error| against float64):")
    print_rows(columns, sorted({(e["n"], e["causal"]) for e in table}))
    for r in results["rows"]:
        if r["impl"] in PEER_TITLES and r.get("details"):
            d = r["details"]
            if r["n"] == results["rows"][0]["n"]:
                print(f"  {r['impl']} (causal={r['causal']}): {d.get('backend')}, layout {d.get('layout')}, "
                      f"threads {d.get('threads')}" + (f", precision {d['precision']}" if d.get("precision") else ""))


def decode_table(dec):
    roof = dec["roof"]
    s = dec["settings"]
    print(f"\ndecode: B = 1, H_q = {s['h_q']}, H_kv = {s['h_kv']}, d = {s['d']}, float32, {s['threads']} threads; "
          f"roof at {roof['threads']} threads: read {roof['read_gbs']:.1f} GB/s, copy {roof['copy_gbs']:.1f} GB/s")
    columns = [
        ("T_k", 7, lambda r: str(r["t_k"])), ("T_q", 3, lambda r: str(r["t_q"])), ("impl", 16, lambda r: r["impl"]),
        ("time ms", 9, lambda r: fmt(r.get("seconds"), ".2f", 1e3)), ("GB/s", 6, lambda r: fmt(r.get("gbs"), ".1f")),
        ("%read", 5, lambda r: fmt(r.get("paired_read_fraction"), ".0f", 100)),
        ("%kv", 4, lambda r: fmt(r.get("kv_read_fraction"), ".0f", 100)),
        ("%roof", 5, lambda r: fmt(r.get("read_fraction"), ".0f", 100)),
        ("%copy", 5, lambda r: fmt(r.get("copy_fraction"), ".0f", 100)),
        ("torch/x", 7, lambda r: fmt(r.get("torch_over_this"), ".2f")),
        ("cpu/wall", 8, lambda r: fmt(r["cpu_seconds"] / r["seconds"] if r.get("seconds") else None, ".2f")),
        ("max|err|", 8, lambda r: fmt(r.get("max_error"), ".1e")),
        ("backend", 1, lambda r: " " + str((r.get("details") or {}).get("backend", ""))),
    ]
    print_rows(columns, dec["rows"])
    for r in dec["rows"]:
        if r["note"]:
            print(f"  T_k = {r['t_k']}, T_q = {r['t_q']}, {r['impl']}: {r['note']}")
    print("readers, timed in the same rounds:")
    for r in dec["reads"]:
        measured = r["note"] or f"{r['seconds'] * 1e3:.2f} ms, {r['gbs']:.1f} GB/s"
        print(f"  T_k = {r['t_k']}, T_q = {r['t_q']}, {r['reader']}: {measured}")
    print("GB/s: bytes of K and V read once over the median time. %read, %kv: its GB/s over that of a reader of a\n"
          "large array (from memory) and of the same K and V, in the same rounds, the median over the rounds;\n"
          "%roof, %copy: of the roofs measured once, before the rounds.\n"
          "torch/x: torch's time over this one's, the median over paired rounds.\n"
          "cpu/wall: the worker process's CPU seconds over wall seconds of the call (about the threads used when\n"
          "the cores are free, spinning ones too: an OpenMP pool spins; less when other jobs take them). Linux adds\n"
          "the other threads' CPU time at scheduler ticks, so for a call of a few ms it can read 1 or above the\n"
          "threads.")


def print_table(results):
    peak = results["peak"]
    theory = peak["theoretical"]
    print(f"\npeak, theoretical: {theory['cores']} cores x {theory['fma_pipes']} FMA pipes x {theory['lanes']} lanes "
          f"x 2 x {fmt(theory['clock_ghz'], '.2f')} GHz = {fmt(theory['gflops'], '.1f')} GFLOP/s")
    print(f"peak, measured: single-thread sgemm {fmt(peak['sgemm_1t_gflops'], '.1f')} GFLOP/s x "
          f"{theory['cores']} cores = {fmt(peak['measured_gflops'], '.1f')} GFLOP/s (median over the run)")
    bw = peak.get("bandwidth") or {}
    print(f"bandwidth (large copy): one core {fmt(bw.get('per_core_gbs'), '.1f')} GB/s, "
          f"{theory['cores']} cores {fmt(bw.get('all_cores_gbs'), '.1f')} GB/s\n")
    rows = results["rows"]
    print_rows(TIMING_COLUMNS, rows)
    for r in rows:
        if r["note"]:
            print(f"  N = {r['n']}, causal = {r['causal']}, {r['impl']}: {r['note']}")
    backends = sorted({r["backend"] for r in rows if r.get("backend") and r["impl"] == "torch"})
    if backends:
        print(f"torch SDPA backend: {', '.join(backends)}")
    print("%sgemm: GFLOP/s over (single-thread sgemm rate x cores), sgemm timed in the same repeats.\n"
          "traced: tracemalloc peak in this process (torch: n/a). RSS: resident high-water mark of the call\n"
          "in a fresh subprocess, non-causal. max|err|: largest difference from float64.\n")
    print_rows(RATIO_COLUMNS, results["ratios"])
    print("jit/x: throughput of jit over that of x (> 1: jit is faster), the median of the ratios within each repeat.\n"
          "causal x: non-causal time over causal time (medians).")


def print_header(info, args):
    print(f"attncore attention benchmark, {info['date']}")
    print(f"CPU: {info['cpu']}, {info['cores']} cores; Python {info['python']}; "
          + ", ".join(f"{p} {v}" for p, v in info["versions"].items() if v))
    if "jit" in info:
        j = info["jit"]
        print(f"attncore.jit: path {j['path']} ({j['mr']} x {j['nr']['float32']} float32 block, "
              f"{j['accumulators']} accumulators), {info['numba_threads']} threads, "
              f"layer {info['numba_threading_layer']}")
    print("environment: " + ", ".join(f"{k}={v}" for k, v in info["env"].items() if v is not None))
    print(f"load average at start: {fmt(info['load_average'], '.2f')} (on {info['cores']} cores)")
    slow = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if info["env"][k]]
    if slow:
        print(f"note: {' and '.join(slow)} are set; they slow NumPy's BLAS here, and are left as they are.")
    print(f"float32, d = {timing.D}, (batch, heads) = (1, 1); sizes {list(args.sizes)}; "
          f"median of {args.repeats} interleaved repeats, {args.pause:g} s pause before each timed call, then "
          f"untimed calls for {stopwatch.WARMUP:g} s")
    print("ISA: " + ", ".join(flag for flag, present in info["isa"].items() if present))


def method(args, threads):
    """How this run timed its calls, as the book's method boxes read it."""
    return {"pause_s": args.pause, "warmup_s": stopwatch.WARMUP,
            "untimed_calls": "after the pause, untimed calls for at least warmup_s (at least one)",
            "repeats": args.repeats, "threads": threads, "processes": bench.isolated.DESCRIPTION,
            "thread_policy": {"workers": bench.isolated.WORKER_ENV,
                              "harness": {name: value for name, value in bench.THREAD_ENV.items()}}}


def published_path(info):
    """attncore/bench/results/DATE-CPU-COMMIT.json for a run on this machine at this commit."""
    cpu = info.get("jit", {}).get("cpu_name") or re.sub(r"[^a-z0-9]+", "-", info["cpu"].lower()).strip("-")
    return PUBLISHED / f"{info['date'][:10]}-{cpu}-{info['cores']}-cores-{info['source']['commit'][:10]}.json"


def software_info():
    """Thread counts and the jit kernel's shape, after one parallel call."""
    out = {}
    if "jit" in bench.available():
        import numba

        from attncore import jit

        x = np.ones((1, 4, 4), np.float32)
        jit.flash_attention(x, x, x)
        info = jit.kernel_info()
        out.update(numba_threads=numba.get_num_threads(), numba_threading_layer=numba.threading_layer(),
                   jit={k: info[k] for k in ("path", "host_path", "cpu_name", "vector_bits", "mr", "nr",
                                             "accumulators", "block_k")})
    if "torch" in bench.available():
        import torch

        torch.set_num_threads(bench.machine.cores())
        out.update(torch_threads=torch.get_num_threads(), torch_cpu_capability=torch.backends.cpu.get_cpu_capability())
    return out


def main(argv=None):
    args = parse_args(argv)
    info = bench.info()
    info.update(software_info())
    if args.publish:
        if not info["source"] or info["source"]["attncore_modified"]:
            sys.exit("--publish measures a commit: commit attncore/ first (git status -- attncore)")
        args.out = published_path(info)
    print_header(info, args)
    threads = bench.machine.cores()
    results = {"machine": info, "settings": {"d": timing.D, "dtype": "float32", "sizes": list(args.sizes),
                                             "repeats": args.repeats, "naive_budget_gib": args.naive_budget_gib,
                                             "numpy_flash_max": args.numpy_flash_max, "pause_s": args.pause,
                                             "warmup_s": stopwatch.WARMUP,
                                             "threads": threads, "processes": bench.isolated.DESCRIPTION,
                                             "worker_env": bench.isolated.WORKER_ENV,
                                             "method": method(args, threads),
                                             "error_bounds": {name: bench.peers.PEERS[name].tolerance
                                                              for name in bench.peers.PEER_NAMES}}}
    if not args.no_compile_check and not args.decode_only:
        results["compile_cost"] = cost = bench.compile_cost()
        if cost:
            print("\ncompile cost of jit.flash_attention (fresh process, temporary NUMBA_CACHE_DIR):")
            for r in cost["runs"]:
                print(f"  {r['run']:<12} import {r['import_s']:.2f} s, first call {r['first_call_s']:.2f} s "
                      f"(cache hits {r['cache_hits']}, misses {r['cache_misses']})")
            print(f"  {cost['index_files']} cache index files written")

    def log(line):
        print(line, file=sys.stderr, flush=True)

    rows = [] if args.decode_only else bench.run(
        args.sizes, args.repeats, args.naive_budget_gib, args.numpy_flash_max, rss=not args.no_rss, names=args.impls,
        log=log, pause=args.pause, threads=threads, isolate=True)
    rates = [r["sgemm_1t_gflops"] for r in rows if r.get("sgemm_1t_gflops")]
    sgemm = statistics.median(rates) if rates else bench.sgemm_rate()
    theory = bench.theoretical_peak()
    results["peak"] = {"theoretical": theory, "sgemm_1t_gflops": sgemm,
                       "measured_gflops": sgemm * theory["cores"] if sgemm else None,
                       "sgemm_threads": {"threads": threads, "gflops": bench.sgemm_rate(threads=threads),
                                         "method": "(1024, 1024) float32 product on that many BLAS threads, "
                                                   "wall time, fastest of 5"},
                       "bandwidth": bench.bandwidth(),
                       "measured_clock": clock.measured_clock(threads=threads)}
    results.update(rows=rows, ratios=bench.ratios(rows),
                   peer_ratios=bench.peer_ratios(rows, peers=[n for n in bench.peers.PEER_NAMES
                                                              if any(r["impl"] == n for r in rows)]))
    if args.decode:
        names = [n for n in bench.decode.NAMES if not args.impls or n in args.impls]
        bw = results["peak"]["bandwidth"]  # one measurement of each bandwidth per run
        roof = {"threads": threads, "read_gbs": bw["read_all_cores_gbs"], "copy_gbs": bw["all_cores_gbs"],
                "array_mib": bw["array_mib"], "last_level_cache_bytes": info["last_level_cache_bytes"],
                "read_method": bw["read_method"], "copy_method": bw["method"]}
        results["decode"] = bench.decode.run(args.decode_t_k, names=names, repeats=args.repeats, pause=args.pause,
                                             threads=threads, log=log, isolate=True, roof=roof)
    bench.isolated.close()  # the workers' memory, before the tables
    results["load_average_end"] = bench.load_average()
    if rows:
        print_table(results)
        peer_table(results)
    if args.decode:
        decode_table(results["decode"])
    print(f"load average at end: {fmt(results['load_average_end'], '.2f')}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
