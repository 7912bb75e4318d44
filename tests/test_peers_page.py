"""The peers page (book/07-peers.md) says of its results file only what the file says.

Its numbers come from attncore.bench.report, checked here against plain loops over the
file's rounds; its words (a target met or missed, a cache or none, an error about the same
or not, which side of the ridge) come from the rules of book/_ext/coursebook, each rendered
on the committed files where the word flips.
"""
import statistics

import pytest

from attncore import bench
from attncore.bench import report
from tests.bookcode import ROOT, method, pinned, rules

PEERS_RUN = pinned("2026-12-03-xeon-amx-2-cores-peers.json")    # two runs of one AMX Xeon, as one file
RUN, DEC = bench.parts(PEERS_RUN)
OTHER = pinned("2026-12-03-emerald-rapids-no-amx-run.json")     # one run of an Emerald Rapids without AMX
DECODING = {"AMX Xeon": DEC, "another Xeon": bench.parts(OTHER)[1]}
SMOKE_DEC = bench.parts(pinned("2026-12-06-znver4-2-cores-smoke-run.json"))[1]   # a short run on Zen 4


def test_the_page_reads_the_newest_file_with_peers_and_decoding():
    newest = [name for name in bench.results_files() if bench.parts(bench.read(name))[1] is not None][-1]
    assert bench.published("peers")["file"] == newest
    assert (ROOT / "book" / "07-peers.md").read_text().count('bench.published("peers")') == 1


def test_parts_of_a_one_run_file_are_the_run_itself():
    prefill, decoding = bench.parts(OTHER)
    assert prefill is decoding is OTHER and "rows" in decoding["decode"]


@pytest.mark.parametrize("name", list(DECODING))
def test_paired_decoding_ratios_are_medians_of_the_rounds(name):
    dec = DECODING[name]
    for t_k in report.t_ks(dec):
        for t_q in dec["decode"]["settings"]["t_qs"]:
            rows = {r["impl"]: r for r in dec["decode"]["rows"] if (r["t_k"], r["t_q"]) == (t_k, t_q)}
            for impl, row in rows.items():
                if impl == "jit" or not row.get("repeat_seconds") or not rows["jit"].get("repeat_seconds"):
                    continue
                per_round = [t / s for s, t in zip(rows["jit"]["repeat_seconds"], row["repeat_seconds"])]
                assert report.over_jit(dec, impl, t_k, t_q) == pytest.approx(statistics.median(per_round))
            if "torch" in rows and rows["torch"].get("seconds"):
                assert report.over_jit(dec, "torch", t_k, t_q) == pytest.approx(rows["jit"]["torch_over_this"])


@pytest.mark.parametrize("name", list(DECODING))
def test_memory_bound_recomputes_bytes_flops_and_ridge(name):
    dec = DECODING[name]
    s = dec["decode"]["settings"]
    t_k = report.t_ks(dec)[-1]
    m = report.memory_bound(dec, t_k)
    assert m["bytes"] == 2 * s["h_kv"] * t_k * s["d"] * 4 and m["flops"] == 4 * s["h_q"] * t_k * s["d"]
    assert m["intensity"] == pytest.approx(s["h_q"] / s["h_kv"] / 2)
    rounds = report.reader_rounds(dec, "memory_read", t_k)
    assert m["bandwidth_gbs"] == pytest.approx(statistics.median(rounds))
    assert m["ridge"] == pytest.approx(report.ceiling(dec["peak"])[1] / m["bandwidth_gbs"])


# ------------------------------------------------------------------ words, where they flip

def test_the_read_target_is_judged_against_the_faster_reader():
    """P-1, P-new-4: in the AMX Xeon's file the reader of the same K and V was the faster at
    T_k = 4096 (66% of it: missed, against 166% of memory's); in the smoke run at 4096 it was
    the slower, so the share is taken against memory's reader there."""
    flipped = set()
    for dec in (DEC, SMOKE_DEC):
        for t_k in report.t_ks(dec):
            share, against = report.read_share(dec, t_k)
            row = next(r for r in dec["decode"]["rows"] if (r["impl"], r["t_k"], r["t_q"]) == ("jit", t_k, 1))
            memory, same = row["paired_read_fraction"], row["kv_read_fraction"]
            assert share == min(memory, same) and ("same K and V" in against) == (same < memory)
            flipped.add((rules.goal(share, 0.70), "same K and V" in against))
    assert {("met", True), ("missed", True), ("missed", False)} <= flipped
    assert report.read_share(DEC, 4096)[0] == pytest.approx(0.659, abs=1e-3)
    assert rules.beside_goal(0.696, 0.70, 0, percent=True) == "69.6%"


