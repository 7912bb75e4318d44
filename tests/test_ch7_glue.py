"""Every sentence chapters 6 and 7 build from data follows from the numbers it prints.

Chapter 7 builds its data-dependent sentences with attncore.bench.story; here the same
functions render against the published run and against two synthetic runs of other machines
(one with the bandwidth the harness now records, mixed verdicts and a crossover of the NumPy
tiles; one whose kernel runs above both of its peaks), and each sentence is checked against
the numbers it prints. Chapter 6 builds no sentence from data: its glued values are numbers
inside fixed prose, which the static check below keeps true.
"""
import copy
import re
from pathlib import Path

import pytest

from attncore import bench
from attncore.bench import asm, story

pytestmark = pytest.mark.xdist_group("numba-flash")  # one worker compiles each kernel once (conftest.py)

BOOK = Path(__file__).resolve().parents[1] / "book"
JIT_INTENSITY = 256.0                      # block_q / 2 for blocks of 512 queries


def _scaled(results, factors):
    """A copy of results whose rows' times are multiplied by factors[(impl, causal, n)] (or by
    factors[impl]), with gflops and the ratio table recomputed as the harness does."""
    out = copy.deepcopy(results)
    for r in out["rows"]:
        f = factors.get((r["impl"], r["causal"], r["n"]), factors.get(r["impl"], 1.0))
        if r.get("seconds"):
            r["seconds"] *= f
            r["repeat_seconds"] = [t * f for t in r.get("repeat_seconds", [r["seconds"]])]
            r["gflops"] /= f
            if r.get("sgemm_fraction"):
                r["sgemm_fraction"] /= f
    out["ratios"] = bench.ratios(out["rows"])
    return out


def zen4_like():
    """Another machine: Zen 4 peaks (8 lanes per pipe), a measured bandwidth, PyTorch faster at
    small sizes, the NumPy tiles faster than the textbook formula at the large causal sizes."""
    pub = bench.published()
    factors = {"jit": 1.6, "torch": 1.2, ("jit", False, 512): 3.0, ("jit", True, 512): 3.0, ("jit", True, 4096): 2.6}
    for n in (1024, 2048):
        factors[("numpy_flash", True, n)] = 0.8
    out = _scaled(pub, factors)
    out["machine"].update(cpu="AMD EPYC 9R14", jit=dict(out["machine"]["jit"], cpu_name="znver4"))
    out["peak"] = {"theoretical": {"cores": 2, "fma_pipes": 2, "lanes": 8, "clock_ghz": 2.6, "gflops": 166.4,
                                   "vendor": "AuthenticAMD", "family": "25"},
                   "sgemm_1t_gflops": 100.5, "measured_gflops": 201.0,
                   "bandwidth": {"per_core_gbs": 26.1, "all_cores_gbs": 40.0, "threads": 2}}
    return out


def above_both_peaks():
    """A run whose kernel beat both of its own peaks (a nominal clock, a slow sgemm)."""
    pub = bench.published()
    out = _scaled(pub, {"numpy_flash": 0.3})           # the tiles beat the textbook formula everywhere
    out["peak"] = dict(out["peak"], sgemm_1t_gflops=120.0, measured_gflops=240.0,
                       bandwidth={"per_core_gbs": 12.0, "all_cores_gbs": 20.0, "threads": 2})
    return out


RUNS = {"published": bench.published, "zen4-like": zen4_like, "above-both-peaks": above_both_peaks}


@pytest.fixture(params=list(RUNS))
def run(request):
    results = RUNS[request.param]()
    return results, story.results_sentences(results, JIT_INTENSITY)


def _numbers(text):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _plain(key, text):
    """Glued text is inserted as plain text: no markup, no unrendered value, no empty list."""
    assert not re.search(r"\bno size\b|at no \w+|\bNone\b|\bnan\b|[{}$`]|  | ,|\.\.|;\s*;", text), (key, text)


def test_no_sentence_is_garbled(run):
    _, sentences = run
    for key, text in sentences.items():
        _plain(key, text)
        if key.endswith(("story", "opening")):
            assert text[0].isupper() and text.rstrip().endswith((".", ":")), (key, text)


