"""Chapter 7 says of a results file only what the file says.

Its numbers come from attncore.bench.report, checked here against plain loops over the
file's rows; its words come from the rules of book/_ext/coursebook, each rendered on
committed results files where the word flips (attncore/bench/results/ and tests/results/)
or, for a rule of the build machine, on values either side of its threshold. The method
box is checked field by field against the file. The chapters' cells are checked to choose
no word outside those rules.
"""
import ast
import math
import re
import statistics
import subprocess

import pytest

from attncore import bench
from attncore.bench import asm, report
from tests.bookcode import ROOT, glue_calls, method, pinned, rules

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

BOOK = ROOT / "book"

FILES = {"chapter 7's published run": lambda: pinned("2026-11-30-xeon-emerald-rapids-2-cores.json"),
         "the peers run": lambda: bench.parts(pinned("2026-12-03-xeon-amx-2-cores-peers.json"))[0],
         "a run on another Xeon": lambda: pinned("2026-12-03-emerald-rapids-no-amx-run.json"),
         "a run with a measured clock": lambda: pinned("2026-12-06-znver4-2-cores-smoke-run.json")}


# ------------------------------------------------------------------ numbers, against plain loops

@pytest.mark.parametrize("name", [n for n in FILES if n != "the peers run"])
def test_tile_ratios_are_the_median_of_the_rounds(name):
    run = FILES[name]()
    for (n, causal), ratio in report.tile_ratios(run).items():
        rows = {r["impl"]: r for r in run["rows"] if (r["n"], r["causal"]) == (n, causal)}
        tiles, text = rows["numpy_flash"]["repeat_seconds"], rows["textbook"]["repeat_seconds"]
        per_round = [t / s for s, t in zip(text, tiles)]
        assert ratio == pytest.approx(statistics.median(per_round))


@pytest.mark.parametrize("name", list(FILES))
def test_one_peak_per_run_and_its_ridge(name):
    peak = FILES[name]()["peak"]
    label, top = report.ceiling(peak)
    clock = (peak.get("measured_clock") or {}).get("ghz")
    if clock:
        assert label == "theoretical peak at the measured clock"
        assert top == pytest.approx(peak["theoretical"]["gflops"] / peak["theoretical"]["clock_ghz"] * clock)
    else:
        assert label == "sgemm peak of one thread times the cores" and top == peak["measured_gflops"]
    copy = (peak.get("bandwidth") or {}).get("all_cores_gbs")
    assert report.ridge(peak) == (pytest.approx(top / copy) if copy else None)


def test_the_files_flip_the_peak():
    labels = {report.ceiling(FILES[name]()["peak"])[0] for name in FILES}
    assert labels == {"theoretical peak at the measured clock", "sgemm peak of one thread times the cores"}


# ------------------------------------------------------------------ the rules, where their word flips

@pytest.mark.parametrize("name", list(FILES))
def test_ridge_side_decides_only_outside_the_range_of_ridges_and_its_margin(name):
    peak = FILES[name]()["peak"]
    ridges, m = report.ridge_range(peak), rules.RIDGE_MARGIN
    if ridges is None:
        assert report.ridge(peak) is None and rules.ridge_side(6.4, ridges).startswith("not known")
        assert "no ridge" in rules.ridge_clause(None, None)
        return
    copy = peak["bandwidth"]["all_cores_gbs"]
    assert rules.ridge_clause(report.ridge(peak), copy).endswith(f"at {report.ridge(peak):.1f} flop per byte.")
    low, high = ridges
    assert low == pytest.approx(report.ridge(peak))            # the fastest copy gives the lowest ridge
    assert rules.ridge_side(low * (1 - m) * 0.99, ridges) == "below the ridge (memory-bound)"
    assert rules.ridge_side(high * (1 + m) * 1.01, ridges) == "above the ridge (compute-bound)"
    for x in (low * (1 - m) * 1.01, low, high, high * (1 + m) * 0.99):
        assert rules.ridge_side(x, ridges).startswith("within 25% of the ridge's range")


