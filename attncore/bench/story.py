"""The sentences chapter 7 writes from measured data, as functions of that data.

Every sentence the chapter chooses by the numbers (a verdict word, a list of sizes, which side
of a ridge, whether a point reaches a roof) is built here, so that the same function can be
rendered against the published run, the build machine's measurements or any other results
file, and checked against the numbers it prints (tests/test_ch7_glue.py).
"""
import statistics

from .clock import peak_at


# ------------------------------------------------------------------ verdict words

def compared(r, tolerance=0.03):
    """'faster' or 'slower' for a throughput ratio r, 'about as fast' within the tolerance."""
    return "about as fast" if abs(r - 1) <= tolerance else "faster" if r > 1 else "slower"


def compared_by_size(ratios):
    """compared() across (N, ratio) pairs: 'faster at every size', or for example
    'about as fast at N = 512; faster at the other sizes'."""
    sizes = {}
    for n, r in ratios:
        sizes.setdefault(compared(r), []).append(n)
    if len(sizes) == 1:
        return f"{next(iter(sizes))} at every size"
    *fewer, (most, _) = sorted(sizes.items(), key=lambda item: len(item[1]))
    named = [f"{word} at N = {', '.join(map(str, ns))}" for word, ns in fewer]
    return f"{'; '.join(named)}; {most} at the other sizes"


def _names_plain(items):
    """Items joined with 'and', the first letter raised (a sentence's start)."""
    text = and_list(items)
    return text[:1].upper() + text[1:]


