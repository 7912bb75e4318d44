"""Chapter 7 and its peers page, rendered on every results file they may read.

test_ch7_glue.py and test_peers_page.py test each rule and number alone; here both pages'
cells that read a results file (tagged "results-file"; the cells that time this build are
left out) run on every committed file, on every file in tests/results and on fresh files as
`python -m benchmarks.harness --publish` writes them (a measured clock, peer rows, bfloat16
rows), made from committed runs. On each, the page's glued text must hold no placeholder,
name one peak (the same in the text, the worked example and the figures), list only what
its figures draw, and say of the file only what the file shows.
"""
import copy
import functools
import re
import statistics

import matplotlib
import pytest

from attncore import bench
from attncore.bench import report
from tests.bookcode import RESULTS_TAG, ROOT, finite, glue_calls, pinned, render

matplotlib.use("Agg")
pytestmark = pytest.mark.xdist_group("numba-flash")  # the pages import attncore.jit (conftest.py)

CH7, PEERS = "07-performance.md", "07-peers.md"
PUBLISHED_CH7 = "2026-11-30-xeon-emerald-rapids-2-cores.json"
PUBLISHED_PEERS = "2026-12-03-xeon-amx-2-cores-peers.json"
SMOKE, NO_AMX = "2026-12-06-znver4-2-cores-smoke-run.json", "2026-12-03-emerald-rapids-no-amx-run.json"


MISSING = "skipped: openvino is not installed (pip install -e '.[bench-peers]')"   # the harness's note


def fresh(peers_from: str, machine_from: str, jit_at: float, clock_runs_ghz=None, without=()) -> dict:
    """A results file as `harness --publish` writes one, made from committed runs: the course's
    implementations of chapter 7's published run and the peer and bfloat16 rows of `peers_from`
    at the sizes of the latter (its jit rows left out: the peers pair with chapter 7's), on the
    machine, peak and decoding
    of `machine_from`; every time scaled so that jit's fastest point lies at `jit_at` times the
    file's one peak; a measured clock of `clock_runs_ghz` where given; the implementations
    `without` not installed (rows with the harness's note only, in prefill and decoding). Ratios
    are recomputed by the harness's own functions."""
    chapter7, (peers, _), machine = pinned(PUBLISHED_CH7), bench.parts(pinned(peers_from)), pinned(machine_from)
    peak = copy.deepcopy(machine["peak"])
    if clock_runs_ghz:
        peak["measured_clock"] = {**(peak.get("measured_clock") or {}), "ghz": max(clock_runs_ghz),
                                  "runs_ghz": clock_runs_ghz}
    sizes = peers["settings"]["sizes"]
    rows = copy.deepcopy([r for r in chapter7["rows"] if r["n"] in sizes]
                         + [r for r in peers["rows"] if r["impl"] != "jit"])
    decode = copy.deepcopy(machine["decode"])
    for table in (rows, decode["rows"]):
        table[:] = [{k: r[k] for k in ("n", "causal", "t_k", "t_q", "impl") if k in r} | {"note": MISSING}
                    if r["impl"] in without else r for r in table]
    slower = max(r["gflops"] for r in rows if r["impl"] == "jit") / (jit_at * report.ceiling(peak)[1])
    for r in rows:
        for key in ("seconds", "cpu_seconds"):
            if r.get(key):
                r[key] *= slower
        for key in ("gflops", "sgemm_1t_gflops"):
            if r.get(key):
                r[key] /= slower
        if r.get("repeat_seconds"):
            r["repeat_seconds"] = [t * slower for t in r["repeat_seconds"]]
    peak["sgemm_1t_gflops"] = statistics.median(r["sgemm_1t_gflops"] for r in rows if r.get("sgemm_1t_gflops"))
    peak["measured_gflops"] = peak["sgemm_1t_gflops"] * peak["theoretical"]["cores"]
    peer_names = [n for n in bench.peers.PEER_NAMES if any(r["impl"] == n for r in rows)]
    return {"machine": copy.deepcopy(machine["machine"]),
            "settings": {**copy.deepcopy(machine["settings"]), "sizes": sizes,
                         "repeats": chapter7["settings"]["repeats"]},
            "compile_cost": chapter7["compile_cost"], "peak": peak, "rows": rows, "ratios": bench.ratios(rows),
            "peer_ratios": bench.peer_ratios(rows, peers=peer_names), "decode": decode,
            "load_average_end": machine["load_average_end"], "file": f"fresh, {peers_from} on {machine_from}"}