def test_ridge_range_spans_the_repeated_copies():
    """C-5: copies of one build that ran at 10 and 20 GB/s put a 200 GFLOP/s peak's ridge between
    10 and 20 flop per byte; 8 is then undecided (the margin), 7 below, 26 above."""
    peak = {"measured_gflops": 200.0, "theoretical": {"cores": 2},
            "bandwidth": {"all_cores_gbs": 20.0, "all_cores_runs_gbs": [10.0, 20.0, 15.0]}}
    assert report.ridge_range(peak) == (10.0, 20.0)
    words = [rules.ridge_side(x, (10.0, 20.0)) for x in (7, 8, 15, 24, 26)]
    assert [w.split()[0] for w in words] == ["below", "within", "within", "within", "above"]
    assert report.ridge_range({**peak, "bandwidth": {"all_cores_gbs": 20.0}}) == (10.0, 10.0)


@pytest.mark.parametrize("name", list(FILES))
def test_the_spread_of_the_peak_is_the_spread_of_its_measurements(name):
    run = FILES[name]()
    clock = run["peak"].get("measured_clock")
    runs = clock["runs_ghz"] if clock else [r["sgemm_1t_gflops"] for r in run["rows"] if r.get("sgemm_1t_gflops")]
    assert report.ceiling_spread(run["peak"], run["rows"]) == pytest.approx(max(runs) / min(runs) - 1)
    assert report.ceiling_spread(run["peak"]) == (pytest.approx(max(runs) / min(runs) - 1) if clock else 0.0)
    formula = report.ceiling_formula(run["peak"])                # the one peak, with its own numbers
    factors = [float(x) for x in re.findall(r"[\d.]+", formula)]
    assert math.prod(factors) == pytest.approx(report.ceiling(run["peak"])[1], rel=0.01)


@pytest.mark.parametrize("name", [n for n in FILES if n != "the peers run"])
def test_above_ceiling_sorts_the_points_by_the_spread_of_the_peak(name):
    run = FILES[name]()
    label, top = report.ceiling(run["peak"])
    spread = report.ceiling_spread(run["peak"], run["rows"])
    points = [("under", 1.0, top * (1 - spread) * 0.99), ("at_low", 1.0, top * (1 - spread / 2)),
              ("at_high", 1.0, top * (1 + spread / 2)), ("over", 1.0, top * (1 + spread) * 1.01)]
    text = rules.above_ceiling(points, label, top, spread)
    within, _, above = text.partition("Above it by more than that")
    assert "under at" not in text and "at_low at" in within and "at_high at" in within and "over at" in above
    assert ("yardstick" in above) == label.startswith("sgemm peak")
    assert ("rules out" in above) == label.startswith("theoretical")
    under = rules.above_ceiling(points[:1], label, top, spread)
    assert under == f"Every point is under the {label} ({top:.0f} GFLOP/s)."


def test_the_files_flip_above_ceiling():
    """On the smoke run every point is under its peak; in the published run jit sits within the
    12% its sgemm rates spread, so no point is called above a yardstick that its noise covers."""
    texts = {}
    for name in ("a run with a measured clock", "chapter 7's published run"):
        run = FILES[name]()
        label, top = report.ceiling(run["peak"])
        points = report.points(run, {"naive": 6.4, "jit": 256.0, "torch": 128.0}, n=max(run["settings"]["sizes"]))
        texts[name] = rules.above_ceiling(points, label, top, report.ceiling_spread(run["peak"], run["rows"]))
    assert texts["a run with a measured clock"].startswith("Every point is under")
    assert "Within that spread of it: jit at" in texts["chapter 7's published run"]
    assert "Above" not in texts["chapter 7's published run"]