def test_tiles_sentences_follow_the_ratios(run):
    results, s = run
    ratios = story.tile_ratios(results)
    slower = {k for k, r in ratios.items() if r > 1}
    low, high = min(ratios.values()), max(ratios.values())
    for key in ("tiles_story", "tiles_intro"):
        if "times as long" in s[key]:
            assert f"{low:.2f} to {high:.2f} times as long" in s[key], s[key]
    both = 0 < len(slower) < len(ratios)
    assert ("both cases" in s["tiles_opening"]) == both
    if not both:
        assert "every size" in s["tiles_story"]
        assert ("took longer" in s["tiles_story"]) == bool(slower)
        assert ("yes" in s["tiles_opening"]) == bool(slower)
    else:
        listed = s["tiles_story"].split("formula at ")[1].split(", and no longer at ")
        named = [set(re.findall(r"N = (\d+)( causal)?", part)) for part in listed]
        as_keys = [{(int(n), bool(c)) for n, c in part} for part in named]
        assert as_keys[0] == slower and as_keys[1] == set(ratios) - slower


def test_verdict_words_follow_the_ratios(run):
    results, s = run
    table = {t["n"]: t for t in results["ratios"]}
    word = s["jt_full_word"]
    if word.endswith("at every size"):
        verdicts = {story.compared(t["jit_vs_torch_full"]) for t in table.values()}
        assert verdicts == {word.removesuffix(" at every size")}
    else:
        *named, rest = word.split("; ")
        listed = set()
        for part in named:
            verdict, sizes = part.split(" at N = ")
            for n in map(int, sizes.split(", ")):
                assert story.compared(table[n]["jit_vs_torch_full"]) == verdict, (n, word)
                listed.add(n)
        verdict = rest.removesuffix(" at the other sizes")
        assert all(story.compared(t["jit_vs_torch_full"]) == verdict for n, t in table.items() if n not in listed)
    r = table[4096]
    assert s["jt_4096_word"] == ("faster" if r["jit_vs_torch_full"] > 1.03 else
                                 "slower" if r["jit_vs_torch_full"] < 0.97 else "about as fast")
    cs_jit, cs_torch = r["causal_speedup_jit"], r["causal_speedup_torch"]
    assert f"{cs_jit:.2f}" in s["causal_story"] and f"{cs_torch:.2f}" in s["causal_story"]
    assert ("the schedule adds" in s["causal_story"]) == (cs_jit > cs_torch + 0.1)
    assert ("PyTorch gained more" in s["causal_story"]) == (cs_torch > cs_jit + 0.1)
    reached = round(100 * r["jit_sgemm_fraction_full"]) >= 100
    assert s["roofline_story"].startswith("Reaching the measured peak") == reached


def test_roofline_draws_one_machine_and_no_point_above_its_roof(run):
    results, s = run
    ceilings = story.roofs(results)
    points = story.roofline_points(results, JIT_INTENSITY)
    text = s["pub_roofline_story"]
    assert {name for name, _, _ in points} <= {"naive", "jit", "torch"}
    assert ("no sloped roof" in text) == (ceilings["bandwidth"] is None)
    above = [name for name, x, rate in points if rate > story.roof(ceilings, x)]
    if above:
        assert "neither peak is a ceiling" in text and "under its roof" not in text
        for name in above:
            assert story.NAMES[name].lower() in text.lower()
    else:
        best = max(rate for _, _, rate in points)
        flat = max(ceilings["theoretical"], ceilings["measured"])
        assert f"reached {best / flat:.0%} of the flat roof ({flat:.0f} GFLOP/s)" in text
    if ceilings["bandwidth"]:
        ridge = story.ridge(ceilings)
        assert f"ridge point is at {ridge:.0f} flop per byte" in text
        memory = [story.NAMES[n] for n, x, _ in points if x < ridge]
        assert ("every point lies on the compute side" in text) == (not memory)


