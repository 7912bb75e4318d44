"""What the page on attncore.jit's CPU peers says about a results file, as functions of it.

A peers results file (attncore/bench/results/*-peers.json) holds two parts, from one run of
the harness or two (its "sources" say which): "peers" (attncore.jit against torch SDPA, ONNX Runtime, OpenVINO and JAX at
N = 1024 ... 16384, d = 64, and jit's own bfloat16 paths where the run timed them) and
"decode" (grouped-query decoding, B = 1, 32/8 heads, d = 128, T_q = 1 and 4). Every table
and every sentence the page builds from it is built here (those on jit's bfloat16 paths in
bf16_story.py, with these helpers), so that tests/test_peers_page.py
can render them against the published file and against other files (a peer missing, jit
slower, a goal met or missed, bfloat16 rows or none) and check each against its numbers.

Ratios are peer time / jit time, the median over the harness's paired rounds: above 1,
jit took less time.
"""
import json
from pathlib import Path

from . import published as _package_data
from .decode import kv_bytes
from .story import and_list, compared

PUBLISHED = "2026-12-03-xeon-amx-2-cores-peers.json"

TITLES = {"jit": "attncore.jit", "torch": "PyTorch SDPA", "onnxruntime": "ONNX Runtime",
          "openvino_f32": "OpenVINO f32", "openvino_default": "OpenVINO default", "jax": "JAX",
          "jit_bf16": "jit bf16", "jit_bf16_emulated": "jit bf16 emulated"}
OWN_BF16 = ("jit_bf16", "jit_bf16_emulated")  # jit's bfloat16 paths: rows of the bf16 section

# The goals of issue 23: decoding at B = 1, 32/8 heads, d = 128, float32; bfloat16 products.
GOALS = {"read_share": 0.70, "over_torch": 4.0, "chunk_over_single": 1.3,
         "bf16_over_f32": 1.6, "bf16_over_openvino": 1.2}
TOLERANCE = 0.03  # ratios within 3% of 1 read as "about the same time" (story.compared)


# ------------------------------------------------------------------ the file

def published(name=PUBLISHED):
    """The committed peers results (package data), with "file": the name of the file read."""
    return {**_package_data(name), "file": name}


def read(path):
    """Any peers results file, with "file": its name (for tests and other machines)."""
    path = Path(path)
    return {**json.loads(path.read_text()), "file": path.name}


def title(name):
    return TITLES.get(name, name)


def shape_name(n, causal):
    return f"N = {n}{' causal' if causal else ''}"


def shape_names(cells):
    """'N = 1024 and N = 4096 causal' for [(n, causal, ...)]; 'no shape' for none."""
    return and_list([shape_name(n, c) for n, c, *_ in cells]) if cells else "no shape"


def span(values, spec=".2f"):
    lo, hi = min(values), max(values)
    return format(lo, spec) if format(lo, spec) == format(hi, spec) else f"{lo:{spec}} to {hi:{spec}}"


# ------------------------------------------------------------------ the peers run

