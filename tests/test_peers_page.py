"""The page on attncore.jit's CPU peers (book/07-peers.md) says only what its results file says.

Every table and sentence the page glues is rendered here against the published file and
against synthetic files that turn each verdict around (jit slower than a peer, every goal
met, bfloat16 faster, no bfloat16 rows, a peer missing or never timed, another machine, shares
paired with readers), and against a second real run (another machine kind, paired readers);
each sentence is checked against the numbers it prints: a sentence that is true of the
published run only fails here.
"""
import copy
import json
import re

import numpy as np
import pytest

from attncore.bench import bf16_story as bs, decode, peer_story as ps, story
from attncore.invariants import check_rows

PUBLISHED = ps.published()
NUMBER = r"\d+(?:\.\d+)?(?:e[+-]\d+)?"


# ------------------------------------------------------------------ the files

def _scale(pub, factor, names=None):
    for e in pub["peers"]["peer_ratios"]:
        if e["ratio"] and (names is None or e["impl"] in names):
            e["ratio"] *= factor


def _add_bf16(pub, ratio, error_factor):
    """jit_bf16 entries at every shape: time `ratio` x jit's, error `error_factor` x OpenVINO's."""
    run = pub["peers"]
    ov = {(e["n"], e["causal"]): e["max_error"] for e in run["peer_ratios"] if e["impl"] == "openvino_default"}
    for (n, causal), error in ov.items():
        run["peer_ratios"].append({"n": n, "causal": causal, "impl": "jit_bf16", "ratio": ratio,
                                   "max_error": error * error_factor, "note": None})
        run["rows"].append({"n": n, "causal": causal, "impl": "jit_bf16", "max_error": error * error_factor,
                            "details": {"backend": "attncore.jit.flash_attention", "precision": "bf16", "threads": 2}})


def _set_jit(pub, row, share=None, seconds=None, over_torch=None):
    """Change one jit decoding row consistently: its time (from a share of the read roof, or given),
    its share and GB/s (against each reader the file has too), and torch's time (for its ratio over jit's)."""
    dec = pub["decode"]["decode"]
    seconds = seconds or row["kv_bytes"] / (share * dec["roof"]["read_gbs"] * 1e9)
    row.update(seconds=seconds, gbs=row["kv_bytes"] / seconds / 1e9, read_fraction=row["kv_bytes"] / seconds / 1e9 / dec["roof"]["read_gbs"])
    for key, reader in (("paired_read_fraction", "memory_read"), ("kv_read_fraction", "kv_read")):
        if ps.reader_gbs(pub, reader, row["t_k"], row["t_q"]):
            row[key] = row["gbs"] / ps.reader_gbs(pub, reader, row["t_k"], row["t_q"])
    torch = next(r for r in dec["rows"] if (r["impl"], r["t_k"], r["t_q"]) == ("torch", row["t_k"], row["t_q"]))
    row["torch_over_this"] = over_torch or torch["seconds"] / seconds
    torch["seconds"] = row["torch_over_this"] * seconds


def turned():
    """jit slower than every float32 peer, JAX missing, bf16 rows faster than float32 and
    OpenVINO, every decoding goal met, nothing in the cache, an idle machine."""
    pub = copy.deepcopy(PUBLISHED)
    _scale(pub, 0.1)
    run = pub["peers"]
    run["peer_ratios"] = [e for e in run["peer_ratios"] if e["impl"] != "jax"]
    run["rows"] = [r for r in run["rows"] if r["impl"] != "jax"]
    _add_bf16(pub, 0.25, 0.5)
    dec = pub["decode"]
    for r in ps.decode_rows(pub):
        r["fits_in_cache"] = False
        if r["t_q"] == 1:
            _set_jit(pub, r, share=0.9, over_torch=5.0)
            four = next(x for x in ps.decode_rows(pub) if (x["t_k"], x["t_q"]) == (r["t_k"], 4))
            _set_jit(pub, four, seconds=r["seconds"] * 1.1, over_torch=5.0)
    for key in ("load_average",):
        run["machine"][key] = dec["machine"][key] = 0.2
    run["load_average_end"] = dec["load_average_end"] = 0.3
    return pub


def mixed():
    """Some shapes each way, a peer never timed, OpenVINO in float32 by default, bf16 rows
    slower than float32 with a larger error than OpenVINO, another run on another machine for
    decoding, a busy machine, and a decoding goal met at one T_k only."""
    pub = copy.deepcopy(PUBLISHED)
    run = pub["peers"]
    for e in run["peer_ratios"]:
        if e["impl"] == "torch" and e["n"] == 4096:
            e["ratio"] = 0.5
        if e["impl"] == "jax":
            e.update(ratio=None, note="skipped: jax is not installed (pip install -e '.[bench-peers]')")
    for r in run["rows"]:
        if r["impl"] == "openvino_default":
            r["details"]["precision"] = "f32"
    _add_bf16(pub, 2.0, 3.0)
    dec = pub["decode"]
    dec["machine"]["cpu"] = "Some Other CPU"
    pub["sources"] = {"peers": "peers.json", "decode": "decode.json"}  # two runs, the first on a busy machine
    run["machine"]["load_average"] = 3.0
    t_k = max(r["t_k"] for r in dec["decode"]["rows"])
    for r in ps.decode_rows(pub):
        if (r["t_k"], r["t_q"]) == (t_k, 1):
            _set_jit(pub, r, share=0.95, over_torch=4.5)
    dec["peak"]["measured_gflops"] = 20.0  # a ridge below 2 flop per byte: the compute side
    del pub["other_peer_runs"]
    return pub