def test_a_cache_is_named_only_when_the_rounds_do_not_overlap():
    """P-2: at T_k = 4096 every round of the same-bytes reader beat every round of memory's; at
    32768 the two ranges overlap (a 3% difference of medians), so no cache is claimed."""
    words = {}
    for t_k in report.t_ks(DEC):
        same, memory = (report.reader_rounds(DEC, reader, t_k) for reader in ("kv_read", "memory_read"))
        words[t_k] = rules.from_cache(same, memory)
        assert ("from a cache" in words[t_k]) == (min(same) > max(memory))
    assert "from a cache" in words[4096] and "no sign" in words[32768]
    assert rules.from_cache([], [1.0]) == "not measured"
    assert rules.from_cache([1.0, 1.1], [1.2, 1.3]).startswith("slower")


def test_error_verdict_uses_one_band_and_flips_across_the_shapes():
    """P-6: jit bf16 against OpenVINO default, shape by shape, within one 10% band."""
    ov = {(e["n"], e["causal"]): e["max_error"] for e in report.peer_entries(RUN, "openvino_default")}
    words = {rules.error_verdict(e["max_error"], ov[e["n"], e["causal"]])
             for e in report.peer_entries(RUN, "jit_bf16") if e["max_error"]}
    assert {"about the same as", "smaller than"} <= words
    assert rules.error_verdict(1.09, 1.0) == "about the same as" and rules.error_verdict(1.11, 1.0) == "larger than"
    assert rules.error_verdict(0.89, 1.0) == "smaller than"


@pytest.mark.parametrize("name", list(DECODING))
def test_one_token_is_below_the_ridge_or_undecided_never_above(name):
    dec = DECODING[name]
    m = report.memory_bound(dec, report.t_ks(dec)[-1])
    side = rules.ridge_side(m["intensity"], m["ridge_range"])
    low, high = m["ridge_range"]
    assert low <= m["ridge"] <= high
    assert side == ("below the ridge (memory-bound)" if m["intensity"] < 0.75 * low else side)
    assert not side.startswith("above")


def test_precisions_are_read_from_the_rows():
    assert report.precision(RUN, "torch") == "float32"
    assert report.precision(RUN, "openvino_default") != "float32"       # bfloat16 on this AMX machine
    assert report.precision(OTHER, "openvino_default") in {"float32", "bf16", "f16"}


@pytest.mark.parametrize("part", ["prefill", "decoding"])
def test_the_boxes_are_read_from_each_part(part):
    run = RUN if part == "prefill" else DEC
    box = method.method_box(run)
    assert box["commit measured"] == run["machine"]["source"]["commit"][:10]
    assert box["OpenMP wait policy"] == "OMP_WAIT_POLICY=ACTIVE in the workers"
    assert "rocketlake" in box["CPU"]


def test_markdown_tables_refuse_a_bar():
    assert report.markdown([["a", "b"], ["1", "2"]]).splitlines()[1] == "|---|---|"
    with pytest.raises(ValueError, match="split"):
        report.markdown([["a|b"]])


def test_peer_clause_says_why_a_peer_was_not_timed():
    """A run without OpenVINO installed says so, instead of a range of no values."""
    timed = rules.peer_clause("bf16", report.peer_entries(RUN, "openvino_default"))
    assert timed.startswith("In this run its products ran in bf16, at errors up to") and "nan" not in timed
    note = "skipped: openvino is not installed"
    untimed = [{"n": 1024, "causal": False, "ratio": None, "max_error": None, "note": note}]
    assert rules.peer_clause("float32", untimed) == f"This run did not time it: {note}."


def test_a_file_without_a_timed_peer_is_no_peers_run():
    untimed = {**OTHER, "peer_ratios": [{**e, "ratio": None} for e in OTHER["peer_ratios"]]}
    assert bench.holds(OTHER, "peers") and not bench.holds(untimed, "peers")