def and_list(items):
    """'a, b and c' (also the peers page's sentences)."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# ------------------------------------------------------------------ the roofline

NAMES = {"naive": "careful NumPy", "textbook": "textbook NumPy", "numpy_flash": "the NumPy tiles",
         "jit": "the kernel", "torch": "PyTorch"}


def _names(keys):
    return _names_plain([NAMES.get(k, k) for k in keys])


def roofs(results):
    """The ceilings a results file carries for its own machine, for the cores it used and per
    core: {"cores", "clock_ghz", "theoretical", "theoretical_per_core", "measured",
    "measured_per_core", "bandwidth", "bandwidth_per_core", "measured_clock_ghz",
    "theoretical_at_measured_clock"} in GFLOP/s, GB/s and GHz (the clock of bench.clock, all cores
    busy). A quantity the run did not measure is None (older runs measured no bandwidth and no
    clock): nothing is guessed."""
    peak = results["peak"]
    theory = peak["theoretical"]
    cores = theory["cores"]
    bandwidth = peak.get("bandwidth") or {}
    clock = (peak.get("measured_clock") or {}).get("ghz")
    return {
        "cores": cores,
        "clock_ghz": theory.get("clock_ghz"),
        "theoretical": theory.get("gflops"),
        "theoretical_per_core": theory["gflops"] / cores if theory.get("gflops") else None,
        "measured": peak.get("measured_gflops"),
        "measured_per_core": peak.get("sgemm_1t_gflops"),
        "bandwidth": bandwidth.get("all_cores_gbs"),
        "bandwidth_per_core": bandwidth.get("per_core_gbs"),
        "measured_clock_ghz": clock,
        "theoretical_at_measured_clock": theory["gflops"] * clock / theory["clock_ghz"]
        if clock and theory.get("gflops") and theory.get("clock_ghz") else None,
    }


def roof(ceilings, intensity):
    """The roof over a point of this intensity: min(highest peak, intensity x bandwidth), where
    the bandwidth is the best copy rate the run measured (one core or all of them); None if no
    peak was measured. Without a bandwidth only the flat roof is known."""
    peaks = [p for p in (ceilings["theoretical"], ceilings["measured"]) if p]
    if not peaks:
        return None
    flat = max(peaks)
    bandwidths = [b for b in (ceilings["bandwidth"], ceilings["bandwidth_per_core"]) if b]
    return min(flat, intensity * max(bandwidths)) if bandwidths else flat


def ridge(ceilings):
    """Ridge point (flop per byte) of the measured peak over the bandwidth of the same cores, or None."""
    if ceilings["measured"] and ceilings["bandwidth"]:
        return ceilings["measured"] / max(ceilings["bandwidth"], ceilings["bandwidth_per_core"] or 0)
    return None


def side(intensity, ridge_point):
    """Which side of the ridge an intensity lies on ('the memory side' below it)."""
    return "the memory side" if intensity < ridge_point else "the compute side"


def roofline_sentence(ceilings, points, where):
    """What a roofline figure shows: points is [(name, intensity, gflops)], all measured on the
    machine whose ceilings these are; where names it ('the published run')."""
    flat = max(p for p in (ceilings["theoretical"], ceilings["measured"]) if p)
    above = [name for name, x, rate in points if rate > roof(ceilings, x) * (1 + 1e-9)]
    over_theory = [name for name, x, rate in points
                   if ceilings["theoretical"] and ceilings["measured"] and ceilings["theoretical"] < rate]
    parts = []
    if ceilings["bandwidth"] is None:
        parts.append(f"The figure of {where} has no sloped roof: that run did not measure its memory bandwidth, "
                     "so it cannot say which of its points memory bounds, only how far each is below the peaks.")
    else:
        r = ridge(ceilings)
        memory = [name for name, x, _ in points if x < r]
        parts.append(f"In {where} the ridge point is at {r:.0f} flop per byte; "
                     + (f"{and_list([NAMES.get(m, m) for m in memory])} {'lies' if len(memory) == 1 else 'lie'} on the memory side of it, the rest "
                        "on the compute side." if memory else "every point lies on the compute side of it."))
    if above:
        parts.append(f"{_names(above)} ran faster than the higher of the two peaks, so neither peak is a ceiling "
                     "there: one thread's sgemm is not the fastest product, and " + _clock_clause(ceilings, points))
    else:
        best_name, _, best_rate = max(points, key=lambda p: p[2])
        parts.append(f"Every point is under its roof; the fastest, {NAMES.get(best_name, best_name)}, reached {best_rate / flat:.0%} of the "
                     f"flat roof ({flat:.0f} GFLOP/s).")
        if over_theory:
            parts.append(f"{_names(over_theory)} ran above the theoretical peak, so that peak is not a ceiling: "
                         + _clock_clause(ceilings, points))
    return " ".join(parts)


def _clock_clause(ceilings, points):
    """Why a point can exceed the theoretical peak, from what the run measured of its clock."""
    reported, measured = ceilings["clock_ghz"], ceilings["measured_clock_ghz"]
    if not measured:
        return (f"the formula takes the {reported:.2f} GHz the system reports, and this run did not measure the "
                "clock its cores ran at.")
    at_clock = ceilings["theoretical_at_measured_clock"]
    over = [name for name, _, rate in points if rate > at_clock]
    return (f"the formula takes the {reported:.2f} GHz the system reports, and the cores ran at a measured "
            f"{measured:.2f} GHz, where it gives {at_clock:.0f} GFLOP/s"
            + (f", which {and_list([NAMES.get(n, n) for n in over])} {'exceed' if len(over) > 1 else 'exceeds'} as well: the pipes or lanes it assumes do not describe "
               "this CPU, or its clock changed between the measurements." if over else
               ", above every point."))


# ------------------------------------------------------------------ loads and stores

def loads_stores_sentence(counts, path):
    """counts: {"loops": (fmas, loads, stores, multiply_adds), path: (...)}, from the innermost
    loop of each tile product (bench.asm.reduction_loop)."""
    f_l, l_l, s_l, ma_l = counts["loops"]
    f_a, l_a, s_a, _ = counts[path]
    first = (f"The plain loop's innermost loop does {f_l} FMAs ({ma_l} multiply-adds with its separate "
             f"multiplies) with {l_l} loads and {s_l} stores: {l_l / max(f_l, 1):.2f} loads and "
             f"{s_l / max(f_l, 1):.2f} stores per FMA. ")
    if s_l:
        first += (f"Its result C lives in the cache and travels through it: every vector of C comes in and "
                  f"goes back out once per {ma_l / s_l:.0f} multiply-adds, the steps of the reduction blocked "
                  "by hand. ")
    else:
        first += "It stores nothing: the compiler kept C in registers here. "
    second = (f"The micro-kernel's innermost loop does {f_a} FMAs with {l_a} loads and {s_a} stores, "
              f"{l_a / max(f_a, 1):.2f} loads and {s_a / max(f_a, 1):.2f} stores per FMA")
    second += (": C stays in registers for the whole reduction and is stored once, after the loop." if s_a == 0 else
               f": it still stores {s_a} values per pass, so C does not stay in registers for the whole reduction.")
    return first + second


# ------------------------------------------------------------------ the phase profile

PRODUCTS = ("S = K qT", "acc = alpha acc + V^T P")
SOFTMAX = "max, exp2, sum"


def _spread(values):
    return min(values), statistics.median(values), max(values)


def profile_summary(runs_ms, flops):
    """From profiles of one path, each {phase: ms} (a profile's shares times its own wall time):
    the (min, median, max) over the profiles of the products' share, the softmax step's share
    and the products' rate in GFLOP/s, and "fastest_ms", each phase's smallest time (the least
    disturbed estimate: a disturbance only ever adds time to the phase it lands in)."""
    totals = [sum(r.values()) for r in runs_ms]
    products = [sum(r[p] for p in PRODUCTS) for r in runs_ms]
    return {"products": _spread([p / t for p, t in zip(products, totals)]),
            "softmax": _spread([r[SOFTMAX] / t for r, t in zip(runs_ms, totals)]),
            "rate": _spread([flops / (p / 1e3) / 1e9 for p in products]),
            "fastest_ms": {phase: min(r[phase] for r in runs_ms) for phase in runs_ms[0]}}


def profile_sentence(spread, path):
    """spread: {path: profile_summary(...)}: shares as fractions, rates in GFLOP/s."""
    lo, med, hi = spread["loops"]["products"]
    alo, amed, ahi = spread[path]["products"]
    slo, smed, shi = spread[path]["softmax"]
    rl, ra = spread["loops"]["rate"], spread[path]["rate"]
    verdict = ("the products are the larger bill in every profile" if alo > 0.5 else
               "the products are the larger bill in the median profile, not in every one" if amed > 0.5 else
               "the products are not the larger bill in the median profile")
    return (f"With plain loops the products took {med:.0%} of the time in the median profile "
            f"({lo:.0%} to {hi:.0%}), at {rl[1]:.0f} GFLOP/s ({rl[0]:.0f} to {rl[2]:.0f}). With the micro-kernel "
            f"they ran at {ra[1]:.0f} GFLOP/s ({ra[0]:.0f} to {ra[2]:.0f}) and took {amed:.0%} ({alo:.0%} to "
            f"{ahi:.0%}): {verdict}. The online softmax step took {smed:.0%} ({slo:.0%} to {shi:.0%})."
            + _fastest_clause(spread[path].get("fastest_ms")))


def _fastest_clause(fastest):
    if not fastest:
        return ""
    total = sum(fastest.values())
    products = sum(fastest[p] for p in PRODUCTS)
    return (f" Taking each phase's fastest profile instead, the least disturbed estimate, the micro-kernel's "
            f"products take {products / total:.0%} and the softmax step {fastest[SOFTMAX] / total:.0%}.")


# ------------------------------------------------------------------ tiles against the textbook formula

def tiles_sentence(tile_ratios):
    """tile_ratios: {(n, causal): numpy_flash time / textbook time} of one run."""
    def named(keys):
        return and_list([f"N = {n}{' causal' if c else ''}" for n, c in keys])

    slower = [key for key, r in tile_ratios.items() if r > 1]
    faster = [key for key, r in tile_ratios.items() if r <= 1]
    values = list(tile_ratios.values())
    if not values:
        return "This run did not time both versions at any size."
    if not faster:
        return (f"The NumPy tiles took longer than the textbook formula at every size and mask this run measured, "
                f"{min(values):.2f} to {max(values):.2f} times as long.")
    if not slower:
        return (f"The NumPy tiles took no longer than the textbook formula at every size and mask this run measured, "
                f"{min(values):.2f} to {max(values):.2f} times as long.")
    return (f"The NumPy tiles took longer than the textbook formula at {named(slower)}, and no longer at "
            f"{named(faster)} ({min(values):.2f} to {max(values):.2f} times as long).")


def tiles_intro(tile_ratios):
    """Chapter 7's opening clause about the tiled NumPy version, after 'and yet'."""
    values = list(tile_ratios.values())
    if values and all(r > 1 for r in values):
        return (f"it is slower than the textbook formula: on the published run at every size and mask it measured "
                f"({min(values):.2f} to {max(values):.2f} times as long), and elsewhere by an amount that depends "
                "on the machine, the size and the mask")
    if values and all(r <= 1 for r in values):
        return (f"it is no slower than the textbook formula on the published run ({min(values):.2f} to "
                f"{max(values):.2f} times as long), and elsewhere by an amount that depends on the machine, the size "
                "and the mask")
    return "it is not reliably faster: on the published run that depends on the size and the mask"


def tiles_opening(tile_ratios):
    """The answer that opens the follow-up question, from the same ratios."""
    values = list(tile_ratios.values())
    if values and all(r > 1 for r in values):
        return ("On the published run, yes: slower than the textbook formula (attncore.attention) at every size "
                "and mask it measured. Elsewhere the answer depends on the machine, the size and the mask, for the "
                "two reasons below.")
    if values and all(r <= 1 for r in values):
        return ("On the published run, no: it was never slower than the textbook formula (attncore.attention). "
                "Elsewhere the answer depends on the machine, the size and the mask, for the two reasons below.")
    return ("Compared with the textbook formula (attncore.attention), it depends on the size and the mask, "
            "and the published run has both cases:")


# ------------------------------------------------------------------ reading the published run

def roofline_story(fraction_4096, sgemm_4096):
    """After 'the kernel reached X% of the measured peak'."""
    if round(100 * fraction_4096) >= 100:
        return ("Reaching the measured peak does not make the kernel faster than BLAS: that yardstick is one "
                f"thread's sgemm, timed between the calls at {sgemm_4096:.0f} GFLOP/s here, and it moves with the "
                "shared machine as much as the kernel does. What the kernel leaves on the table is the online "
                "softmax and the bookkeeping around the products; at small N, also the fixed cost of a call.")
    return ("The part it does not reach goes to the online softmax and the bookkeeping around the products; at "
            "small N, also to the fixed cost of a call.")


def causal_story(cs_jit, cs_torch, n=4096):
    """How the causal speed-ups of the two kernels compare at one size."""
    if cs_jit > cs_torch + 0.1:
        return (f"Causal, the schedule adds to that: both kernels skip the tiles above the diagonal, but going causal "
                f"sped the kernel up by {cs_jit:.2f} and PyTorch by {cs_torch:.2f} at N = {n}, the queue keeping "
                "both cores busy to the end.")
    if cs_torch > cs_jit + 0.1:
        return (f"Causal, PyTorch gained more from skipping the tiles above the diagonal ({cs_torch:.2f} against "
                f"{cs_jit:.2f} for the kernel at N = {n}), so the causal ratio is lower than the non-causal one.")
    return (f"Causal, both kernels gained about as much from skipping the tiles above the diagonal ({cs_jit:.2f} and "
            f"{cs_torch:.2f} at N = {n}), so the causal ratio follows the non-causal one.")


def speed_word(speedup, tolerance=0.03):
    """'2.3 times faster', '1.4 times slower' or 'about as fast', for a ratio of times (old / new)."""
    if speedup > 1 + tolerance:
        return f"{speedup:.1f} times faster"
    if speedup < 1 - tolerance:
        return f"{1 / speedup:.1f} times slower"
    return "about as fast"


def same_side(intensity, reference, ridge_point):
    """'there too' if intensity lies on the same side of the ridge as reference, else 'on <its side>'."""
    mine = side(intensity, ridge_point)
    return "there too" if mine == side(reference, ridge_point) else "on " + mine


# ------------------------------------------------------------------ one results file, every sentence

def _lookup(results, n, causal, impl, key):
    return next((r.get(key) for r in results["rows"] if (r["n"], r["causal"], r["impl"]) == (n, causal, impl)), None)


def _ratio(results, n, key):
    return next((t.get(key) for t in results["ratios"] if t["n"] == n), None)


def tile_ratios(results):
    """{(n, causal): numpy_flash time / textbook time} wherever the run timed both."""
    out = {}
    for n in results["settings"]["sizes"]:
        for causal in (False, True):
            tiles, text = (_lookup(results, n, causal, impl, "seconds") for impl in ("numpy_flash", "textbook"))
            if tiles and text:
                out[(n, causal)] = tiles / text
    return out


def roofline_points(results, jit_intensity, n=4096, d=64, torch_block_q=256):
    """[(impl, intensity, GFLOP/s)] of one run at one size, for the implementations it timed there:
    naive at d/10 (its average over the steps), the kernel at block_q/2, PyTorch at its block/2."""
    placed = (("naive", d / 10), ("jit", jit_intensity), ("torch", torch_block_q / 2))
    return [(name, x, _lookup(results, n, False, name, "gflops")) for name, x in placed
            if _lookup(results, n, False, name, "gflops")]


def results_sentences(results, jit_intensity, n=4096, where="the published run"):
    """Every sentence chapter 7 builds from a results file, by glue name (without ch7_)."""
    full = [(t["n"], t["jit_vs_torch_full"]) for t in results["ratios"] if t.get("jit_vs_torch_full")]
    ratios = tile_ratios(results)
    out = {
        "pub_roofline_story": roofline_sentence(roofs(results), roofline_points(results, jit_intensity, n), where),
        "tiles_story": tiles_sentence(ratios),
        "tiles_opening": tiles_opening(ratios),
        "tiles_intro": tiles_intro(ratios),
        "roofline_story": roofline_story(_ratio(results, n, "jit_sgemm_fraction_full"),
                                         _lookup(results, n, False, "jit", "sgemm_1t_gflops")),
        "jt_full_word": compared_by_size(full),
    }
    if _ratio(results, n, "jit_vs_torch_full"):
        out["jt_4096_word"] = compared(_ratio(results, n, "jit_vs_torch_full"))
        out["jt_4096_causal_word"] = compared(_ratio(results, n, "jit_vs_torch_causal"))
        out["causal_story"] = causal_story(_ratio(results, n, "causal_speedup_jit"),
                                           _ratio(results, n, "causal_speedup_torch"), n)
    return out


def compared_as(rate, reference, tolerance=0.03):
    """'faster than', 'slower than' or 'about as fast as' for two rates (higher is faster)."""
    if rate > reference * (1 + tolerance):
        return "faster than"
    if rate < reference * (1 - tolerance):
        return "slower than"
    return "about as fast as"


# ------------------------------------------------------------------ the causal speed-up model

def causal_model_sentences(model, sizes=(4096, 16384)):
    """model: {n: (jit blocks, jit model, jit measured, torch model, torch measured)} causal speed-ups
    of one run against the key-counting model. Returns the sentences, by glue name."""
    above = [n for n in model if model[n][2] > model[n][1]]
    far_below = [n for n in model if model[n][2] < model[n][1] - 0.3]
    torch_over = [n for n in model if n >= 2048 and model[n][4] > model[n][3] + 0.15]
    out = {
        "torch_model_note":
            f"PyTorch's measured causal speed-ups exceed the contiguous model at N = {', '.join(map(str, torch_over))}: "
            "the version measured does not hand out its blocks as the source we read does, so the model is an upper "
            "bound on its imbalance there, not a description." if torch_over else
            "PyTorch's measured causal speed-ups stay within reach of the contiguous model.",
        "above_model_sentence":
            f"At N = {', '.join(map(str, above))} the measured speed-up exceeds the model's; see the note below."
            if above else "No measured speed-up exceeds the model's.",
        "below_model_sentence":
            "At N = " + ", ".join(f"{n} ({model[n][2]:.2f} against {model[n][1]:.2f})" for n in far_below)
            + " the measured speed-up falls far below the model's; see the note below." if far_below else "",
    }
    jit_gained_more = all(model[n][2] > model[n][4] for n in sizes)
    predicted = all(model[n][1] > model[n][3] for n in sizes)
    if jit_gained_more and predicted:
        out["main_fact"] = ("The main fact survives: at both sizes the kernel's queue gained more from the mask than "
                            "PyTorch's contiguous split, as the counts predict, so the difference between the two "
                            "causal speed-ups is a matter of scheduling, not of arithmetic.")
    elif predicted:
        out["main_fact"] = ("The counts predict that the queue gains more from the mask than the contiguous split; "
                            "this run does not show it at both sizes, so here the noise is larger than the effect.")
    else:
        out["main_fact"] = ("At these sizes the counts predict no advantage of the queue over the contiguous split, "
                            "so the difference between the two causal speed-ups is not a matter of scheduling.")
    return out


# ------------------------------------------------------------------ the build machine: clock, threads, counters, bf16

def clock_sentence(clock_one, clock_all, theory):
    """clock_one, clock_all: bench.clock.measured_clock on one thread and on every core (None
    where it could not be measured); theory: bench.theoretical_peak() of the same machine."""
    reported = theory.get("clock_ghz")
    said = f"the {reported:.2f} GHz the system reports" if reported else "no clock, since the system reports none"
    if clock_one is None or clock_all is None:
        return f"This build could not measure its clock (no add chain for this CPU), so its peak formula keeps {said}."
    one, every = clock_one["ghz"], clock_all["ghz"]
    text = (f"A chain of {clock_one['adds'] / 1e6:.0f} million dependent adds ran at {one:.2f} GHz on one core and "
            f"{every:.2f} GHz with all {theory['cores']} cores running chains at once, against {said}")
    if not reported:
        return text + "."
    at_clock = peak_at(theory, every)
    return (text + f": with every core busy the cores ran {compared_as(every, reported)} the reported clock. At the "
            f"measured all-core clock the peak formula gives {at_clock:.0f} GFLOP/s instead of "
            f"{theory['gflops']:.0f}.")


def scaling_sentence(speedups, threads, threads_per_core):
    """speedups: {what: its time on one thread / its time on `threads` threads, or a rate on
    `threads` over a rate on one}, measured on one machine; threads_per_core: what the system
    shows (bench.machine.threads_per_core), or None."""
    listed = and_list([f"{name} {s:.2f} times" for name, s in speedups.items()])
    near = [name for name, s in speedups.items() if s >= 0.9 * threads]
    far = [name for name in speedups if name not in near]
    text = f"On {threads} threads instead of one, this build ran {listed} as fast. "
    ideal = f"the {threads} times that {threads} idle, equal cores give"
    if not far:
        text += f"Each came within 10% of {ideal}."
    elif not near:
        text += f"Not one came within 10% of {ideal}."
    else:
        text += f"{_names_plain(near)} came within 10% of {ideal}; {and_list(far)} did not."
    if threads_per_core == 1:
        text += (" The system shows one thread per core, so its CPUs are not hyperthreads of one core as far as "
                 "this machine can see (a hypervisor may still place two of them on one physical core).")
    elif threads_per_core:
        text += (f" The system shows {threads_per_core} threads per core: threads on one core share its FMA units, "
                 "so products gain little from the second thread of a core.")
    return text


def perf_sentence(check, cycles_per_add=None):
    """check: bench.clock.perf_counters(); cycles_per_add: bench.clock.cycles_per_add() where counted."""
    if not check["available"]:
        return (f"On this build machine the hardware counters cannot be read ({check['reason']}), so this chapter "
                "prints no counted cycles or instructions: every rate in it comes from a clock and a count of "
                "the work.")
    text = "On this build machine perf stat reads the hardware counters"
    if cycles_per_add is None:
        return text + "."
    agrees = abs(cycles_per_add - 1) <= 0.05
    return (text + f": it counted {cycles_per_add:.2f} cycles per add of the chain, so the clock measured above "
            + ("is the rate of one-cycle adds, as assumed." if agrees else
               "rests on an assumption this CPU does not meet (one add per cycle)."))


def _than(speedup):
    """speed_word followed by 'than', or 'about as fast as'."""
    word = speed_word(speedup)
    return word + (" as" if word == "about as fast" else " than")


BF16_ROUTES = {"amx": "on AMX tiles (tdpbf16ps)", "native": "on vdpbf16ps",
               "emulated": "emulated in float32 (no AMX tiles, and no vdpbf16ps that runs them faster than vfmadd)"}


def bf16_sentence(f32_over_bf16, f32_over_emulated, route, native_speedup=None):
    """Paired ratios of the kernel's times (float32 time / bf16 time); route: how precision="bf16"
    ran its products on this machine (jit.kernel_info()["bf16_products"]: a key of BF16_ROUTES);
    native_speedup: jit.kernel_info()["bf16_native_speedup"] (None where vdpbf16ps cannot run)."""
    text = f"With bfloat16 products {BF16_ROUTES[route]}, the kernel ran {_than(f32_over_bf16)} in float32"
    if route != "emulated":
        text += f"; with the products emulated in float32, it ran {_than(f32_over_emulated)} in float32"
    elif native_speedup is not None:
        text += f". This CPU has vdpbf16ps, but {_native_rate(native_speedup, 'it')}, so the kernel does not take it"
    return text + "."


def native_probe_sentence(native_speedup, native_pays):
    """What bf16_probe measured on this build: jit.kernel_info()["bf16_native_speedup"] (None
    where vdpbf16ps cannot run) against bf16_probe.NATIVE_PAYS."""
    if native_speedup is None:
        return "This build has no vdpbf16ps to time."
    taken = "takes it" if native_speedup >= native_pays else "passes it over"
    return (f"On this build, {_native_rate(native_speedup, 'vdpbf16ps')}, so where there are no AMX tiles the "
            f"kernel's bfloat16 precision {taken}.")


def _native_rate(native_speedup, subject):
    """What bf16_probe measured, as a clause: subject (vdpbf16ps, or "it") ran ... times vfmadd's speed."""
    return f"{subject} ran a key tile's products at {native_speedup:.2f} times the speed of vfmadd"


def isa_sentence(flags):
    """What the CPU offers beyond float32 FMAs, from bench.machine.isa_flags()."""
    amx = flags.get("amx_bf16") and flags.get("amx_tile")
    bf16 = flags.get("avx512_bf16")
    if amx:
        return ("This CPU has AMX, tile instructions that multiply bfloat16 and int8 matrices into float32"
                + (", and AVX512_BF16's vdpbf16ps. " if bf16 else ". ")
                + "The course's kernel uses the tiles for its bfloat16 products where Linux grants them to the "
                "process; its float32 path cannot, since AMX multiplies only bfloat16 and int8. So a float32-only "
                "comparison understates what this CPU can do for attention.")
    if bf16:
        return "This CPU has AVX512_BF16's vdpbf16ps but no AMX."
    return "This CPU has neither AMX nor AVX512_BF16: bfloat16 products are emulated in float32 here."


def packing_sentence(tile_fraction, products_share):
    """tile_fraction: the micro-kernel's tile product rate over one thread's large product;
    products_share: the products' share of the kernel's time (its profile)."""
    if tile_fraction >= 1:
        return ("The tile product already runs at least as fast as one thread's large product, which packs both of its "
                "operands, so there is no measured gap for packing A to close here.")
    bound = 1 / ((1 - products_share) + products_share * tile_fraction)
    return (f"If packing A brought the tile products up to one thread's large product (which packs both of its "
            f"operands), they would run {1 / tile_fraction:.2f} times as fast; at {products_share:.0%} of the "
            f"kernel's time, that makes the whole call at most {bound:.2f} times as fast.")