def test_published_run_says_what_it_never_measured():
    """The published run measured no bandwidth: the file says so, and nothing is drawn for it."""
    pub = bench.published()
    bandwidth = pub["peak"]["bandwidth"]
    assert bandwidth["per_core_gbs"] is None and bandwidth["all_cores_gbs"] is None and bandwidth["note"]
    ceilings = story.roofs(pub)
    assert ceilings["measured_per_core"] == pub["peak"]["sgemm_1t_gflops"]
    assert ceilings["theoretical_per_core"] * ceilings["cores"] == pytest.approx(ceilings["theoretical"])
    assert story.ridge(ceilings) is None
    assert ceilings["measured_clock_ghz"] is None and ceilings["theoretical_at_measured_clock"] is None


def test_a_zen4_build_draws_its_own_points_under_its_own_roofs():
    """The review's case: the Zen 4 build's roofs (166 and 201 GFLOP/s) are never drawn over the
    published run's points; each machine's points sit under that machine's roofs."""
    zen = zen4_like()
    for results in (bench.published(), zen):
        ceilings = story.roofs(results)
        for name, x, rate in story.roofline_points(results, JIT_INTENSITY):
            assert rate <= story.roof(ceilings, x), (results["machine"]["cpu"], name, rate)


# ------------------------------------------------------------------ loads and stores per FMA

NESTED = """\
	.type	_ZN8attncore3jit13introspection9_productsE,@function
_ZN8attncore3jit13introspection9_productsE:
.LBB0_1:
	vmovups	(%rdi), %zmm0
.LBB0_2:
	vbroadcastss	(%rsi,%rax,4), %zmm2
	vmovups	(%rdx), %zmm3
	vfmadd231ps	%zmm3, %zmm2, %zmm0
	vfmadd231ps	64(%rdx), %zmm2, %zmm1
	addq	$1, %rax
	jne	.LBB0_2
	vfmadd231ps	%zmm3, %zmm2, %zmm0
	vfmadd231ps	%zmm3, %zmm2, %zmm1
	vfmadd231ps	%zmm3, %zmm2, %zmm4
	vmovups	%zmm0, (%rdi)
	vmovups	%zmm1, 64(%rdi)
	jne	.LBB0_1
"""


def test_reduction_loop_is_the_innermost_one():
    """The outer span holds more FMAs (its peeled step and the inner loop's text) and the stores
    of C; the reduction loop is the inner one: 2 FMAs, 3 loads, no store."""
    assert len(asm.loop_bodies(NESTED)) == 2
    body = asm.reduction_loop(NESTED)
    assert asm.memory_operations(body) == (2, 3, 0)


def _loads_stores(counts, path):
    text = story.loads_stores_sentence(counts, path)
    _plain("lsf_story", text)
    for name in ("loops", path):
        f, loads, stores, _ = counts[name]
        assert f"{f} FMAs" in text and f"{loads} loads and {stores} stores" in text
        assert f"{loads / max(f, 1):.2f} loads and {stores / max(f, 1):.2f} stores per FMA" in text
    assert ("stays in registers for the whole reduction" in text) == (counts[path][2] == 0)
    assert ("stores nothing" in text) == (counts["loops"][2] == 0)
    return text


def test_loads_and_stores_sentence_follows_the_counts():
    _loads_stores({"loops": (6, 10, 2, 8), "avx512": (48, 22, 0, 48)}, "avx512")
    _loads_stores({"loops": (4, 4, 0, 4), "avx2": (24, 10, 3, 24)}, "avx2")
    text = _loads_stores({"loops": (6, 10, 2, 8), "avx512": (24, 11, 0, 24)}, "avx512")
    assert "once per 4 multiply-adds" in text


@pytest.mark.slow
def test_loads_and_stores_of_the_compiled_kernels():
    """On this machine's code: the micro-kernel's reduction loop keeps C in registers."""
    jit = pytest.importorskip("attncore.jit")
    path = jit.kernel_info()["path"]
    if path == "loops" or not re.search(r"x86|amd64", __import__("platform").machine(), re.I):
        pytest.skip("the micro-kernel's assembly is read on x86-64")
    counts = {}
    for name in ("loops", path):
        body = asm.reduction_loop(jit.kernel_info(name, asm=True)["asm"])
        f, loads, stores = asm.memory_operations(body)
        counts[name] = (f, loads, stores, asm.multiply_adds(body))
    fmas, loads, stores, _ = counts[path]
    assert fmas >= 8 and stores == 0 and loads < fmas
    _loads_stores(counts, path)