def paired():
    """The published file as the harness writes it since it times two readers in every round
    (attncore.bench.decode): a large array whose bandwidth moves from round to round, and the
    same K and V, faster than memory where they fit in the cache, as fast elsewhere; jit's
    rows with the paired shares that follow from them, one T_k below 70% of the reader."""
    pub = copy.deepcopy(PUBLISHED)
    dec = pub["decode"]["decode"]
    mib, reads = 1024, []
    for t_k in ps.t_ks(pub):
        for t_q in (1, 4):
            memory_s = [mib * 2**20 / gbs / 1e9 for gbs in (14.0, 20.5, 13.5, 20.0, 19.0)]
            size = decode.kv_bytes(t_k)
            cached = next(r["fits_in_cache"] for r in ps.decode_rows(pub) if r["t_k"] == t_k)
            kv_s = [size / (gbs * (2.5 if cached and t_k == ps.t_ks(pub)[0] else 1.0)) / 1e9 for gbs in (14.0, 20.5, 13.5, 20.0, 19.0)]
            for name, times, nbytes in (("memory_read", memory_s, mib * 2**20), ("kv_read", kv_s, size)):
                reads.append({"reader": name, "t_k": t_k, "t_q": t_q, "note": None, "seconds": sorted(times)[2],
                              "repeat_seconds": times, "gbs": nbytes / sorted(times)[2] / 1e9,
                              "details": {"bytes": nbytes, "threads": 2, "method": f"a compiled sum of {name}"}})
    dec["reads"] = reads
    for r in dec["rows"]:
        if r.get("seconds"):
            for key, reader in (("paired_read_fraction", "memory_read"), ("kv_read_fraction", "kv_read")):
                r[key] = r["gbs"] / ps.reader_gbs(pub, reader, r["t_k"], r["t_q"])
    t_k = ps.t_ks(pub)[-1]
    for r in ps.decode_rows(pub):
        if r["t_q"] == 1:
            _set_jit(pub, r, seconds=r["kv_bytes"] / ((0.66 if r["t_k"] == t_k else 0.85) * 17.0e9))
    return pub


MEASURED = "tests/results/2026-12-03-emerald-rapids-no-amx-run.json"  # a real run with paired readers


def measured():
    """One real run of the harness (a no-AMX VM, paired readers, bfloat16 products emulated) as
    the page's file: both parts from it."""
    run = {k: v for k, v in ps.read(MEASURED).items() if k != "file"}
    return {"description": "one harness run, both parts", "sources": {"peers": MEASURED, "decode": MEASURED},
            "peers": run, "decode": run}


@pytest.fixture(scope="module", params=["published", "turned", "mixed", "paired", "measured"])
def pub(request, tmp_path_factory):
    """Each results file, written out and read back as the page would read another file."""
    if request.param == "published":
        return PUBLISHED
    path = tmp_path_factory.mktemp("results") / f"{request.param}-peers.json"
    data = {k: v for k, v in globals()[request.param]().items() if k != "file"}
    path.write_text(json.dumps(data))
    return ps.read(path)


def sentences(pub):
    run = pub["peers"]
    return {"machine": ps.machine_sentence(pub), "peers": ps.peers_sentence(run), "errors": ps.errors_sentence(run),
            "low": ps.low_precision_sentence(run), "memory": ps.memory_bound_sentence(pub),
            "goals": ps.decode_goals_sentence(pub), "decode_peers": ps.decode_peers_sentence(pub),
            "bf16": bs.bf16_sentence(run), "cache": ps.cache_sentence(pub), "runs": ps.run_to_run_sentence(pub),
            "bf16_runs": bs.bf16_run_to_run_sentence(pub),
            "method": ps.method_sentence(pub), "share_method": ps.share_method_sentence(pub),
            "gqa_read": ps.gqa_read_sentence(pub)}


# ------------------------------------------------------------------ helpers that read a sentence back

def shapes_in(text):
    """[(n, causal)] from 'N = 1024, N = 4096 causal and N = 16384'."""
    return [(int(n), bool(c)) for n, c in re.findall(r"N = (\d+)( causal)?", text)]