# The fresh files: the evening's machine (Zen 4, a measured clock that spread by 1%) with the
# AMX Xeon's peers, its kernel at 100.5% of the peak (inside the spread); an Emerald Rapids
# with a clock measured low, its kernel 10% above the peak (outside it); and a Zen 4 run
# where OpenVINO was not installed.
FRESH = {"a fresh Zen 4 run": lambda: fresh(PUBLISHED_PEERS, SMOKE, 1.005),
         "a fresh Xeon run": lambda: fresh(NO_AMX, NO_AMX, 1.10, [2.131, 2.1375, 2.134]),
         "a fresh run without OpenVINO": lambda: fresh(NO_AMX, SMOKE, 0.9,
                                                       without=("openvino_f32", "openvino_default"))}
TESTS_RESULTS = sorted(p.name for p in (ROOT / "tests" / "results").glob("*.json"))
EVERY_FILE = [*bench.results_files(), *TESTS_RESULTS, *FRESH]     # the committed runs, whatever is published next


@functools.cache
def results(name: str) -> dict:
    return FRESH[name]() if name in FRESH else pinned(name)


CH7_FILES = [name for name in EVERY_FILE if bench.holds(results(name), "chapter7")]
PEERS_FILES = [name for name in EVERY_FILE if bench.holds(results(name), "peers")]


@functools.cache
def page(chapter: str, name: str):
    """The chapter's results-file cells run on the named file (a fresh file is both pages' run,
    as a published one would be; else chapter 7's published run for the peers page's comparison)."""
    run = results(name)
    chapter7 = run if bench.holds(run, "chapter7") else bench.published("chapter7")
    return render(chapter, {"chapter7": chapter7 if chapter == PEERS else run, "peers": run})


def test_every_kind_of_file_is_rendered():
    """Chapter 7 on its published runs and both fresh files (no file of tests/results holds its
    sizes); the peers page on every file that holds peers and decoding."""
    assert {bench.published("chapter7")["file"], PUBLISHED_CH7, *FRESH} <= set(CH7_FILES)
    assert {bench.published("peers")["file"], PUBLISHED_PEERS, *TESTS_RESULTS, *FRESH} <= set(PEERS_FILES)
    assert {bool(results(n)["peak"].get("measured_clock")) for n in CH7_FILES} == {True, False}


# ------------------------------------------------------------------ both pages: nothing left blank

PLACEHOLDERS = re.compile(r"\bnan\b|\bNone\b|- at N = 0|\b0 more runs|<<|not measured;|\(\)")


@pytest.mark.parametrize("chapter, name", [(CH7, n) for n in CH7_FILES] + [(PEERS, n) for n in PEERS_FILES])
def test_no_glued_text_is_a_placeholder(chapter, name):
    rendered = page(chapter, name)
    for key, value in rendered.glued.items():
        assert finite(value), key
        assert not PLACEHOLDERS.search(str(value)), (key, value)
    prefix = "ch7_" if chapter == CH7 else "ch7p_"
    live = [prefix + pattern for tags, pattern, _ in glue_calls(chapter) if RESULTS_TAG not in tags]
    unglued = {name for name in re.findall(r"<(ch7p?_\w+)>", rendered.prose)
               if not any(re.fullmatch(pattern, name) for pattern in live)}
    assert not unglued, unglued      # every name of the prose is glued by a results-file cell or a live one


# ------------------------------------------------------------------ chapter 7: one peak, the one drawn