# ------------------------------------------------------------------ the phase profile and small words

@pytest.mark.parametrize("after_products", [(0.55, 0.9, 0.95), (0.3, 0.6, 0.9), (0.2, 0.4, 0.6)])
def test_profile_sentence_reports_the_spread(after_products):
    spread = {"loops": {"products": (0.85, 0.93, 0.95), "softmax": (0.04, 0.05, 0.16), "rate": (20, 25, 30)},
              "avx512": {"products": after_products, "softmax": (0.04, 0.05, 0.08), "rate": (90, 110, 150)}}
    text = story.profile_sentence(spread, "avx512")
    _plain("prof_story", text)
    low, median, high = after_products
    assert f"took {median:.0%} ({low:.0%} to {high:.0%})" in text
    assert ("in every profile" in text) == (low > 0.5)
    assert ("not the larger bill" in text) == (median <= 0.5)
    assert "110 GFLOP/s (90 to 150)" in text


def test_small_words():
    assert story.speed_word(2.34) == "2.3 times faster"
    assert story.speed_word(0.5) == "2.0 times slower"
    assert story.speed_word(1.01) == "about as fast"
    assert story.same_side(4, 256, 8) == "on the memory side"
    assert story.same_side(24, 256, 8) == "there too"
    assert story.side(6.4, 8) == "the memory side"


# ------------------------------------------------------------------ the chapters' cells

def _glue_calls(chapter):
    """(name, value expression) of every g("name", ...) call in a chapter's code cells."""
    text = (BOOK / chapter).read_text()
    cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S)
    calls = []
    for cell in cells:
        for match in re.finditer(r"^\s*g\((f?\"[^\"]+\"),\s*(.*?)\)\s*$(?=\n\S|\n\s*g\(|\n*\Z|\n\s*#)", cell, re.M | re.S):
            calls.append(match.groups())
    return calls


def test_chapter_6_builds_no_sentence_from_data():
    for name, expression in _glue_calls("06-flashattention.md"):
        assert " if " not in expression and not re.match(r"f?['\"]", expression.strip()), (name, expression)


def test_chapter_7_builds_its_sentences_with_bench_story():
    """The only sentences still chosen inside chapter 7's cells describe the build machine's
    compiler and packages, not a results file."""
    inline = {name for name, expression in _glue_calls("07-performance.md") if " if " in expression}
    assert inline <= {'"m3_expf"', '"m3_vectorised"', '"build_torch"', '"first_call_how"', '"pub_backend"'}, inline
    text = (BOOK / "07-performance.md").read_text()
    for key in story.results_sentences(bench.published(), JIT_INTENSITY):
        assert f"ch7_{key}`" in text, key


def test_profile_summary_uses_one_clock_and_the_fastest_phases():
    runs = [{"setup": 0.1, "S = K qT": 2.0, "causal mask": 0.0, "max, exp2, sum": 0.4,
             "acc = alpha acc + V^T P": 2.0, "finish": 0.1},
            {"setup": 0.1, "S = K qT": 20.0, "causal mask": 0.0, "max, exp2, sum": 0.5,
             "acc = alpha acc + V^T P": 2.5, "finish": 0.1},
            {"setup": 0.1, "S = K qT": 2.5, "causal mask": 0.0, "max, exp2, sum": 5.0,
             "acc = alpha acc + V^T P": 2.0, "finish": 0.1}]
    summary = story.profile_summary(runs, flops=4e9)
    low, median, high = summary["products"]
    assert low == pytest.approx(4.5 / 9.7) and high == pytest.approx(22.5 / 23.2)
    assert summary["fastest_ms"]["S = K qT"] == 2.0 and summary["fastest_ms"]["max, exp2, sum"] == 0.4
    assert summary["rate"][2] == pytest.approx(4e9 / 4e-3 / 1e9)
    text = story.profile_sentence({"loops": summary, "avx512": summary}, "avx512")
    assert f"products take {4.0 / 4.6:.0%} and the softmax step {0.4 / 4.6:.0%}" in text