def span_of(text):
    """(lo, hi) from '1.04 to 13.63' or '0.63'."""
    found = re.findall(NUMBER, text)
    return float(found[0]), float(found[-1])


def assert_span(text, values, spec=".2f"):
    lo, hi = span_of(text)
    assert (format(lo, spec), format(hi, spec)) == (format(min(values), spec), format(max(values), spec)), text


def ratios(run, name):
    return {(n, c): r for n, c, r, *_ in ps.entries(run, name)}


def _plain(text):
    assert "`" not in text and "$" not in text and "{" not in text, f"glued text must be plain: {text}"
    assert "--" not in text, f"Sphinx's smart quotes would print -- as a dash: {text}"


# ------------------------------------------------------------------ the published file

def test_the_page_reads_the_file_it_names():
    assert PUBLISHED["file"] == ps.PUBLISHED
    assert ps.PUBLISHED in open("book/07-peers.md").read() or "peer_story.published()" in open("book/07-peers.md").read()
    assert {"peers", "decode", "description", "sources"} <= set(PUBLISHED)


def test_published_file_meets_its_own_description():
    """Each peer within its own bound (float32 1e-5, bfloat16 products 3e-2), the machine and
    the decode roof recorded, every shape of the peers run and every T_k of the decoding run."""
    run, dec = PUBLISHED["peers"], PUBLISHED["decode"]
    for e in run["peer_ratios"]:
        bound = run["settings"]["error_bounds"].get(e["impl"])
        assert e["max_error"] is not None and bound and e["max_error"] <= bound, e
        assert e["ratio"], f"{e['impl']} was not timed at N = {e['n']}: {e['note']}"
    assert run["settings"]["sizes"] == [1024, 4096, 16384]
    assert sorted({r["t_k"] for r in dec["decode"]["rows"]}) == [4096, 32768, 131072]
    assert dec["decode"]["roof"]["read_gbs"] and run["peak"]["measured_gflops"] and dec["peak"]["measured_gflops"]
    assert all(r["max_error"] <= r["error_bound"] for r in dec["decode"]["rows"] if r.get("seconds"))
    assert all("repeated" not in (r.get("note") or "") for r in ps.decode_rows(PUBLISHED)), "jit must decode natively"


# ------------------------------------------------------------------ every file

def test_sentences_are_plain_text(pub):
    for text in sentences(pub).values():
        _plain(text)


def test_tables_render_as_markdown(pub):
    for table in (ps.machine_table(pub), ps.peers_table(pub["peers"]), ps.details_table(pub["peers"]), ps.decode_table(pub)):
        lines = ps.markdown(table).split("\n")
        assert len(lines) == len(table) + 1 and {line.count("|") for line in lines} == {len(table[0]) + 1}
    with pytest.raises(ValueError):
        ps.markdown([["a"], ["x | y"]])


def test_peers_table_prints_the_ratios(pub):
    run = pub["peers"]
    table = ps.peers_table(run)
    names = ps.peers_of(run)
    assert table[0][2:] == [ps.title(n) for n in names] and "jit_bf16" not in names
    assert len(table) - 1 == len(ps.shapes(run))
    for row in table[1:]:
        n, causal = int(row[0]), row[1] == "yes"
        for name, cell in zip(names, row[2:]):
            r = ratios(run, name).get((n, causal), "-")
            assert cell == ("-" if r == "-" else "skipped" if r is None else f"{r:.2f}")


def test_details_table_names_each_peer_with_its_worst_error(pub):
    run = pub["peers"]
    table = ps.details_table(run)
    for row in table[1:]:
        name = next(n for n in ps.TITLES if ps.title(n) == row[0])
        errors = [e for *_, e, _ in ps.entries(run, name) if e is not None]
        assert row[5] == (f"{max(errors):.1e}" if errors else "-")
        assert row[3] == ps.precision(run, name)


def _clauses(text):
    """(peer, phrase, shapes, span) for each 'took <phrase> attncore.jit at <shapes> (<span> times)'."""
    out = []
    for sentence in re.split(r"(?<=\.)\s", text):
        peer = next((ps.title(n) for n in sorted(ps.TITLES, key=lambda n: -len(ps.title(n)))
                     if sentence.startswith(ps.title(n))), None)
        for phrase, shapes, span in re.findall(r"(more time than|less time than|about the same time as) [\w.' ]+? at "
                                               r"((?:N = \d+(?: causal)?(?:, | and )?)+) \(([^)]*) times\)", sentence):
            out.append((peer, phrase, shapes_in(shapes), span))
    return out