def test_points_are_float32_only():
    """C-3: a bfloat16 row (AMX, vdpbf16ps) is no point under a float32 peak."""
    run = FILES["the peers run"]()
    names = {impl for impl, _, _ in report.points(run, {"jit": 256.0, "jit_bf16": 256.0, "openvino_default": 128.0,
                                                        "torch": 128.0})}
    assert names == {"jit", "torch"}


def test_clock_clause_says_which_clock_the_file_measured():
    """C-1: a file with a clock names it; one without gives the reported clock's peak as unknown."""
    measured, reported = (FILES[name]()["peak"] for name in ("a run with a measured clock",
                                                             "chapter 7's published run"))
    assert f"{measured['measured_clock']['ghz']:.2f} GHz with every core busy" in rules.clock_clause(100.0, measured)
    text = rules.clock_clause(290.0, reported)
    assert "measured no clock" in text and f"{290 / reported['theoretical']['gflops']:.0%}" in text


def test_stores_clause_flips_with_the_stores():
    assert "stays in registers" in rules.stores_clause(0, 48)
    assert "once per 4 multiply-adds" in rules.stores_clause(2, 8)


def test_packing_bound_is_amdahl_and_none_within_the_spread_of_the_peak():
    """C-9: against one core's peak at its measured clock, with the clock's spread as the margin."""
    assert "no gap" in rules.packing_bound(0.995, 0.6, 0.01) and "no gap" in rules.packing_bound(1.02, 0.6, 0.01)
    assert "no gap" not in rules.packing_bound(0.985, 0.6, 0.01)
    text = rules.packing_bound(0.5, 0.6, 0.01)
    assert "2.00 times as fast" in text and f"{1 / (0.4 + 0.3):.2f} times" in text


def test_other_runs_is_said_only_when_the_file_keeps_them():
    """P-new-1: no "0 more runs ... (- at N = 0)" for a file without other runs."""
    assert rules.other_runs(0, 0, "- at N = 0") == ""
    assert rules.other_runs(2, 0.3, "JAX at N = 1024").startswith("The file keeps the float32 ratios of 2 more runs")


def test_build_machine_words():
    assert rules.first_call(0).startswith("compiled") and rules.first_call(3).startswith("loaded")
    assert rules.vectorised(0).startswith("did not") and rules.vectorised(5) == "vectorised it"
    amx = rules.isa_clause({"amx_bf16": True, "amx_tile": True, "avx512_bf16": True})
    assert "int8 into int32" in amx and "AMX" in amx and "float16" not in amx.replace("bfloat16", "")
    fp16 = rules.isa_clause({"amx_bf16": True, "amx_tile": True, "amx_fp16": True})
    assert "bfloat16 and float16 into float32" in fp16
    assert "vdpbf16ps but no AMX" in rules.isa_clause({"avx512_bf16": True})
    assert "emulated" in rules.isa_clause({})


@pytest.mark.parametrize("kind", ["chapter7", "peers"])
def test_the_newest_published_run_has_every_field_the_pages_read(kind):
    """Whatever run is published next, the pages find their numbers in it."""
    prefill, decoding = bench.parts(bench.published(kind))
    assert report.ceiling(prefill["peak"])[1] and set(method.method_box(prefill)) == set(method.method_box({}))
    if kind == "chapter7":
        assert report.tile_ratios(prefill) and report.points(prefill, {"jit": 256.0}, n=4096)
    else:
        t_k = report.t_ks(decoding)[-1]
        assert report.memory_bound(decoding, t_k)["ridge"] and report.read_share(decoding, t_k)[0]


# ------------------------------------------------------------------ the method box

