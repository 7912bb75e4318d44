"""Read a results file of the harness: the numbers chapter 7 and its peers page print.

Numbers only, each computed from the file's own fields; the words the pages choose from them
live with the book (book/_ext/coursebook). A run of the harness is a dict with "machine",
"settings", "peak", "rows" (one per size, mask and implementation), and where it ran them
"peer_ratios" and "decode" (attncore.bench.parts splits an older two-run file).

Ratios are medians over the harness's paired rounds of the ratio within a round: two calls
of one round ran side by side, so a slow phase of the machine moves both.
"""
import statistics

from .clock import peak_at
from .decode import kv_bytes
from .stopwatch import paired
from .timing import lookup

ROW_FIELDS = ("n", "causal", "impl")


# ------------------------------------------------------------------ the roofline of one run

def _clock(peak: dict) -> float | None:
    """GHz the run measured with every core busy, where its theoretical peak can be recomputed there."""
    theory, clock = peak.get("theoretical") or {}, (peak.get("measured_clock") or {}).get("ghz")
    return clock if clock and theory.get("fma_pipes") and theory.get("lanes") else None


def ceiling(peak: dict) -> tuple[str, float | None]:
    """The one peak a roofline of this run draws, and its name: the theoretical peak at the clock
    the run measured with every core busy, where it measured one (no float32 point can pass it
    unless the assumed pipes and lanes are wrong or the clock moved); else one thread's sgemm
    rate times the cores, a yardstick that a kernel with a faster product than that sgemm can pass."""
    clock = _clock(peak)
    if clock:
        return "theoretical peak at the measured clock", peak_at(peak["theoretical"], clock)
    return "sgemm peak of one thread times the cores", peak.get("measured_gflops")


def ceiling_formula(peak: dict) -> str:
    """How ceiling() is computed, with the run's own numbers: cores × FMA pipes × lanes × 2 × the
    measured clock, or cores × one thread's sgemm rate."""
    clock, theory = _clock(peak), peak.get("theoretical") or {}
    if clock:
        return (f"{theory['cores']} cores × {theory['fma_pipes']} FMA pipes × {theory['lanes']} lanes × 2 × "
                f"{clock:.2f} GHz")
    return f"{theory.get('cores')} cores × {peak.get('sgemm_1t_gflops'):.0f} GFLOP/s of one thread's sgemm"


def ceiling_spread(peak: dict, rows: list[dict] = ()) -> float:
    """How far apart the measurements behind ceiling() lie, relative (max / min - 1): the clock's
    repeated runs, or the sgemm rates the run timed beside its sizes (rows); 0 where it kept one."""
    if _clock(peak):
        runs = peak["measured_clock"].get("runs_ghz") or []
    else:
        runs = [r["sgemm_1t_gflops"] for r in rows if r.get("sgemm_1t_gflops")]
    return max(runs) / min(runs) - 1 if runs else 0.0


def bandwidth(peak: dict) -> float | None:
    """The run's copy bandwidth on all its cores (GB/s, read + write), the sloped roof; None if not measured."""
    return (peak.get("bandwidth") or {}).get("all_cores_gbs")


def ridge(peak: dict) -> float | None:
    """Flop per byte where the sloped roof meets ceiling(): the same cores' peak over their bandwidth."""
    top, bytes_per_s = ceiling(peak)[1], bandwidth(peak)
    return top / bytes_per_s if top and bytes_per_s else None


def ridge_range(peak: dict) -> tuple[float, float] | None:
    """(lowest, highest) ridge over the run's repeated all-core copies (ceiling() over the fastest
    and the slowest copy); (ridge, ridge) where it kept only the fastest; None without a bandwidth."""
    top, runs = ceiling(peak)[1], (peak.get("bandwidth") or {}).get("all_cores_runs_gbs")
    if not top or not bandwidth(peak):
        return None
    runs = runs or [bandwidth(peak)]
    return top / max(runs), top / min(runs)


def points(run: dict, intensities: dict[str, float], n: int = 4096) -> list[tuple[str, float, float]]:
    """[(impl, flop per byte, GFLOP/s)] of the implementations the run timed at N = n, non-causal
    (float32 implementations only: a bfloat16 product has no place under a float32 peak)."""
    rows = run["rows"]
    return [(name, x, lookup(rows, n, False, name, "gflops")) for name, x in intensities.items()
            if lookup(rows, n, False, name, "gflops") and precision(run, name) == "float32"]


def tile_ratios(run: dict) -> dict[tuple[int, bool], float]:
    """{(n, causal): NumPy tiles' time / the textbook formula's time} wherever the run timed both
    (ratio of two medians: the two are timed in the same rounds, so it is paired too)."""
    out = {}
    for n in run["settings"]["sizes"]:
        for causal in (False, True):
            tiles, text = (lookup(run["rows"], n, causal, name, "repeat_seconds")
                           for name in ("numpy_flash", "textbook"))
            if tiles and text:
                out[(n, causal)] = paired(text, tiles)
    return out