def test_peers_sentence_matches_each_ratio(pub):
    run = pub["peers"]
    text = ps.peers_sentence(run)
    float32 = [n for n in ps.peers_of(run) if ps.precision(run, n) == "float32"]
    m = re.search(r"took less time than (.*?) at every shape this run measured: they took (.*?) times as long", text)
    always = [n for n in float32 if ps.title(n) in (m.group(1) if m else "")]
    for name in always:
        assert all(r is not None and r > 1 + ps.TOLERANCE for r in ratios(run, name).values()), name
    if always:
        assert_span(m.group(2), [r for n in always for r in ratios(run, n).values()])
    for name in set(float32) - set(always):
        assert ps.title(name) in text, f"{name} is not mentioned"
    for peer, phrase, shapes, span in _clauses(text):
        name = next(n for n in ps.TITLES if ps.title(n) == peer)
        values = [ratios(run, name)[s] for s in shapes]
        check = {"more time than": lambda r: r > 1 + ps.TOLERANCE, "less time than": lambda r: r < 1 - ps.TOLERANCE,
                 "about the same time as": lambda r: abs(r - 1) <= ps.TOLERANCE}[phrase]
        assert all(check(r) for r in values), (peer, phrase, shapes, values)
        assert_span(span, values)
    for name in float32:
        if all(r is None for r in ratios(run, name).values()):
            assert f"{ps.title(name)} was not timed" in text


def test_run_to_run_sentence_lists_exactly_the_changed_verdicts(pub):
    text = ps.run_to_run_sentence(pub)
    if not pub.get("other_peer_runs"):
        assert text.startswith("The file holds one peers run")
        return
    pairs = ps.run_to_run(pub)
    changed = {k for k, values in pairs.items() if len({ps.compared(v, ps.TOLERANCE) for v in values}) > 1}
    listed = re.findall(r"([A-Za-z][\w. ]+?) at N = (\d+)( causal)? \(([^)]*)\)", text.split("range over the runs): ")[-1])
    found = {(next(n for n in ps.TITLES if ps.title(n) == peer.strip()), int(n), bool(c)) for peer, n, c, _ in listed}
    assert found == changed if changed else "the same verdict" in text
    for peer, n, c, span in listed:
        key = (next(x for x in ps.TITLES if ps.title(x) == peer.strip()), int(n), bool(c))
        assert_span(span, pairs[key])
    if changed:
        assert f"changed at {len(changed)} of {len(pairs)} pairs" in text


def test_low_precision_sentence_matches(pub):
    run = pub["peers"]
    text = ps.low_precision_sentence(run)
    low = [n for n in ps.peers_of(run) if ps.precision(run, n) != "float32"]
    if not low:
        assert text == "No peer in this run computed in a reduced precision."
        return
    for peer, phrase, shapes, span in re.findall(r"(OpenVINO default) took (more time than|less time than) jit's float32 "
                                                 r"path at ((?:N = \d+(?: causal)?(?:, | and )?)+) \(([^)]*) times\)", text):
        values = [ratios(run, "openvino_default")[s] for s in shapes_in(shapes)]
        assert all((r > 1) == (phrase == "more time than") for r in values)
        assert_span(span, values)
    errors = [e for *_, e, _ in ps.entries(run, low[0]) if e is not None]
    assert f"errors up to {max(errors):.1e}" in text


def test_errors_sentence_gives_each_precisions_worst(pub):
    run = pub["peers"]
    text = ps.errors_sentence(run)
    for kind in {ps.precision(run, n) for n in ps.peers_of(run) + ps.peers_of(run, own_bf16=True)}:
        names = [n for n in ps.peers_of(run) + ps.peers_of(run, own_bf16=True) if ps.precision(run, n) == kind]
        worst = max(e for n in names for *_, e, _ in ps.entries(run, n) if e is not None)
        assert f"stayed within {worst:.1e} of float64" in text


def test_machine_sentence_and_table(pub):
    text = ps.machine_sentence(pub)
    a, b = pub["peers"]["machine"], pub["decode"]["machine"]
    single = ps.one_run(pub)
    assert ("One run" in text) == single
    assert ("same machine" in text) == (not single and a["cpu"] == b["cpu"] and a["isa"] == b["isa"])
    starts = [a["load_average"]] + ([] if single else [b["load_average"]])
    assert_span(text.split(" cores) was ")[-1].split(" at the start")[0], starts, ".1f")
    assert ("other work shared the machine" in text) == (max(starts) > a["cores"] / 2)
    table = ps.machine_table(pub)
    assert table[0] == ["", "peers", "decoding"] and all(len(row) == 3 for row in table)
    read = dict((r[0], r[2]) for r in table)["read bandwidth (one large array, once before the rounds)"]
    assert f"{pub['decode']['decode']['roof']['read_gbs']:.1f} GB/s" in read


def in_one_process(pub):
    """pub as the harness wrote it before each implementation had a process of its own."""
    pub = copy.deepcopy(pub)
    for settings, machine in _parts(pub):
        settings.pop("processes", None)
        settings.pop("worker_env", None)
        machine["env"].update(OMP_WAIT_POLICY="PASSIVE")
    return pub


def _parts(pub):
    """(settings, machine) of the peers' run and of the decoding run."""
    return ((pub["peers"]["settings"], pub["peers"]["machine"]),
            (pub["decode"]["decode"]["settings"], pub["decode"]["machine"]))