@pytest.mark.parametrize("name", list(FILES))
def test_the_method_box_is_read_from_the_file(name):
    run = FILES[name]()
    box = method.method_box(run)
    settings, machine = run.get("settings", {}), run["machine"]
    commit = (machine.get("source") or {}).get("commit")
    assert box["commit measured"].startswith(commit[:10]) if commit else box["commit measured"] == method.NOT_RECORDED
    pause = settings.get("pause_s")
    assert box["pause before each timed call"] == (f"{pause * 1e3:g} ms" if pause is not None else method.NOT_RECORDED)
    assert (box["processes"] == settings["processes"]) if settings.get("processes") else \
        box["processes"] == method.NOT_RECORDED
    assert box["rounds"].startswith(str(settings["repeats"]))
    assert machine["cpu"] in box["CPU"]
    assert "; ".join(f"{k}: {v}" for k, v in box.items()) + "." == method.text(box)


def test_the_live_box_names_the_commit_of_this_build():
    """C-10: the live rows' box reads bench.info(), whose "source" is the commit of the clone
    attncore was imported from."""
    source = bench.info()["source"]
    if source is None:
        pytest.skip("attncore is not imported from a git clone here")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    box = method.method_box({"machine": {"source": source, "cpu": "a CPU"}, "settings": {}})
    assert source["commit"] == head and box["commit measured"].startswith(head[:10])


def test_a_run_that_recorded_no_method_shows_not_recorded():
    run = FILES["chapter 7's published run"]()        # measured before the fields existed
    box = method.method_box(run)
    assert box["commit measured"] == box["pause before each timed call"] == box["processes"] == method.NOT_RECORDED
    assert box["OpenMP wait policy"] == "OMP_WAIT_POLICY=PASSIVE"                # what its environment recorded


# ------------------------------------------------------------------ the compiled kernels' loops

NESTED = """
    .type _ZN8attncore3jit4tile,@function
.LBB0_2:
    vbroadcastss (%rsi), %zmm2
    vfmadd231ps (%rdx), %zmm2, %zmm0
    vfmadd231ps 64(%rdx), %zmm2, %zmm1
.LBB0_1:
    vbroadcastss (%rsi), %zmm3
    vfmadd231ps %zmm3, %zmm2, %zmm0
    vfmadd231ps (%rdx), %zmm3, %zmm1
    jne .LBB0_1
    vmovups %zmm0, (%rdi)
    vmovups %zmm1, 64(%rdi)
    jne .LBB0_2
"""

# Zen 4's "loops" path, as LLVM lays it out: a vector loop (2 multiplies, 6 FMAs on zmm, C
# stored twice) and a scalar remainder loop with more FMA instructions, one lane each.
ZEN4_LOOPS = """
    .type _ZN8attncore3jit5loops,@function
.LBB11_92:
    vmulps (%r13,%rcx), %zmm5, %zmm8
    vmulps 64(%r13,%rcx), %zmm5, %zmm9
""" + "".join(f"    vfmadd231ps {64 * i}(%r14,%rax,4), %zmm4, %zmm{8 + i % 2}\n" for i in range(6)) + """
    vmovups %zmm8, (%rdi)
    vmovups %zmm9, 64(%rdi)
    jne .LBB11_92
.LBB11_95:
""" + "".join(f"    vmulss {4 * i}(%r13), %xmm5, %xmm{i}\n" for i in range(4)) \
    + "".join(f"    vfmadd231ss {4 * i}(%r14), %xmm4, %xmm{i % 4}\n" for i in range(12)) \
    + "".join(f"    vmovss %xmm{i}, {4 * i}(%rdi)\n" for i in range(4)) + """
    jne .LBB11_95
"""


def test_reduction_loop_is_the_innermost_one():
    """The outer span holds more FMAs (its peeled step and the inner loop's text) and the stores
    of C; the reduction loop is the inner one: 2 FMAs, a broadcast and one FMA from memory."""
    assert len(asm.loop_bodies(NESTED)) == 2
    assert asm.memory_operations(asm.reduction_loop(NESTED)) == (2, 2, 0)