# ------------------------------------------------------------------ the peers (prefill)

def peer_entries(run: dict, name: str) -> list[dict]:
    """The run's ratio entries of one peer ({n, causal, impl, ratio, max_error, note}), non-causal first."""
    found = [e for e in run.get("peer_ratios", []) if e["impl"] == name]
    return sorted(found, key=lambda e: (e["causal"], e["n"]))


def peers_in(run: dict) -> list[str]:
    """The implementations in the run's ratio table, in the order they were run."""
    return list(dict.fromkeys(e["impl"] for e in run.get("peer_ratios", [])))


def precision(run: dict, name: str) -> str:
    """'float32', or the reduced precision a peer's products ran in, as it reported it."""
    row = next((r for r in run["rows"] if r["impl"] == name and r.get("details")), None)
    reported = (row or {}).get("details", {}).get("precision")
    return "float32" if reported in (None, "f32", "float32") else reported


# ------------------------------------------------------------------ decoding

def decode_value(run: dict, impl: str, t_k: int, t_q: int, key: str = "seconds"):
    """One field of one decoding row (None if absent)."""
    return next((r.get(key) for r in run["decode"]["rows"] if (r["impl"], r["t_k"], r["t_q"]) == (impl, t_k, t_q)),
                None)


def t_ks(run: dict) -> list[int]:
    return sorted({r["t_k"] for r in run["decode"]["rows"]})


def over_jit(run: dict, impl: str, t_k: int, t_q: int) -> float | None:
    """A decoding peer's time over jit's, the median over the rounds of the ratio within a round."""
    mine, theirs = (decode_value(run, name, t_k, t_q, "repeat_seconds") for name in ("jit", impl))
    return paired(mine, theirs)


def reader_rounds(run: dict, reader: str, t_k: int, t_q: int = 1) -> list[float]:
    """GB/s of a reader ("memory_read": a large array of its own; "kv_read": the step's K and V) in
    each round of one (T_k, T_q); [] if the run did not time it."""
    row = next((r for r in run["decode"].get("reads", []) if (r["reader"], r["t_k"], r["t_q"]) == (reader, t_k, t_q)),
               None)
    if not row or not row.get("repeat_seconds"):
        return []
    return [row["details"]["bytes"] / t / 1e9 for t in row["repeat_seconds"]]


def read_share(run: dict, t_k: int, t_q: int = 1, impl: str = "jit") -> tuple[float | None, str]:
    """(share, against what) of one decoding row's read bandwidth, against the faster of the two
    readers timed in the same rounds (the smaller share): a reader of a large array, from memory,
    and, where the run timed one, a reader of the step's own K and V, which may come from a cache.
    A reference is the best a plain reader did; else the read of a large array measured once."""
    readers = [(decode_value(run, impl, t_k, t_q, key), against) for key, against in (
        ("paired_read_fraction", "a reader of a large array, from memory"),
        ("kv_read_fraction", "a reader of the same K and V"))]
    timed = [(share, against) for share, against in readers if share is not None]
    if timed:
        return min(timed, key=lambda pair: pair[0])
    return decode_value(run, impl, t_k, t_q, "read_fraction"), "a read of a large array measured once"


def chunk_ratio(run: dict, t_k: int, impl: str = "jit") -> float | None:
    """T_q = 4 time over T_q = 1 time at one T_k (two medians: the two ran in different rounds)."""
    one, four = decode_value(run, impl, t_k, 1), decode_value(run, impl, t_k, 4)
    return four / one if one and four else None


def memory_bound(run: dict, t_k: int, t_q: int = 1) -> dict:
    """The two floors of one decoding step: the bytes of K and V over the median GB/s of the reader
    of a large array in the same rounds (else the read measured once), and its flops
    (4 B H_q T_q T_k d) over ceiling(); the intensity and the read ridge between them (the peak
    over that read bandwidth: a decoding step reads, so its roof is a read, not a copy), with
    the range of read ridges over the reader's rounds."""
    s = run["decode"]["settings"]
    size = kv_bytes(t_k, s["h_kv"], s["d"], s["batch"])
    flops = 4 * s["batch"] * s["h_q"] * t_q * t_k * s["d"]
    rounds = reader_rounds(run, "memory_read", t_k)
    gbs = statistics.median(rounds) if rounds else run["decode"]["roof"]["read_gbs"]
    name, peak = ceiling(run["peak"])
    rates = rounds or [gbs]
    return {"bytes": size, "flops": flops, "bandwidth_gbs": gbs, "paired": bool(rounds), "peak_name": name,
            "peak_gflops": peak, "read_s": size / (gbs * 1e9), "compute_s": flops / (peak * 1e9),
            "intensity": flops / size, "ridge": peak / gbs, "ridge_range": (peak / max(rates), peak / min(rates))}


def markdown(rows: list[list[str]]) -> str:
    """A table (header first) as Markdown; a cell must not hold '|'."""
    if any("|" in cell for row in rows for cell in row):
        raise ValueError("a '|' in a cell would split it")
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])