def warmed_up(pub, seconds=0.02):
    """pub as the harness writes it since the untimed calls last at least `seconds` (warmup_s)."""
    pub = copy.deepcopy(pub)
    for settings, _ in _parts(pub):
        settings["warmup_s"] = seconds
    return pub


def test_method_sentence_says_how_each_run_timed(pub):
    for variant in (pub, in_one_process(pub), warmed_up(pub), warmed_up(in_one_process(pub), 0.005)):
        text = ps.method_sentence(variant)
        _plain(text)
        for settings, machine in _parts(variant):
            assert ("worker process of its own" in text) == bool(settings.get("processes")) or not ps.one_run(variant)
            assert f"a pause of {settings['pause_s'] * 1e3:g} ms" in text
            warmup = settings.get("warmup_s")
            assert (f"untimed calls for at least {warmup * 1e3:g} ms" in text if warmup
                    else text.rstrip(".").endswith("its untimed call"))
            if (settings.get("worker_env") or {}).get("OMP_WAIT_POLICY") == "ACTIVE":
                assert "OMP_WAIT_POLICY=ACTIVE" in text and "stopped while another was timed" in text
            if machine["env"].get("OMP_WAIT_POLICY") == "PASSIVE" and not settings.get("processes"):
                assert "OMP_WAIT_POLICY=PASSIVE" in text
    mixed_methods = copy.deepcopy(pub)
    mixed_methods["sources"] = {"peers": "peers.json", "decode": "decode.json"}
    mixed_methods["decode"] = in_one_process(pub)["decode"]
    text = ps.method_sentence(mixed_methods)
    assert ("The peers' run timed" in text) == bool(pub["peers"]["settings"].get("processes"))
    assert ps.method_sentence(in_one_process(pub)).count("one process") == 1  # one clause when both runs agree


def test_decode_table_prints_the_rows(pub):
    table = ps.decode_table(pub)
    for row in table[1:]:
        t_k = int(row[0])
        one = next(r for r in ps.decode_rows(pub) if (r["t_k"], r["t_q"]) == (t_k, 1))
        assert row[1] == f"{decode.kv_bytes(t_k) / 2**20:.0f}" and row[2] == f"{one['seconds'] * 1e3:.1f}"
        expected = one["paired_read_fraction"] if ps.paired(pub) else one["read_fraction"]
        assert row[3] == f"{expected:.0%}" and row[4] == f"{one['torch_over_this']:.2f}"
        assert row[8] == f"{ps.chunk_ratio(pub, t_k):.2f}"


def test_a_value_beside_its_goal_never_reads_as_the_goal_when_it_misses():
    assert ps.beside_goal(0.696, 0.7, 0, percent=True) == "69.6%"
    assert ps.beside_goal(0.7, 0.7, 0, percent=True) == "70%" and ps.beside_goal(0.66, 0.7, 0, percent=True) == "66%"
    assert ps.beside_goal(1.3049, 1.3, 2) == "1.305" and ps.beside_goal(3.51, 4, 2) == "3.51"


def test_decode_goals_follow_the_numbers(pub):
    text = ps.decode_goals_sentence(pub)
    share_key = "paired_read_fraction" if ps.paired(pub) else "read_fraction"
    goals = {"read bandwidth": (share_key, lambda v: v >= ps.GOALS["read_share"],
                                lambda v: ps.beside_goal(v, ps.GOALS["read_share"], 0, percent=True)),
             "enable_gqa": ("torch_over_this", lambda v: v >= ps.GOALS["over_torch"],
                            lambda v: ps.beside_goal(v, ps.GOALS["over_torch"], 2)),
             "T_q = 4 within": (None, lambda v: v <= ps.GOALS["chunk_over_single"],
                                lambda v: ps.beside_goal(v, ps.GOALS["chunk_over_single"], 2))}
    clauses = text.rstrip(".").split("; ")
    assert len(clauses) == 3
    for clause, (key, meets, spec) in zip(clauses, goals.values()):
        for verdict, listed, values in re.findall(r"(met|missed) at (?:every T_k measured, )?T_k = ([\d, and]+?) \(([^)]*)\)", clause):
            t_ks = [int(t) for t in re.findall(r"\d+", listed)]
            for t_k, shown in zip(t_ks, values.split(", ")):
                v = ps.chunk_ratio(pub, t_k) if key is None else next(
                    r[key] for r in ps.decode_rows(pub) if (r["t_k"], r["t_q"]) == (t_k, 1))
                assert shown == spec(v) and meets(v) == (verdict == "met"), clause
                goal = {"read bandwidth": ps.GOALS["read_share"], "enable_gqa": ps.GOALS["over_torch"],
                        "T_q = 4 within": ps.GOALS["chunk_over_single"]}[next(g for g in goals if goals[g][0] == key)]
                assert meets(v) or shown != spec(goal), f"a miss printed as the goal itself: {clause}"
        assert ("every T_k measured" in clause) == (not ("met at T_k" in clause and "missed at T_k" in clause))