@pytest.mark.parametrize("name", CH7_FILES)
def test_one_peak_in_the_text_the_worked_example_and_the_figures(name):
    run, rendered = results(name), page(CH7, name)
    label, top = report.ceiling(run["peak"])
    assert rendered.glued["ch7_pub_ceiling_name"] == label and rendered.glued["ch7_pub_ceiling"] == pytest.approx(top)
    flops = 4 * 4096**2 * 64
    assert rendered.glued["ch7_w_t_peak_ms"] == pytest.approx(flops / (top * 1e9) * 1e3)   # the worked example
    for figure in rendered.figures[:2]:                    # the roofline and the throughput figure
        for ax in figure.axes:
            peaks = [text for text in ax.get_legend_handles_labels()[1] if "peak" in text]
            assert len(peaks) == 1 and peaks[0].startswith(f"{label}, {top:.0f} GFLOP/s")
    clock = (run["peak"].get("measured_clock") or {}).get("ghz")
    story = rendered.text("ch7_pub_clock_story")
    assert (f"{clock:.2f} GHz" in story) if clock else "measured no clock" in story
    for story in ("ch7_pub_roofline_story", "ch7_pub_throughput_story"):
        assert label in rendered.text(story)
    if clock:   # a file with a clock: nothing calls the sgemm rate its peak
        assert "one thread's sgemm" not in re.sub(r"of one thread's sgemm times the cores,\s+timed in the same rounds",
                                                  "", paragraph(rendered.prose, "**Against the roofline.**"))


def paragraph(prose, start):
    i = prose.index(start)
    return prose[i:prose.index("\n\n", i)]


@pytest.mark.parametrize("name", CH7_FILES)
def test_the_backend_is_pytorchs_alone(name):
    run, rendered = results(name), page(CH7, name)
    torch = {r["backend"] for r in run["rows"] if r["impl"] == "torch" and r.get("backend")}
    assert set(rendered.text("ch7_pub_backend").split(", ")) == torch


POINT = re.compile(r"(\w+) at N = (\d+)( causal)? at (\d+)%")


@pytest.mark.parametrize("name", CH7_FILES)
def test_the_throughput_sentence_names_the_drawn_points_at_or_above_the_peak(name):
    run, rendered = results(name), page(CH7, name)
    label, top = report.ceiling(run["peak"])
    spread = report.ceiling_spread(run["peak"], run["rows"])
    drawn = {}                                           # (impl, N, causal) -> GFLOP/s, read off the figure
    titles = {style[2]: impl for impl, style in rendered.namespace["IMPL_STYLE"].items()}
    for ax, causal in zip(rendered.figures[1].axes, (False, True)):
        for line in ax.lines:
            if line.get_label() in titles:
                drawn.update({(titles[line.get_label()], int(n), causal): y
                              for n, y in zip(line.get_xdata(), line.get_ydata())})
    text = rendered.text("ch7_pub_throughput_story")
    at, _, above = text.partition("Above it by more than that")
    listed = {part: {(impl, int(n), bool(c)): int(percent) for impl, n, c, percent in POINT.findall(part)}
              for part in (at, above)}
    assert listed[at].keys() == {p for p, rate in drawn.items() if top * (1 - spread) <= rate <= top * (1 + spread)}
    assert listed[above].keys() == {p for p, rate in drawn.items() if rate > top * (1 + spread)}
    for point, percent in {**listed[at], **listed[above]}.items():
        assert percent == round(100 * drawn[point] / top)
    assert ("rules out" in above) == (bool(listed[above]) and label.startswith("theoretical"))
    assert ("yardstick" in above) == (bool(listed[above]) and label.startswith("sgemm"))


def test_a_point_inside_the_clocks_spread_is_at_the_peak_not_above_it():
    """C-4: in the fresh Zen 4 file jit's fastest point lies at 100.5%, inside the 1% its clock
    spread; in the fresh Xeon file at 110%, outside it, which the measured clock rules out."""
    inside = page(CH7, "a fresh Zen 4 run").text("ch7_pub_throughput_story")
    assert "jit at N = 16384 at 100%" in inside.split("Within that spread")[1] and "rules out" not in inside
    outside = page(CH7, "a fresh Xeon run").text("ch7_pub_throughput_story")
    assert "jit at N = 16384 at 110%" in outside.split("Above it")[1] and "rules out" in outside


@pytest.mark.parametrize("name", CH7_FILES)
def test_the_memory_and_tile_numbers_are_the_files(name):
    run, rendered = results(name), page(CH7, name)
    rss = {(r["impl"], r["n"]): r["rss_bytes"] for r in run["rows"] if not r["causal"] and r.get("rss_bytes")}
    over = [rss["textbook", n] / rss["naive", n] for impl, n in rss if impl == "textbook" and ("naive", n) in rss]
    assert rendered.glued["ch7_textbook_over_naive_min"] == pytest.approx(min(over))
    assert rendered.glued["ch7_textbook_over_naive_max"] == pytest.approx(max(over))
    llc = run["machine"].get("last_level_cache_bytes")
    assert rendered.glued["ch7_pub_llc"] == (f"{llc / 2**20:.0f} MiB" if llc else "not recorded")