def row_of(run, n, causal, impl):
    return next((r for r in run["rows"] if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def precision(run, name):
    """'float32', or the reduced precision its products ran in ('bf16', 'bf16_emulated', 'f16'),
    as the peer reported it for its first row."""
    row = next((r for r in run["rows"] if r["impl"] == name), None)
    reported = ((row or {}).get("details") or {}).get("precision")
    return "float32" if reported in (None, "f32", "float32") else reported


def peers_of(run, own_bf16=False):
    """The peers in the run's ratio table, in TITLES order: the others' (own_bf16=False) or jit's
    own bfloat16 paths (True)."""
    names = list(dict.fromkeys(e["impl"] for e in run["peer_ratios"]))
    names.sort(key=lambda name: list(TITLES).index(name) if name in TITLES else len(TITLES))
    return [name for name in names if (name in OWN_BF16) == own_bf16]


def shapes(run):
    """(n, causal) of the run's ratio table, non-causal first."""
    return sorted({(e["n"], e["causal"]) for e in run["peer_ratios"]}, key=lambda s: (s[1], s[0]))


def entries(run, name):
    """[(n, causal, ratio, max_error, note)] of one peer, non-causal first; ratio None if not timed."""
    found = {(e["n"], e["causal"]): e for e in run["peer_ratios"] if e["impl"] == name}
    return [(n, c, found[n, c]["ratio"], found[n, c]["max_error"], found[n, c]["note"])
            for n, c in shapes(run) if (n, c) in found]


def peers_table(run):
    """Rows of the peers table: N, causal, then peer time / jit time for each peer ('skipped', or
    '-' where the run has no entry)."""
    names = peers_of(run)
    header = ["N", "causal", *(title(name) for name in names)]
    cells = {(e["n"], e["causal"], e["impl"]): e["ratio"] for e in run["peer_ratios"]}
    rows = []
    for n, causal in shapes(run):
        ratio = [cells.get((n, causal, name), "-") for name in names]
        rows.append([str(n), "yes" if causal else "no",
                     *("-" if r == "-" else "skipped" if r is None else f"{r:.2f}" for r in ratio)])
    return [header, *rows]


def details_table(run):
    """One row per peer (jit's bf16 paths included): version, backend, precision, threads and
    its largest max |error| against float64 over the shapes it ran."""
    rows = [["peer", "version", "backend", "precision", "threads", "largest error against float64"]]
    for name in peers_of(run) + peers_of(run, own_bf16=True):
        found = [r for r in run["rows"] if r["impl"] == name and r.get("details")]
        details = found[0]["details"] if found else {}
        errors = [e for *_, e, _ in entries(run, name) if e is not None]
        version = details.get("version") or run["machine"]["versions"].get("attncore" if name in OWN_BF16 else name)
        rows.append([title(name), str(version or "-"), str(details.get("backend", "-")), precision(run, name),
                     str(details.get("threads", "-")), f"{max(errors):.1e}" if errors else "-"])
    return rows


def verdicts(run, name):
    """jit's side of one peer's entries: {'faster': [...], 'slower': [...], 'about as fast': [...],
    'skipped': [...]}, each a list of (n, causal, ratio, max_error, note)."""
    out = {"faster": [], "slower": [], "about as fast": [], "skipped": []}
    for entry in entries(run, name):
        out["skipped" if entry[2] is None else compared(entry[2], TOLERANCE)].append(entry)
    return out


def _against(name, found, subject="attncore.jit"):
    """One clause on one peer, from verdicts(): where it took more time than the subject, where
    less, where about the same, each with its ratios (peer time / subject time)."""
    timed = found["faster"] + found["slower"] + found["about as fast"]
    if not timed:
        return f"{title(name)} was not timed"
    parts = []
    for word, phrase in (("faster", "more time than"), ("slower", "less time than"),
                         ("about as fast", "about the same time as")):
        if len(found[word]) == len(timed):
            return (f"{title(name)} took {phrase} {subject} at every shape it ran "
                    f"({span([e[2] for e in timed])} times {subject}'s time)")
        if found[word]:
            parts.append(f"{phrase} {subject} at {shape_names(found[word])} ({span([e[2] for e in found[word]])} times)")
    return f"{title(name)} took " + "; ".join(parts)


def peers_sentence(run):
    """What the float32 peers' ratios say, peer by peer; peers that were never timed are named
    with the reason of their first entry."""
    names = [name for name in peers_of(run) if precision(run, name) == "float32"]
    if not names:
        return "This run timed no float32 peer."
    always = [n for n in names if verdicts(run, n)["faster"] and len(verdicts(run, n)["faster"]) == len(entries(run, n))]
    others = [n for n in names if n not in always]
    parts = []
    if always:
        ratios = [e[2] for n in always for e in entries(run, n)]
        parts.append(f"Against the float32 peers, attncore.jit took less time than {and_list(map(title, always))} at every "
                     f"shape this run measured: they took {span(ratios)} times as long.")
    for name in others:
        found = verdicts(run, name)
        clause = _against(name, found)
        if not (found["faster"] or found["slower"] or found["about as fast"]):
            clause += f" ({found['skipped'][0][4] or 'no reason recorded'})"
        parts.append(clause + ".")
    return " ".join(parts)


def errors_sentence(run):
    """How far from float64 each precision of the peers was (the others' and jit's own)."""
    groups = {}
    for name in peers_of(run) + peers_of(run, own_bf16=True):
        errors = [e[3] for e in entries(run, name) if e[3] is not None]
        if errors:
            groups.setdefault(precision(run, name), []).append((name, max(errors)))
    if not groups:
        return "No peer's output was checked against float64 in this run."
    parts = []
    for kind, found in groups.items():
        names = and_list(title(n) for n, _ in found)
        worst = max(e for _, e in found)
        what = "in float32" if kind == "float32" else f"with {kind.replace('_emulated', ', emulated,')} products"
        parts.append(f"{names} ({what}) stayed within {worst:.1e} of float64")
    return "Every output was checked against float64 before it was timed: " + "; ".join(parts) + "."


def low_precision_sentence(run):
    """The peers that compute in a reduced precision (OpenVINO's default on a CPU with bf16),
    against jit's float32 path."""
    names = [name for name in peers_of(run) if precision(run, name) != "float32"]
    if not names:
        return "No peer in this run computed in a reduced precision."
    clauses = []
    for name in names:
        errors = [e[3] for e in entries(run, name) if e[3] is not None]
        clause = _against(name, verdicts(run, name), "jit's float32 path")
        clauses.append(f"In its {precision(run, name)} precision, " + clause
                       + (f", at errors up to {max(errors):.1e}" if errors else ""))
    return "; ".join(clauses) + "."


def run_to_run(pub):
    """{(peer, n, causal): [ratio in the published run, then in each of pub["other_peer_runs"]]}
    for the float32 peers, where every run timed that peer at that shape."""
    run = pub["peers"]
    tables = [run["peer_ratios"]] + [other["peer_ratios"] for other in pub.get("other_peer_runs", [])]
    out = {}
    for name in (n for n in peers_of(run) if precision(run, n) == "float32"):
        for n, causal in shapes(run):
            found = [next((e["ratio"] for e in table if (e["impl"], e["n"], e["causal"]) == (name, n, causal)), None)
                     for table in tables]
            if all(found):
                out[name, n, causal] = found
    return out


def run_to_run_sentence(pub):
    """Whether the other peers runs of the file give jit the same verdict (compared()) against each
    float32 peer at each shape, and where they do not, how far the ratio moved."""
    others = pub.get("other_peer_runs", [])
    if any(o["cpu"] != pub["peers"]["machine"]["cpu"] for o in others):
        return "The other peers runs in the file report another CPU, so their ratios are not compared with this run's."
    if not others:
        return "The file holds one peers run, so it cannot say how far the ratios move from one run to the next."
    loads = span([o["load_average"] for o in others], ".1f")
    changed = {key: values for key, values in run_to_run(pub).items()
               if len({compared(v, TOLERANCE) for v in values}) > 1}
    text = (f"The file keeps the ratios of {len(others)} more {'run' if len(others) == 1 else 'runs'} of the peers "
            f"on the same machine (load average {loads} at {'its' if len(others) == 1 else 'their'} start). ")
    if not changed:
        return text + "They give attncore.jit the same verdict against every float32 peer at every shape."
    listed = "; ".join(f"{title(name)} at {shape_name(n, c)} ({span(values)})" for (name, n, c), values in changed.items())
    return (text + f"Across the runs the verdict against a float32 peer changed at {len(changed)} of "
            f"{len(run_to_run(pub))} pairs of a peer and a shape (in brackets, the ratio's range over the runs): {listed}. "
            "A verdict at those shapes depends on the run, so it is not one to rely on.")


# ------------------------------------------------------------------ the machine

def machine_table(pub):
    """One table, one machine: CPU, ISA, threads, peaks, bandwidths and load, one column per run."""
    runs = {"peers": pub["peers"], "decoding": pub["decode"]}

    def each(cell):
        return [cell(run) for run in runs.values()]

    def gbs(value):
        return "-" if value is None else f"{value:.1f} GB/s"

    rows = [
        ["", *runs],
        ["date", *each(lambda r: r["machine"]["date"][:16].replace("T", " ") + " UTC")],
        ["CPU", *each(lambda r: f"{r['machine']['cpu']} (Numba: {r['machine'].get('jit', {}).get('cpu_name', '-')})")],
        ["cores, threads used", *each(lambda r: f"{r['machine']['cores']}, {r['peak']['bandwidth']['threads']}")],
        ["ISA", *each(lambda r: ", ".join(flag for flag, on in r["machine"]["isa"].items() if on))],
        ["sgemm peak (one-thread sgemm x cores)", *each(lambda r: f"{r['peak']['measured_gflops']:.0f} GFLOP/s")],
        ["theoretical peak", *each(lambda r: f"{r['peak']['theoretical']['gflops']:.0f} GFLOP/s")],
        ["read bandwidth (one large array, once before the rounds)", *each(lambda r: gbs(_read_roof(r)))],
        ["copy bandwidth", *each(lambda r: gbs((r.get("decode") or {}).get("roof", {}).get("copy_gbs")
                                               or r["peak"]["bandwidth"].get("all_cores_gbs")))],
        ["load average, start and end", *each(lambda r: f"{r['machine']['load_average']:.1f} and {r['load_average_end']:.1f}")],
        ["commit measured", *each(lambda r: (r["machine"].get("source") or {}).get("commit", "-")[:10]
                                  + (" (attncore/ modified)" if (r["machine"].get("source") or {}).get("attncore_modified") else ""))],
    ]
    return rows


def _read_roof(run):
    """The read-once bandwidth a run measured: its decode roof, else its own read measurement."""
    roof = (run.get("decode") or {}).get("roof") or {}
    return roof.get("read_gbs") or run["peak"]["bandwidth"].get("read_all_cores_gbs")


def one_run(pub):
    """True when the peers part and the decoding part come from one run of the harness."""
    sources = pub.get("sources") or {}
    return sources.get("peers") is not None and sources.get("peers") == sources.get("decode")


def machine_sentence(pub):
    """Whether the runs ran on one machine, and how busy it was when each started (the load at
    a run's end counts the run's own threads, so it says nothing of other work)."""
    a, b = pub["peers"]["machine"], pub["decode"]["machine"]
    cores = a["cores"]
    if one_run(pub):
        first, starts = "One run of the harness measured both parts.", [a["load_average"]]
        ends = [pub["peers"]["load_average_end"]]
    else:
        same = all(a[key] == b[key] for key in ("cpu", "cores", "isa"))
        first = ("Both runs ran on the same machine (the same CPU, cores and instruction sets)." if same else
                 "The two runs report different machines, so their numbers must not be mixed.")
        starts = [a["load_average"], b["load_average"]]
        ends = [pub["peers"]["load_average_end"], pub["decode"]["load_average_end"]]
    busy = ("other work shared the machine" if max(starts) > cores / 2 else "the machine was otherwise idle")
    return (f"{first} The load average (runnable processes, on {cores} cores) was {span(starts, '.1f')} at the "
            f"start and {span(ends, '.1f')} at the end, which counts the run's own {a.get('numba_threads', cores)} "
            f"threads: {busy} when it started.")


def _method(settings, machine):
    """How one run timed its calls: where the implementations ran, and their thread pools."""
    env = machine.get("env") or {}
    if settings.get("processes"):
        where = ("each implementation in a worker process of its own, stopped while another was timed, so no two "
                 "libraries' thread pools met")
        policy = (settings.get("worker_env") or {}).get("OMP_WAIT_POLICY") or env.get("OMP_WAIT_POLICY")
        pools = (", and OpenMP's workers spun between calls (OMP_WAIT_POLICY=ACTIVE), as TBB's and ONNX Runtime's "
                 "do by default" if policy == "ACTIVE" else "")
    else:
        where = "every implementation in one process"
        pools = (", and OpenMP's workers slept as soon as a call ended (OMP_WAIT_POLICY=PASSIVE)"
                 if env.get("OMP_WAIT_POLICY") == "PASSIVE" else "")
    warmup = settings.get("warmup_s")  # (runs before it was recorded made one untimed call)
    untimed = (f"untimed calls for at least {warmup * 1e3:g} ms" if warmup else "untimed call")
    return f"{where}{pools}; a pause of {settings['pause_s'] * 1e3:g} ms came before each timed call and its {untimed}"


def method_sentence(pub):
    """How the run (or each of the two runs) timed its calls."""
    peers = _method(pub["peers"]["settings"], pub["peers"]["machine"])
    decode = _method(pub["decode"]["decode"]["settings"], pub["decode"]["machine"])
    if one_run(pub) or peers == decode:
        return f"{'The run' if one_run(pub) else 'Both runs'} timed {peers}."
    return f"The peers' run timed {peers}. The decoding run timed {decode}."


# ------------------------------------------------------------------ decoding

def decode_rows(pub, impl="jit"):
    return [r for r in pub["decode"]["decode"]["rows"] if r["impl"] == impl]


def _decode(pub, impl, t_k, t_q, key="seconds"):
    return next((r.get(key) for r in pub["decode"]["decode"]["rows"]
                 if (r["impl"], r["t_k"], r["t_q"]) == (impl, t_k, t_q)), None)


def paired(pub):
    """True when the decoding run timed a reader of a large array in its rounds, beside the
    implementations (attncore.bench.decode): its shares are then paired ratios."""
    return any(r["reader"] == "memory_read" and r.get("seconds") for r in pub["decode"]["decode"].get("reads", []))


def read_share(pub, t_k, t_q, impl="jit"):
    """The share of the read bandwidth of one decoding row: against the reader timed in the same
    rounds where the run has one (paired), else against the read measured once in the run."""
    return _decode(pub, impl, t_k, t_q, "paired_read_fraction" if paired(pub) else "read_fraction")


def reader_gbs(pub, reader, t_k, t_q=1):
    """GB/s of a reader ("memory_read" or "kv_read") in the rounds of one (T_k, T_q), or None."""
    return next((r.get("gbs") for r in pub["decode"]["decode"].get("reads", [])
                 if (r["reader"], r["t_k"], r["t_q"]) == (reader, t_k, t_q)), None)


def chunk_ratio(pub, t_k, impl="jit"):
    """T_q = 4 time over T_q = 1 time at one T_k (None if either is missing)."""
    one, four = _decode(pub, impl, t_k, 1), _decode(pub, impl, t_k, 4)
    return four / one if one and four else None


def t_ks(pub):
    return sorted({r["t_k"] for r in pub["decode"]["decode"]["rows"]})


def decode_table(pub):
    """Rows: T_k, MiB of K and V, then per T_q: jit ms, share of the read bandwidth, torch time /
    jit time; and T_q = 4 time / T_q = 1 time."""
    def fmt(value, spec, scale=1):
        return "-" if value is None else format(value * scale, spec)

    header = ["T_k", "K and V (MiB)", "T_q = 1: ms", "share of read bandwidth", "torch / jit",
              "T_q = 4: ms", "share of read bandwidth", "torch / jit", "T_q = 4 / T_q = 1"]
    rows = [header]
    for t_k in t_ks(pub):
        size = next(r["kv_bytes"] for r in pub["decode"]["decode"]["rows"] if r["t_k"] == t_k)
        cells = [str(t_k), f"{size / 2**20:.0f}"]
        for t_q in (1, 4):
            cells += [fmt(_decode(pub, "jit", t_k, t_q), ".1f", 1e3), fmt(read_share(pub, t_k, t_q), ".0%"),
                      fmt(_decode(pub, "jit", t_k, t_q, "torch_over_this"), ".2f")]
        rows.append(cells + [fmt(chunk_ratio(pub, t_k), ".2f")])
    return rows


def beside_goal(value, goal, digits, percent=False):
    """value with `digits` decimals, or more while it would read as the goal itself: 69.6%
    is not printed as 70% beside a goal of 70% that it misses."""
    show = lambda x, n: f"{x:.{n}%}" if percent else f"{x:.{n}f}"
    while value != goal and show(value, digits) == show(goal, digits) and digits < 6:
        digits += 1
    return show(value, digits)


def _goal_clause(what, values, meets):
    """'met at T_k = a and b (x, y); missed at T_k = c (z)' for values {t_k: (value, text)}."""
    met = [t for t, (v, _) in values.items() if meets(v)]
    missed = [t for t, (v, _) in values.items() if not meets(v)]
    said = lambda ts: f"T_k = {and_list(map(str, ts))} ({', '.join(values[t][1] for t in ts)})"
    if not values:
        return f"{what}: not measured"
    if not missed:
        return f"{what}: met at every T_k measured, {said(met)}"
    if not met:
        return f"{what}: missed at every T_k measured, {said(missed)}"
    return f"{what}: met at {said(met)}, missed at {said(missed)}"


def decode_goals_sentence(pub):
    """The three decoding goals of issue 23, goal by goal, at each T_k the run measured."""
    share, over, chunk = {}, {}, {}
    for t_k in t_ks(pub):
        s, o, c = read_share(pub, t_k, 1), _decode(pub, "jit", t_k, 1, "torch_over_this"), chunk_ratio(pub, t_k)
        if s is not None:
            share[t_k] = (s, beside_goal(s, GOALS["read_share"], 0, percent=True))
        if o is not None:
            over[t_k] = (o, beside_goal(o, GOALS["over_torch"], 2))
        if c is not None:
            chunk[t_k] = (c, beside_goal(c, GOALS["chunk_over_single"], 2))
    return ("; ".join([
        _goal_clause(f"At least {GOALS['read_share']:.0%} of the read bandwidth with T_q = 1", share,
                     lambda v: v >= GOALS["read_share"]),
        _goal_clause(f"at least {GOALS['over_torch']:g} times PyTorch SDPA's speed with enable_gqa=True", over,
                     lambda v: v >= GOALS["over_torch"]),
        _goal_clause(f"a chunk of T_q = 4 within {GOALS['chunk_over_single']:g} times the T_q = 1 time", chunk,
                     lambda v: v <= GOALS["chunk_over_single"]),
    ]) + ".")


def decode_peers_sentence(pub):
    """jit against each decoding peer: the range of their time over jit's time (paired rounds
    with torch, medians of the rounds for the others), or why a peer was not timed."""
    rows = pub["decode"]["decode"]["rows"]
    names = [n for n in dict.fromkeys(r["impl"] for r in rows) if n != "jit"]
    faster, slower, untimed = [], [], []
    for name in names:
        ratios = [_decode(pub, name, r["t_k"], r["t_q"]) / r["seconds"] for r in decode_rows(pub)
                  if r.get("seconds") and _decode(pub, name, r["t_k"], r["t_q"])]
        if not ratios:
            untimed.append(name)
        elif min(ratios) > 1:
            faster.append((name, ratios))
        else:
            slower.append((name, ratios))
    parts = []
    if faster:
        parts.append(f"Decoding, attncore.jit took less time than {and_list(title(n) for n, _ in faster)} at every T_k "
                     f"and T_q (their medians were {span([x for _, rs in faster for x in rs])} times jit's)")
    for name, ratios in slower:
        parts.append(f"{title(name)} took less time than jit in at least one case (its median time was "
                     f"{span(ratios)} times jit's)")
    if untimed:
        parts.append(f"{and_list(map(title, untimed))} {'was' if len(untimed) == 1 else 'were'} not timed")
    return ("; ".join(parts) or "Decoding, no peer was timed") + "."


def memory_bound(pub, t_k, t_q=1):
    """The two floors of one decoding step: bytes of K and V over the run's read bandwidth (the
    reader of a large array in the rounds of T_q = 1 at this T_k where the run paired one, else
    the read measured once), and its flops (4 H_q T_q T_k d) over the run's sgemm peak; the
    intensity (flop per byte), the ridge (peak / bandwidth) and jit's time and share of the
    bandwidth (read_share()). Times in seconds; None where the run lacks a measurement."""
    s = pub["decode"]["decode"]["settings"]
    size = kv_bytes(t_k, s["h_kv"], s["d"], s["batch"])
    flops = 4 * s["batch"] * s["h_q"] * t_q * t_k * s["d"]
    bandwidth = reader_gbs(pub, "memory_read", t_k) if paired(pub) else _read_roof(pub["decode"])
    peak = pub["decode"]["peak"]["measured_gflops"]
    return {"bytes": size, "flops": flops, "read_s": size / (bandwidth * 1e9), "compute_s": flops / (peak * 1e9),
            "intensity": flops / size, "ridge": peak / bandwidth, "bandwidth_gbs": bandwidth, "peak_gflops": peak,
            "measured_s": _decode(pub, "jit", t_k, t_q), "share": read_share(pub, t_k, t_q)}


def _bandwidth_source(pub):
    """Where memory_bound()'s bandwidth comes from, as 'the X GB/s <this>' ends."""
    return ("that a reader of a large array got in the same rounds" if paired(pub)
            else "that the run measured reading a large array once")


def memory_bound_sentence(pub):
    """Why decoding is memory-bound, from the run's own bandwidth and peak at its longest cache."""
    t_k = t_ks(pub)[-1]
    one, four = memory_bound(pub, t_k, 1), memory_bound(pub, t_k, 4)
    side = lambda m: "below" if m["intensity"] < one["ridge"] else "at or above"  # the ridge of T_q = 1's rounds
    where = _bandwidth_source(pub)
    text = (f"At T_k = {t_k} one step reads K and V once, {one['bytes'] / 2**20:.0f} MiB: at the "
            f"{one['bandwidth_gbs']:.1f} GB/s {where}, that takes {one['read_s'] * 1e3:.1f} ms, while its "
            f"{one['flops'] / 1e9:.2f} GFLOP take {one['compute_s'] * 1e3:.1f} ms at the run's sgemm peak of "
            f"{one['peak_gflops']:.0f} GFLOP/s. That is {one['intensity']:.0f} flop per byte, {side(one)} the ridge at "
            f"{one['ridge']:.3g}: ")
    text += ("the bus, not the arithmetic, sets the time. " if one["intensity"] < one["ridge"] else
             "on this machine the arithmetic, not the bus, would set the time. ")
    if one["measured_s"]:
        text += (f"attncore.jit took {one['measured_s'] * 1e3:.1f} ms, and read at {one['share']:.0%} of that bandwidth"
                 + (" (the median over the rounds of the ratio within a round). " if paired(pub) else ". "))
    text += (f"A chunk of T_q = 4 does four times the flops on the same bytes, {four['intensity']:.0f} flop per byte, "
             f"{side(four)} the ridge")
    ratio = chunk_ratio(pub, t_k)
    if four["intensity"] < one["ridge"] and ratio is not None:
        text += (f", so in principle it costs what one token costs; it took {ratio:.2f} times as long"
                 + (": the extra time is the kernel's work, not the bus's." if ratio > 1 + TOLERANCE else "."))
    else:
        text += "."
    return text


def gqa_read_sentence(pub):
    """Chapter 5's step, measured: one token at the run's longest cache, the bytes of K and V that
    its grouped-query heads read against those of a kv head per query head (MHA), with the floor
    of each at memory_bound()'s bandwidth, and jit's time, share and torch's time over jit's."""
    s = pub["decode"]["decode"]["settings"]
    t_k = t_ks(pub)[-1]
    m = memory_bound(pub, t_k)
    group = s["h_q"] // s["h_kv"]
    where = _bandwidth_source(pub)
    text = (f"One new token with {s['h_q']} query heads over {s['h_kv']} kv heads (G = {group}), d = {s['d']}, "
            f"float32, against T_k = {t_k} cached keys reads {m['bytes'] / 2**20:.0f} MiB of K and V: "
            f"{m['read_s'] * 1e3:.1f} ms at the {m['bandwidth_gbs']:.1f} GB/s {where}. With a kv head for every "
            f"query head (MHA) it would read {group} times as much, {group * m['bytes'] / 2**20:.0f} MiB: "
            f"{group * m['read_s'] * 1e3:.1f} ms at that bandwidth.")
    if m["measured_s"] and m["share"] is not None:
        torch = _decode(pub, "jit", t_k, 1, "torch_over_this")
        text += (f" attncore.jit.decode_attention, which reads each kv head once for its {group} query heads, took "
                 f"{m['measured_s'] * 1e3:.1f} ms, {m['share']:.0%} of that bandwidth"
                 + (f"; PyTorch's scaled_dot_product_attention with enable_gqa=True took {torch:.2f} times as long."
                    if torch else "."))
    return text


def share_method_sentence(pub):
    """Against what the decoding shares are measured: a reader timed in the same rounds (paired),
    with the range it got over the rounds, or a read measured once in the run, and how."""
    dec = pub["decode"]["decode"]
    roof = dec["roof"]
    once = (f"the read measured once, before the rounds, {roof['read_gbs']:.1f} GB/s "
            f"({roof.get('read_method') or 'a method the file does not record'})")
    if not paired(pub):
        return ("The share of the read bandwidth is the bytes of K and V, read once, over the time, against the "
                f"bandwidth of reading one large array with the same number of threads: {once}. A plain read, such "
                "as np.dot of the array with itself, can be slower than a kernel that asks for its rows ahead, as the "
                "decode kernel does; where the method above is such a plain read, the share is overstated. And a "
                "bandwidth measured once says nothing of the minutes that follow, when the implementations ran.")
    reads = [r for r in dec["reads"] if r["reader"] == "memory_read" and r.get("seconds")]
    per_round = [r["details"]["bytes"] / t / 1e9 for r in reads for t in r["repeat_seconds"]]
    return ("The share of the read bandwidth is the bytes of K and V, read once, over the time, against a reader of "
            f"a large array of its own, {reads[0]['details']['bytes'] / 2**20:.0f} MiB, timed in every round just "
            f"before the implementations ({reads[0]['details']['method']}): the median over the rounds of jit's GB/s "
            f"over the reader's in the same round. Over the {len(per_round)} rounds that reader got "
            f"{span(per_round, '.1f')} GB/s, against {once}. " + _moved(max(per_round) / min(per_round)))


def _moved(spread):
    """What a spread (fastest / slowest round of the memory reader) says of a roof measured once."""
    if spread > 1 + TOLERANCE:
        return (f"The fastest round was {spread:.2f} times the slowest: a bandwidth measured once would have judged "
                "the kernel against one moment of a machine whose bandwidth moves.")
    return (f"The rounds were within {TOLERANCE:.0%} of each other, so here a bandwidth measured once would have "
            "given about the same share.")


def cache_sentence(pub):
    """Whether K and V could sit in the last-level cache the decoding run's machine reports, and
    where the run timed a reader of the same K and V, whether it got them faster than from memory."""
    cache = pub["decode"]["decode"]["roof"].get("last_level_cache_bytes")
    if not cache:
        return "The machine reports no last-level cache size, so the run cannot say whether K and V fit in it."
    fits = sorted({r["t_k"] for r in decode_rows(pub) if r["fits_in_cache"]})
    text = f"The machine reports a last-level cache of {cache / 2**20:.0f} MiB. "
    if not fits:
        return text + "K and V are larger than it at every T_k measured, so they come from memory."
    text += f"K and V fit in it at T_k = {and_list(map(str, fits))}"
    both = {t: (reader_gbs(pub, "kv_read", t), reader_gbs(pub, "memory_read", t)) for t in fits}
    both = {t: pair for t, pair in both.items() if None not in pair}
    if not both:
        return text + ", so there the measured bandwidth is not a hard ceiling: part of the bytes may come from the cache."
    faster = [t for t, (kv, memory) in both.items() if kv > memory * (1 + TOLERANCE)]
    text += (f". A reader of the same K and V, in the same rounds, got {and_list(f'{kv:.1f}' for kv, _ in both.values())} "
             f"GB/s there, where the large array gave {and_list(f'{m:.1f}' for _, m in both.values())}")
    if not faster:
        return text + ": the cache did not make the bytes come faster, so the share there is the memory's."
    return (text + f": at T_k = {and_list(map(str, faster))} the bytes came faster than from memory, partly from the "
            "cache, so a share of the memory's bandwidth can pass 100% there. Against the reader of the same bytes, "
            "attncore.jit read at " + and_list(f"{_decode(pub, 'jit', t, 1, 'kv_read_fraction'):.0%}" for t in faster)
            + " of its speed.")


def markdown(rows):
    """A table (header first) as Markdown; a cell must not hold '|'."""
    if any("|" in cell for row in rows for cell in row):
        raise ValueError("a '|' in a cell would split it")
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])