def test_memory_bound_sentence_recomputes(pub):
    text = ps.memory_bound_sentence(pub)
    t_k = ps.t_ks(pub)[-1]
    m = ps.memory_bound(pub, t_k)
    s = pub["decode"]["decode"]["settings"]
    assert m["bytes"] == 2 * s["h_kv"] * t_k * s["d"] * 4 and m["intensity"] == s["h_q"] / s["h_kv"] / 2
    bandwidth = (ps.reader_gbs(pub, "memory_read", t_k) if ps.paired(pub)
                 else pub["decode"]["decode"]["roof"]["read_gbs"])
    assert m["bandwidth_gbs"] == bandwidth and f"at the {bandwidth:.1f} GB/s" in text
    assert ("in the same rounds" in text) == ps.paired(pub) and ("reading a large array once" in text) != ps.paired(pub)
    assert f"{m['bytes'] / 2**20:.0f} MiB" in text and f"that takes {m['read_s'] * 1e3:.1f} ms" in text
    assert f"take {m['compute_s'] * 1e3:.1f} ms" in text and f"the ridge at {m['ridge']:.3g}" in text
    assert ("the bus, not the arithmetic, sets the time" in text) == (m["intensity"] < m["ridge"])
    jit_row = next(r for r in ps.decode_rows(pub) if (r["t_k"], r["t_q"]) == (t_k, 1))
    share = jit_row["paired_read_fraction"] if ps.paired(pub) else jit_row["read_fraction"]
    assert f"read at {share:.0%} of that bandwidth" in text
    if not ps.paired(pub):  # the file's share is the same quotient as the sentence's times
        assert abs(m["read_s"] / m["measured_s"] - share) < 1e-9
    if "times as long" in text:
        assert f"took {ps.chunk_ratio(pub, t_k):.2f} times as long" in text


def test_gqa_read_sentence_recomputes(pub):
    text = ps.gqa_read_sentence(pub)
    s = pub["decode"]["decode"]["settings"]
    t_k = ps.t_ks(pub)[-1]
    m = ps.memory_bound(pub, t_k)
    group = s["h_q"] // s["h_kv"]
    assert f"{s['h_q']} query heads over {s['h_kv']} kv heads (G = {group})" in text and f"T_k = {t_k} cached" in text
    assert f"reads {m['bytes'] / 2**20:.0f} MiB of K and V: {m['read_s'] * 1e3:.1f} ms" in text
    assert f"at the {m['bandwidth_gbs']:.1f} GB/s" in text and ("in the same rounds" in text) == ps.paired(pub)
    mha = 2 * s["h_q"] * t_k * s["d"] * 4  # a kv head per query head, float32
    assert f"{group} times as much, {mha / 2**20:.0f} MiB: {mha / (m['bandwidth_gbs'] * 1e9) * 1e3:.1f} ms at" in text
    jit_row = next(r for r in ps.decode_rows(pub) if (r["t_k"], r["t_q"]) == (t_k, 1))
    share = jit_row["paired_read_fraction"] if ps.paired(pub) else jit_row["read_fraction"]
    assert f"took {jit_row['seconds'] * 1e3:.1f} ms, {share:.0%} of that bandwidth" in text
    torch = jit_row.get("torch_over_this")
    assert (f"enable_gqa=True took {torch:.2f} times as long" in text) if torch else "enable_gqa" not in text


def test_gqa_read_sentence_without_jit_or_torch():
    pub = copy.deepcopy(PUBLISHED)
    t_k = ps.t_ks(pub)[-1]
    for r in pub["decode"]["decode"]["rows"]:
        if r["t_k"] == t_k and r["t_q"] == 1:
            r["torch_over_this"] = None
    assert ps.gqa_read_sentence(pub).endswith("of that bandwidth.")
    pub["decode"]["decode"]["rows"] = [r for r in pub["decode"]["decode"]["rows"] if r["impl"] != "jit"]
    text = ps.gqa_read_sentence(pub)
    assert "attncore.jit" not in text and text.endswith(" ms at that bandwidth.")