@pytest.mark.parametrize("run_name", list(RUNS))
def test_causal_model_sentences_follow_the_numbers(run_name):
    """The model's numbers are the chapter's own (jit.queue_time); here they are varied around the
    run's measured speed-ups so that every branch is rendered."""
    results = RUNS[run_name]()
    table = {t["n"]: t for t in results["ratios"]}
    for shift in (-0.5, 0.0, 0.4):
        model = {n: (4, t["causal_speedup_jit"] + shift, t["causal_speedup_jit"],
                     t["causal_speedup_torch"] - shift, t["causal_speedup_torch"]) for n, t in table.items()}
        s = story.causal_model_sentences(model)
        above = [n for n in model if model[n][2] > model[n][1]]
        assert s["above_model_sentence"].startswith("No ") == (not above)
        for n in above:
            assert str(n) in s["above_model_sentence"]
        far = [n for n in model if model[n][2] < model[n][1] - 0.3]
        for n in far:
            assert f"{n} ({model[n][2]:.2f} against {model[n][1]:.2f})" in s["below_model_sentence"]
        assert (s["below_model_sentence"] == "") == (not far)
        survives = all(model[n][2] > model[n][4] and model[n][1] > model[n][3] for n in (4096, 16384))
        assert s["main_fact"].startswith("The main fact survives") == survives


def test_compared_as():
    assert story.compared_as(110, 100) == "faster than"
    assert story.compared_as(90, 100) == "slower than"
    assert story.compared_as(101, 100) == "about as fast as"


# ------------------------------------------------------------------ the clock, the threads, the counters, bf16

def _with_clock(results, ghz):
    out = copy.deepcopy(results)
    out["peak"]["measured_clock"] = {"ghz": ghz, "threads": 2}
    return out


@pytest.mark.parametrize("run_name", list(RUNS))
@pytest.mark.parametrize("ghz", [None, 2.0, 3.3, 9.0])
def test_a_peak_exceeded_is_explained_by_the_clock_measured_or_not(run_name, ghz):
    """N10d: the branch where a point beats the theoretical peak names the reported clock, and
    the measured one only where the run measured it; whether the points stay under the peak at
    the measured clock is what the numbers say."""
    results = RUNS[run_name]() if ghz is None else _with_clock(RUNS[run_name](), ghz)
    ceilings = story.roofs(results)
    points = story.roofline_points(results, JIT_INTENSITY)
    text = story.roofline_sentence(ceilings, points, "the run")
    _plain("roofline", text)
    if not any(rate > ceilings["theoretical"] for _, _, rate in points):
        assert "GHz" not in text
        return
    assert f"{ceilings['clock_ghz']:.2f} GHz the system reports" in text
    if ghz is None:
        assert "did not measure the clock" in text and "measured 2" not in text
    else:
        at_clock = ceilings["theoretical_at_measured_clock"]
        assert at_clock == pytest.approx(ceilings["theoretical"] * ghz / ceilings["clock_ghz"])
        assert f"measured {ghz:.2f} GHz, where it gives {at_clock:.0f} GFLOP/s" in text
        beyond = [n for n, _, rate in points if rate > at_clock]
        assert ("as well" in text) == bool(beyond) and ("above every point" in text) == (not beyond)


THEORY = {"cores": 2, "fma_pipes": 2, "lanes": 16, "clock_ghz": 2.6, "gflops": 332.8}


@pytest.mark.parametrize("one, every", [(3.35, 3.27), (2.0, 1.9), (2.61, 2.59)])
def test_clock_sentence_follows_the_measured_clock(one, every):
    clock = lambda ghz: {"ghz": ghz, "adds": 2 * 10**8}
    text = story.clock_sentence(clock(one), clock(every), THEORY)
    _plain("clock_story", text)
    assert f"{one:.2f} GHz on one core and {every:.2f} GHz" in text and "2.60 GHz the system reports" in text
    assert f"cores ran {story.compared_as(every, 2.6)} the reported clock" in text
    assert f"gives {2 * 2 * 16 * 2 * every:.0f} GFLOP/s instead of 333" in text
    assert "could not measure" in story.clock_sentence(None, None, THEORY)