# ------------------------------------------------------------------ the peers page

@pytest.mark.parametrize("name", PEERS_FILES)
def test_the_other_runs_sentence_only_where_the_file_keeps_them(name):
    run, rendered = results(name), page(PEERS, name)
    story = rendered.text("ch7p_other_runs_story")
    assert bool(story) == bool(run.get("other_peer_runs")) and "0 more runs" not in story


@pytest.mark.parametrize("name", PEERS_FILES)
def test_the_read_share_is_against_the_faster_reader(name):
    """P-new-4: never against a reader that came slower than the other in the same rounds."""
    _, dec = bench.parts(results(name))
    rendered = page(PEERS, name)
    goals = rendered.text("ch7p_goals_story")
    for t_k in report.t_ks(dec):
        row = next(r for r in dec["decode"]["rows"] if (r["impl"], r["t_k"], r["t_q"]) == ("jit", t_k, 1))
        fractions = [row.get(k) for k in ("paired_read_fraction", "kv_read_fraction") if row.get(k) is not None]
        share, against = report.read_share(dec, t_k)
        assert share == min(fractions)
        assert f"at T_k = {t_k} ({rendered.namespace['rules'].beside_goal(share, 0.70, 0, True)}, against {against})" \
            in goals
        if f"At T_k = {t_k}, the same bytes came slower" in rendered.text("ch7p_cache_story"):
            assert against != "a reader of the same K and V"


@pytest.mark.parametrize("name", PEERS_FILES)
def test_the_error_verdict_reads_the_files_own_errors(name):
    """P-new-5: the run's bfloat16 error against OpenVINO's, both from the file."""
    run, _ = bench.parts(results(name))
    rendered = page(PEERS, name)
    n = min(e["n"] for e in run["peer_ratios"])
    story = rendered.text("ch7p_error_story")
    for causal in (False, True):
        mine = next((e["max_error"] for e in report.peer_entries(run, "jit_bf16")
                     if (e["n"], e["causal"]) == (n, causal)), None)
        if mine is not None:
            assert f"{mine:.1e}{' causal' if causal else ''}, " in story
    assert rendered.glued["ch7p_bf16_half_eps"] == 2.0**-8                        # P-new-2: bfloat16's eps is 2^-7


@pytest.mark.parametrize("name", PEERS_FILES)
def test_bf16_speeds_are_medians_of_the_rounds(name):
    """P-new-6: the speed over OpenVINO default is the median over the rounds of OpenVINO's time
    over the bfloat16 path's, within a round, as is the speed over float32."""
    run, _ = bench.parts(results(name))
    rendered = page(PEERS, name)
    times = {(r["impl"], r["n"], r["causal"]): r.get("repeat_seconds") for r in run["rows"]}
    for (n, causal), (over_f32, over_ov, _, _) in rendered.namespace["bf16_cells"].items():
        mine = times.get(("jit_bf16", n, causal))
        for other, speed in (("jit", over_f32), ("openvino_default", over_ov)):
            theirs = times.get((other, n, causal))
            expected = statistics.median(t / s for s, t in zip(mine, theirs)) if mine and theirs else None
            assert speed == pytest.approx(expected)


@pytest.mark.parametrize("name", PEERS_FILES)
def test_decoding_is_judged_against_the_read_ridge(name):
    """P-new-7: the ridge of a decoding step is the peak over the read bandwidth, named so."""
    _, dec = bench.parts(results(name))
    rendered = page(PEERS, name)
    t_k = report.t_ks(dec)[-1]
    rounds = report.reader_rounds(dec, "memory_read", t_k) or [dec["decode"]["roof"]["read_gbs"]]
    top = report.ceiling(dec["peak"])[1]
    assert rendered.glued["ch7p_long_ridge"] == pytest.approx(top / statistics.median(rounds))
    assert rendered.glued["ch7p_long_ridge_low"] == pytest.approx(top / max(rounds))
    assert "read ridge" in " ".join(paragraph(rendered.prose, f"At $T_k$ = {t_k} one step").split())