def test_cache_sentence(pub):
    text = ps.cache_sentence(pub)
    _plain(text)
    fits = sorted({r["t_k"] for r in ps.decode_rows(pub) if r["fits_in_cache"]})
    listed = re.search(r"fit in it at T_k = ([\d, and]+?)[.,] ", text)
    assert [int(t) for t in re.findall(r"\d+", listed.group(1))] == fits if fits else listed is None
    if not (fits and ps.paired(pub)):
        assert "A reader of the same K and V" not in text
        return
    kv, memory = ([ps.reader_gbs(pub, name, t) for t in fits] for name in ("kv_read", "memory_read"))
    assert f"got {ps.and_list(f'{x:.1f}' for x in kv)} GB/s there" in text
    assert f"the large array gave {ps.and_list(f'{x:.1f}' for x in memory)}" in text
    faster = [t for t, a, b in zip(fits, kv, memory) if a > b * (1 + ps.TOLERANCE)]
    assert ("the cache did not make the bytes come faster" in text) == (not faster)
    if faster:
        assert f"at T_k = {ps.and_list(map(str, faster))} the bytes came faster than from memory" in text
        shares = [next(r["kv_read_fraction"] for r in ps.decode_rows(pub) if (r["t_k"], r["t_q"]) == (t, 1)) for t in faster]
        assert f"attncore.jit read at {ps.and_list(f'{x:.0%}' for x in shares)} of its speed" in text


def test_share_method_sentence_names_the_roof_the_shares_were_measured_against(pub):
    text = ps.share_method_sentence(pub)
    _plain(text)
    dec = pub["decode"]["decode"]
    assert f"{dec['roof']['read_gbs']:.1f} GB/s" in text  # the read measured once, in either case
    assert ("timed in every round" in text) == ps.paired(pub)
    if not ps.paired(pub):
        assert "the share is overstated" in text and (dec["roof"].get("read_method") or "does not record") in text
        return
    memory = [r for r in dec["reads"] if r["reader"] == "memory_read"]
    per_round = [r["details"]["bytes"] / t / 1e9 for r in memory for t in r["repeat_seconds"]]
    assert f"Over the {len(per_round)} rounds that reader got {min(per_round):.1f} to {max(per_round):.1f} GB/s" in text
    assert f"The fastest round was {max(per_round) / min(per_round):.2f} times the slowest" in text
    steady = copy.deepcopy(pub)
    for r in steady["decode"]["decode"]["reads"]:
        if r["reader"] == "memory_read":
            r["repeat_seconds"] = [memory[0]["seconds"]] * len(r["repeat_seconds"])
    assert "would have given about the same share" in ps.share_method_sentence(steady)


def test_decode_peers_sentence(pub):
    text = ps.decode_peers_sentence(pub)
    m = re.search(r"took less time than (.*?) at every T_k and T_q \(their medians were (.*?) times jit's\)", text)
    names = [n for n in ps.TITLES if m and ps.title(n) in m.group(1)]
    values = []
    for name in names:
        for r in ps.decode_rows(pub):
            theirs = ps._decode(pub, name, r["t_k"], r["t_q"])
            assert theirs > r["seconds"], name
            values.append(theirs / r["seconds"])
    if names:
        assert_span(m.group(2), values)


def test_bf16_sentence_follows_the_rows(pub):
    run = pub["peers"]
    text = bs.bf16_sentence(run)
    own = ratios(run, "jit_bf16")
    if not own:
        assert text.startswith("This run did not time jit's bfloat16 paths")
        return
    speed = [1 / r for r in own.values()]
    m = re.search(r"jit bf16(, its products (.*?),)? ran at (.*?) times the float32 path's speed, so the goal of "
                  r"([\d.]+) times is (.*?);", text)
    route = (ps.row_of(run, *next(iter(own)), "jit_bf16").get("details") or {}).get("products")
    assert m.group(2) == (story.BF16_ROUTES[route] if route else None)
    m = re.search(r"ran at (.*?) times the float32 path's speed, so the goal of ([\d.]+) times is (.*?);", m.group(0))
    assert_span(m.group(1), speed)
    assert m.group(3) == ("met at every shape" if min(speed) >= ps.GOALS["bf16_over_f32"] else
                          "missed at every shape" if max(speed) < ps.GOALS["bf16_over_f32"] else m.group(3))
    ov = ratios(run, "openvino_default")
    errors = {(n, c): e for n, c, _, e, _ in ps.entries(run, "jit_bf16")}
    ov_errors = bs.openvino_errors(run)
    versus = [ov[s] / own[s] for s in own]
    m = re.search(r"it ran at (.*?) times its speed, with an error no larger than OpenVINO's at (.*?): the goal .* is (.*)\.$", text)
    assert_span(m.group(1), versus)
    no_larger = [s for s in own if errors[s] <= ov_errors[s]]
    assert shapes_in(m.group(2)) == no_larger or (m.group(2) == "every shape" and len(no_larger) == len(own))
    both = all(v >= ps.GOALS["bf16_over_openvino"] for v in versus) and len(no_larger) == len(own)
    assert (m.group(3) == "met at every shape") == both