@pytest.mark.parametrize("speedups", [{"the kernel": 1.95, "a copy": 1.85}, {"the kernel": 1.2, "a copy": 1.05},
                                      {"the kernel": 1.5, "one BLAS product": 1.9, "a copy": 1.1}])
@pytest.mark.parametrize("per_core", [1, 2, None])
def test_scaling_sentence_follows_the_speedups(speedups, per_core):
    text = story.scaling_sentence(speedups, 2, per_core)
    _plain("scaling_story", text)
    for name, s in speedups.items():
        assert f"{name} {s:.2f} times" in text
    near = {n for n, s in speedups.items() if s >= 1.8}
    assert ("Each came within 10%" in text) == (near == set(speedups))
    assert ("Not one came within 10%" in text) == (not near)
    if near and near != set(speedups):
        said_near, said_far = text.split(". ")[1].split(" came within 10% of the 2 times that 2 idle, equal cores give; ")
        assert all(n.lower() in said_near.lower() for n in near) and all(n in said_far for n in set(speedups) - near)
    assert ("one thread per core" in text) == (per_core == 1) and ("2 threads per core" in text) == (per_core == 2)


def test_perf_sentence_prints_only_what_was_counted():
    missing = {"available": False, "reason": "perf stat reports cycles as not supported", "counts": None}
    text = story.perf_sentence(missing)
    _plain("perf_story", text)
    assert "prints no counted cycles" in text and not re.search(r"\d", text)
    assert story.perf_sentence({"available": True, "reason": "", "counts": {}}).endswith("counters.")
    for cpa, agrees in ((1.01, True), (1.5, False)):
        text = story.perf_sentence({"available": True, "reason": "", "counts": {}}, cpa)
        assert f"{cpa:.2f} cycles per add" in text and ("as assumed" in text) == agrees


@pytest.mark.parametrize("bf16, emulated", [(0.55, 0.95), (1.0, 1.0), (1.3, 0.7)])
@pytest.mark.parametrize("route, native_speedup", [("amx", 2.1), ("native", 1.9), ("emulated", None),
                                                    ("emulated", 0.57)])
def test_bf16_sentence_follows_the_paired_ratios(bf16, emulated, route, native_speedup):
    text = story.bf16_sentence(bf16, emulated, route, native_speedup)
    _plain("bf16_story", text)
    assert f"kernel ran {story.speed_word(bf16)}" in text and "fast than" not in text
    assert text.startswith(f"With bfloat16 products {story.BF16_ROUTES[route]}, ")
    assert ("emulated in float32, it ran" in text) == (route != "emulated")
    if route != "emulated":
        assert f"it ran {story.speed_word(emulated)}" in text
    # why vdpbf16ps was passed over, only where it was, with the measured speed
    passed_over = route == "emulated" and native_speedup is not None
    assert ("does not take it" in text) == passed_over
    assert not passed_over or f"at {native_speedup:.2f} times the speed of vfmadd" in text


@pytest.mark.parametrize("speedup", [None, 0.57, 1.25, 1.9])
def test_native_probe_sentence_says_what_was_measured_and_what_follows(speedup):
    text = story.native_probe_sentence(speedup, 1.25)
    _plain("native_probe_story", text)
    if speedup is None:
        assert text == "This build has no vdpbf16ps to time."
    else:
        assert f"at {speedup:.2f} times the speed of vfmadd" in text
        assert text.endswith("takes it." if speedup >= 1.25 else "passes it over.")


def test_isa_and_packing_sentences():
    flags = {"amx_tile": True, "amx_bf16": True, "avx512_bf16": True}
    assert "has AMX" in story.isa_sentence(flags) and "vdpbf16ps" in story.isa_sentence(flags)
    assert "uses the tiles for its bfloat16 products" in story.isa_sentence(flags)
    assert "no AMX" in story.isa_sentence({"avx512_bf16": True})
    assert "neither AMX" in story.isa_sentence({})
    text = story.packing_sentence(0.8, 0.7)
    _plain("packing_story", text)
    assert "1.25 times as fast" in text and "70%" in text and f"at most {1 / (0.3 + 0.56):.2f} times" in text
    assert "no measured gap" in story.packing_sentence(1.05, 0.7)