def test_reduction_loop_takes_the_vector_loop_not_the_scalar_remainder():
    loops = asm.innermost_loops(ZEN4_LOOPS)
    assert [asm.count(body) for body in loops] == [6, 12]          # the scalar loop has more FMA instructions
    body = asm.reduction_loop(ZEN4_LOOPS)
    assert asm.fma_lanes(body) == 6 * 16 and asm.memory_operations(body)[2] == 2
    assert asm.multiply_adds(body) == 8
    assert "once per 4 multiply-adds" in rules.stores_clause(2, asm.multiply_adds(body))
    assert asm.lanes("vfmadd231pd %ymm1, %ymm2, %ymm3") == 4 and asm.lanes("fmla v0.4s, v1.4s, v2.4s") == 4


@pytest.mark.slow
def test_loads_and_stores_of_the_compiled_kernels():
    """On this machine's code: the micro-kernel keeps C in registers; the plain loop's reduction
    loop is a vector loop (its FMA lanes exceed its FMA instructions)."""
    jit = pytest.importorskip("attncore.jit")
    path = jit.kernel_info()["path"]
    if path == "loops" or not re.search(r"x86|amd64", __import__("platform").machine(), re.I):
        pytest.skip("the micro-kernel's assembly is read on x86-64")
    micro = asm.reduction_loop(jit.kernel_info(path, asm=True)["asm"])
    fmas, loads, stores = asm.memory_operations(micro)
    assert fmas >= 8 and stores == 0 and loads < fmas
    plain = asm.reduction_loop(jit.kernel_info("loops", asm=True)["asm"])
    assert asm.fma_lanes(plain) > asm.count(plain)


# ------------------------------------------------------------------ the chapters' cells

def chooses_words(tree):
    """Whether an expression picks between two non-empty texts by a condition ("a" if x else "b")."""
    texts = (ast.Constant, ast.JoinedStr)
    return any(isinstance(node, ast.IfExp) and isinstance(node.body, texts) and isinstance(node.orelse, texts)
               and all(not (isinstance(x, ast.Constant) and x.value == "") for x in (node.body, node.orelse))
               for node in ast.walk(tree))


@pytest.mark.parametrize("chapter, prefix", [("04-cross-attention-and-decoding.md", "ch4_cpu"),
                                             ("05-many-heads.md", "ch5_cpu"), ("07-performance.md", ""),
                                             ("07-peers.md", "")])
def test_words_are_chosen_only_in_book_prose_cells_through_the_rules(chapter, prefix):
    """Outside the book-prose cell no glued value picks a word by a condition; the book-prose cell
    glues only what coursebook's rules and method box return. (In chapters 4 and 5, the
    paragraph on CPU timing.)"""
    for tags, name, expression in glue_calls(chapter):
        if not name.startswith(prefix):
            continue
        if "book-prose" in tags:
            assert re.search(r"rules\.|method\.", ast.unparse(expression)) or name in GLUED_FROM_RULES, name
        else:
            assert not chooses_words(expression) or name in FACTS_READ, (name, ast.unparse(expression))


GLUED_FROM_RULES = {"goals_story", "bf16_targets", "error_story"}   # built from rules.goal, rules.error_verdict
FACTS_READ = {"m3_expf", "l1_kib", "threads_per_core", "native_speedup", "untimed", "llc_mib", "fits", "pub_llc",
              "build_llc"}


@pytest.mark.parametrize("prefix, chapter", [("ch7_", "07-performance.md"), ("ch7p_", "07-peers.md")])
def test_every_glued_name_in_the_text_is_glued_by_a_cell(prefix, chapter):
    text = (BOOK / chapter).read_text()
    used = set(re.findall(r"\{glue:text\}`" + prefix + r"(\w+?)(?::[^`]*)?`", text))
    glued = [name for _, name, _ in glue_calls(chapter)]
    assert used and not {u for u in used if not any(re.fullmatch(pattern, u) for pattern in glued)}