def test_bf16_run_to_run_sentence_lists_exactly_the_shapes_whose_verdict_moved(pub):
    """Against each yardstick, the shapes where jit bf16 met its goal in some of the file's peers
    runs and missed it in others, each with its quotient's range and how many runs met it."""
    text = bs.bf16_run_to_run_sentence(pub)
    if not ratios(pub["peers"], "jit_bf16"):
        assert text == ""
        return
    if not pub.get("other_peer_runs"):
        assert text.startswith("The file holds one peers run")
        return
    tables = [pub["peers"]["peer_ratios"]] + [o["peer_ratios"] for o in pub["other_peer_runs"]]

    def entry(table, impl, shape):  # the last one, as ps.entries reads a table
        return [e for e in table if (e["impl"], e["n"], e["causal"]) == (impl, *shape)][-1]

    for goal, what in (("bf16_over_f32", "the float32 path"), ("bf16_over_openvino", "OpenVINO's default precision")):
        clause = re.search(rf"goal against {re.escape(what)} got (.*?)(;|\. A goal)", text).group(1)
        quotients, met = {}, {}
        for shape in ratios(pub["peers"], "jit_bf16"):
            own = [entry(t, "jit_bf16", shape) for t in tables]
            if goal == "bf16_over_f32":
                quotients[shape] = [1 / e["ratio"] for e in own]
                met[shape] = {q >= ps.GOALS[goal] for q in quotients[shape]}
            else:
                ov = [entry(t, "openvino_default", shape) for t in tables]
                quotients[shape] = [o["ratio"] / e["ratio"] for e, o in zip(own, ov)]
                met[shape] = {q >= ps.GOALS[goal] and e["max_error"] <= o["max_error"]
                              for q, e, o in zip(quotients[shape], own, ov)}
        moved = [s for s in quotients if len(met[s]) > 1]
        listed = re.findall(r"N = (\d+)( causal)? \(([^)]*) times, met in (\d+) of (\d+)\)", clause)
        assert [(int(n), bool(c)) for n, c, *_ in listed] == moved
        assert (clause == "the same verdict at every shape in every run") == (not moved)
        for (n, c, span, count, runs), shape in zip(listed, moved):
            assert_span(span, quotients[shape])
            assert int(runs) == len(tables) and 0 < int(count) < len(tables)


def test_bf16_sentence_names_the_route_only_where_the_run_recorded_it():
    """Runs before the AMX path did not record how jit bf16 ran its products: no route is named."""
    run = copy.deepcopy(PUBLISHED["peers"])
    for row in run["rows"]:
        (row.get("details") or {}).pop("products", None)
    text = bs.bf16_sentence(run)
    assert "its products" not in text and "jit bf16 ran at " in text
    for route, how in story.BF16_ROUTES.items():
        for row in run["rows"]:
            if row["impl"] == "jit_bf16":
                row["details"]["products"] = route
        assert f"jit bf16, its products {how}, ran at " in bs.bf16_sentence(run)


@pytest.mark.parametrize("factor, word", [(0.5, "smaller than"), (1.0, "about the same as"), (2.0, "larger than")])
def test_bf16_error_sentence_compares_like_with_like(pub, factor, word):
    run = pub["peers"]
    theirs = bs.openvino_errors(run)
    n = min(n for n, _ in ps.shapes(run))
    errors = {(n, c): theirs.get((n, c), 1e-3) * factor for c in (False, True)}
    for route, how in story.BF16_ROUTES.items():
        text = bs.bf16_error_sentence(errors, run, route)
        _plain(text)
        assert f"With bfloat16 products {how}, " in text
        for (m, c), e in errors.items():
            assert f"{e:.1e} at N = {m}{' causal' if c else ''}" in text
        if ps.precision(run, "openvino_default") == "float32":
            assert "no reduced-precision OpenVINO error" in text
        else:
            assert text.count(f"{word} OpenVINO's") == 2


def test_simplex_sentence_says_what_check_rows_found():
    rng = np.random.default_rng(0)
    w = rng.random((8, 8)).astype(np.float32)
    good = {False: check_rows(w / w.sum(-1, keepdims=True))}
    bad = {False: check_rows(w)}
    assert bs.simplex_sentence(good).startswith("Every row of those weights is on the simplex")
    assert bs.simplex_sentence(bad).startswith("Not every row")
    _plain(bs.simplex_sentence(good))


def test_the_page_glues_every_sentence():
    """Each sentence function is glued on the page, and each glue key used in the prose is set."""
    page = open("book/07-peers.md").read()
    used = set(re.findall(r"\{glue:text\}`ch7p_(\w+)", page))
    set_ = set(re.findall(r'\bg\("(\w+)"', page))
    assert used <= set_, used - set_
    for function in ("machine_sentence", "method_sentence", "peers_sentence", "errors_sentence", "low_precision_sentence",
                     "memory_bound_sentence", "decode_goals_sentence", "decode_peers_sentence", "cache_sentence",
                     "share_method_sentence", "run_to_run_sentence", "peers_table", "details_table", "machine_table",
                     "decode_table"):
        assert f"peer_story.{function}(" in page, function
    for function in ("bf16_sentence", "bf16_error_sentence", "simplex_sentence", "bf16_run_to_run_sentence"):
        assert f"bf16_story.{function}(" in page, function
