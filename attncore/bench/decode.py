"""Decoding with grouped-query heads: one new token (or a speculative chunk of T_q) against a
long KV cache, the regime where CPU inference lives and the memory bus, not the FMA units,
sets the time.

B = 1, H_q = 32 query heads sharing H_kv = 8 kv heads (G = 4), d = 128, float32. q is
(B, H_q, T_q, d), k and v (B, H_kv, T_k, d); T_q > 1 is causal with bottom-right alignment
(query i sees keys up to T_k - T_q + i). Every byte of K and V must be read once, so

    achieved bandwidth = 2 * B * H_kv * T_k * d * 4 bytes / time,

compared with the machine's measured bandwidth at the same thread count. Two readers are timed
in every round beside the implementations (attncore.bench.reader, asking for rows ahead, as
decoding does): one of a large array of its own, from memory (the row's
paired_read_fraction: the median over the rounds of the implementation's GB/s over the
reader's, two calls that ran side by side), and one of the same K and V (kv_read_fraction:
how close to the fastest plain read of those bytes, from wherever they sit, a cache
included). Once per run, before the rounds, the harness also reads a large array
(machine.read_bandwidth: read_fraction) and copies one (machine.copy_bandwidth, read +
write: copy_fraction). An implementation that reads K and V G times (the kv heads repeated)
still gets the once-read figure: that is what the caller waited for.
"""
import statistics

import numpy as np

from . import isolated, machine, peers, stopwatch

H_Q, H_KV, D = 32, 8, 128
T_KS = (4096, 32768)
LONG_T_K = 131072
T_QS = (1, 4)
NAMES = ("jit", "torch", "onnxruntime", "openvino_f32", "openvino_default", "jax")
READERS = ("memory_read", "kv_read")  # timed in each round, before the implementations (see above)


def kv_bytes(t_k: int, h_kv: int = H_KV, d: int = D, batch: int = 1, itemsize: int = 4) -> int:
    """Bytes of K and V, each read once."""
    return 2 * batch * h_kv * t_k * d * itemsize


def inputs(t_q: int, t_k: int, h_q: int = H_Q, h_kv: int = H_KV, d: int = D,
           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, h_q, t_q, d), dtype=np.float32)
    k, v = (rng.standard_normal((1, h_kv, t_k, d), dtype=np.float32) for _ in range(2))
    return q, k, v


def roofs(threads: int, repeats: int = 3) -> dict:
    """Measured bandwidth for `threads` threads, GB/s, once: read once (the decode roof) and copy,
    on an array of memory_mib()."""
    cache, mib = machine.last_level_cache_bytes(), machine.memory_mib()
    return {"threads": threads, "read_gbs": machine.read_bandwidth(threads, mib=mib, repeats=repeats),
            "copy_gbs": machine.copy_bandwidth(threads, mib=mib, repeats=repeats), "array_mib": mib,
            "last_level_cache_bytes": cache,
            "read_method": machine.read_method(mib),
            "copy_method": machine.copy_method(mib)}


def run(t_ks=T_KS, t_qs=T_QS, names=NAMES, repeats=5, pause=stopwatch.PAUSE, threads=None, roof=None, log=None,
        h_q=H_Q, h_kv=H_KV, d=D, isolate=False, mib=None):
    """Rows of the decode scenario, one per (T_k, T_q, implementation); skipped ones have a note;
    and "reads", the readers' rows. isolate: each implementation and reader timed in its own
    process (attncore.bench.isolated). mib: the memory reader's array (default memory_mib())."""
    threads = threads or machine.cores()
    roof = roof or roofs(threads)
    memory = _reader("memory_read", isolate, "memory_reader", mib or machine.memory_mib(), threads)
    rows, reads = [], []
    for t_k in t_ks:
        for t_q in t_qs:
            causal = "bottom_right" if t_q > 1 else False
            load = machine.load_average()
            q, k, v = inputs(t_q, t_k, h_q, h_kv, d)
            reference = peers.float64_reference(q, k, v, causal)
            readers = {"memory_read": memory, "kv_read": _reader("kv_read", isolate, "kv_reader", k, v, threads)}
            calls = {name: call for name, (call, _) in readers.items() if call}
            errors, details, notes = {}, {}, {}
            for name in names:
                peer = peers.PEERS[name]
                notes[name] = peer.missing()
                if notes[name]:
                    notes[name] = f"skipped: {notes[name]}"
                    continue
                try:
                    call = (isolated.prepare(name, peers.prepare, name, q, k, v, causal, threads) if isolate
                            else peer.prepare(q, k, v, causal, threads))
                    out = call.result()
                except Exception as error:
                    notes[name] = f"skipped: {isolated.describe(error)}"
                    continue
                errors[name] = float(np.max(np.abs(out - reference)))
                details[name] = call.details
                if not errors[name] <= peer.tolerance:
                    notes[name] = (f"skipped: max |error| {errors[name]:.1e} against float64 "
                                   f"> bound {peer.tolerance:.0e}")
                    continue
                calls[name] = call
            del reference
            cpu = {}
            times = stopwatch.rounds(calls, repeats, pause, cpu=cpu)
            size = kv_bytes(t_k, h_kv, d)
            for name in names:
                row = {"t_k": t_k, "t_q": t_q, "h_q": h_q, "h_kv": h_kv, "d": d, "causal": causal, "impl": name,
                       "load_average": load, "kv_bytes": size, "fits_in_cache": bool(roof.get("last_level_cache_bytes")
                                                              and size <= roof["last_level_cache_bytes"]),
                       "note": notes.get(name), "max_error": errors.get(name),
                       "error_bound": peers.PEERS[name].tolerance if name in errors else None,
                       "details": details.get(name)}
                if name in times:
                    seconds = statistics.median(times[name])
                    gbs = size / seconds / 1e9
                    row.update(seconds=seconds, repeat_seconds=times[name], gbs=gbs,
                               cpu_seconds=statistics.median(cpu[name]), repeat_cpu_seconds=cpu[name],
                               read_fraction=gbs / roof["read_gbs"], copy_fraction=gbs / roof["copy_gbs"],
                               **_paired_fractions(times, name, size, readers))
                    gqa = (details[name] or {}).get("gqa", "")
                    if gqa.startswith("kv heads repeated"):
                        row["note"] = gqa
                rows.append(row)
            for row in rows[-len(names):]:
                row["torch_over_this"] = stopwatch.paired(times.get(row["impl"]), times.get("torch"))
            reads += [_read_row(name, t_k, t_q, call, note, times.get(name), cpu.get(name))
                      for name, (call, note) in readers.items()]
            if log:
                log(f"  measured decode T_k = {t_k}, T_q = {t_q}")
            del calls
    settings = {"h_q": h_q, "h_kv": h_kv, "d": d, "batch": 1, "t_ks": list(t_ks), "t_qs": list(t_qs),
                "repeats": repeats, "pause_s": pause, "warmup_s": stopwatch.WARMUP, "threads": threads,
                "dtype": "float32",
                "processes": isolated.DESCRIPTION if isolate else None,
                "worker_env": isolated.WORKER_ENV if isolate else None}
    return {"roof": roof, "rows": rows, "reads": reads, "settings": settings}


def _reader(name, isolate, make, *args):
    """(call, None), or (None, why it cannot run): reader.<make>(*args), in a worker of its own
    (named `name`) when isolate. A reader needs Numba, as jit does."""
    missing = peers.PEERS["jit"].missing()
    if missing:
        return None, f"skipped: {missing}"
    from . import reader

    try:
        return (isolated.prepare(name, getattr(reader, make), *args) if isolate
                else getattr(reader, make)(*args)), None
    except Exception as error:
        return None, f"skipped: {isolated.describe(error)}"


def _paired_fractions(times, name, size, readers):
    """The implementation's GB/s over each reader's, the median over the rounds (None without the reader)."""
    out = {}
    for key, reader in (("paired_read_fraction", "memory_read"), ("kv_read_fraction", "kv_read")):
        call = readers[reader][0]
        quotient = stopwatch.paired(times[name], times.get(reader))
        out[key] = quotient * size / call.details["bytes"] if quotient else None
    return out


def _read_row(name, t_k, t_q, reader, note, times, cpu):
    """A reader's row of one (T_k, T_q): its median time and GB/s over the rounds, or why not."""
    row = {"reader": name, "t_k": t_k, "t_q": t_q, "note": note, "details": reader.details if reader else None}
    if times:
        seconds = statistics.median(times)
        row.update(seconds=seconds, repeat_seconds=times, gbs=reader.details["bytes"] / seconds / 1e9,
                   cpu_seconds=statistics.median(cpu), repeat_cpu_seconds=cpu)
    return row


def chunk_over_single(rows: list[dict], impl: str, t_k: int) -> float | None:
    """Time at T_q = 4 over time at T_q = 1 (medians; the calls ran in different rounds)."""
    one, four = (next((r.get("seconds") for r in rows if (r["impl"], r["t_k"], r["t_q"]) == (impl, t_k, t_q)), None)
                 for t_q in (1, 4))
    return four / one if one and four else None
