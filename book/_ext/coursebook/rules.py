"""Every rule by which chapter 7 and its peers page choose a word from measured data.

Each rule is a small function of numbers read from a results file or measured by the build;
the tests render it on files where its word flips. A verdict near its threshold says so
instead of picking a side (a margin at least as wide as the spread the data itself records:
the repeated runs of a clock or a bandwidth), so the noise of one measurement cannot flip it.
"""
RIDGE_MARGIN = 0.25  # beyond the range of ridges the repeated bandwidths give, 25% more is not decided
ERROR_BAND = 0.10  # two errors within 10% of each other are "about the same"


def ridge_side(intensity: float, ridges: tuple[float, float] | None, margin: float = RIDGE_MARGIN) -> str:
    """Where an intensity lies against the ridge of a roofline, given the range of ridges its
    repeated bandwidths give ((low, high), report.ridge_range): 'below the ridge (memory-bound)'
    under low × (1 - margin), 'above the ridge (compute-bound)' over high × (1 + margin), else
    not decided; 'not known' without a measured bandwidth."""
    if ridges is None:
        return "not known: the run measured no bandwidth"
    low, high = ridges
    if intensity < low * (1 - margin):
        return "below the ridge (memory-bound)"
    if intensity > high * (1 + margin):
        return "above the ridge (compute-bound)"
    return f"within {margin:.0%} of the ridge's range: not decided"


def ridge_clause(ridge: float | None, bandwidth: float | None) -> str:
    """Where a run's roofline has its ridge, or why it has none."""
    if ridge is None:
        return "that run measured no bandwidth, so its figure has no sloped roof and no ridge."
    return f"its copy bandwidth was {bandwidth:.1f} GB/s, so its ridge sits at {ridge:.1f} flop per byte."


def above_ceiling(points: list[tuple[str, float, float]], peak_name: str, peak: float, spread: float) -> str:
    """The sentences a roofline's text adds about float32 points at or above its one peak
    (report.ceiling): a point within `spread` (report.ceiling_spread: how far the measurements
    behind the peak lie apart) is at the peak; above that, past the sgemm yardstick a faster
    product is possible, past the peak at the measured clock only a wrong count of pipes or
    lanes, or a clock that moved."""
    def listed(chosen):
        return ", ".join(f"{name} at {rate / peak:.0%}" for name, rate in chosen)

    at = [(name, rate) for name, _, rate in points if peak * (1 - spread) <= rate <= peak * (1 + spread)]
    above = [(name, rate) for name, _, rate in points if rate > peak * (1 + spread)]
    said = [f"Every point is under the {peak_name} ({peak:.0f} GFLOP/s)."] if not at and not above else [
        f"The {peak_name} is {peak:.0f} GFLOP/s; its measurements spread by {spread:.1%}."]
    if at:
        said.append(f"Within that spread of it: {listed(at)}.")
    if above and peak_name.startswith("sgemm peak"):
        said.append(f"Above it by more than that: {listed(above)}. That peak is a yardstick, not a ceiling: "
                    "a product faster than one thread's sgemm passes it.")
    elif above:
        said.append(f"Above it by more than that: {listed(above)}, which that peak rules out unless the pipes and "
                    "lanes it assumes are wrong for this CPU or its clock moved between the measurements.")
    return " ".join(said)


def stores_clause(stores: int, multiply_adds: int) -> str:
    """What a tile product's reduction loop does with C, from its counts of stores and multiply-adds."""
    if stores == 0:
        return "It stores nothing: C stays in registers for the whole reduction and is stored once, after the loop."
    return (f"It stores {stores} vectors per pass: every vector of C comes in from the cache and goes back out "
            f"once per {multiply_adds / stores:.0f} multiply-adds.")


def packing_bound(tile_fraction: float, products_share: float, spread: float) -> str:
    """What packing A could buy at most: the tile products brought up to one core's peak
    (tile_fraction: their rate over that peak), over their share of the kernel's time (Amdahl);
    nothing measurable where the tile product is within `spread` of the peak."""
    if tile_fraction >= 1 - spread:
        return (f"The tile product ran at {tile_fraction:.0%} of that peak, within the {spread:.1%} by which its "
                "measurements spread: this build shows no gap for packing A to close.")
    bound = 1 / ((1 - products_share) + products_share * tile_fraction)
    return (f"The tile product ran at {tile_fraction:.0%} of that peak; brought up to it, the tile products would run "
            f"{1 / tile_fraction:.2f} times as fast, and at {products_share:.0%} of the kernel's time, that makes the "
            f"whole call at most {bound:.2f} times as fast.")


def clock_clause(rate: float, peak: dict) -> str:
    """What a run's file says of the clock behind a rate (GFLOP/s): the theoretical peak at the
    clock it measured, or, where it measured none, at the clock the system reported, which the
    cores need not have run at."""
    theory, measured = peak["theoretical"], (peak.get("measured_clock") or {}).get("ghz")
    if measured:
        return (f"The run measured its clock at {measured:.2f} GHz with every core busy (the system reported "
                f"{theory['clock_ghz']:.2f} GHz).")
    return (f"At the {theory['clock_ghz']:.2f} GHz the system reported, the theoretical peak is "
            f"{theory['gflops']:.0f} GFLOP/s, {rate / theory['gflops']:.0%} of which the kernel reached; the run "
            "measured no clock, so how fast its cores ran is not known.")


def peer_clause(precision: str, entries: list[dict]) -> str:
    """What a run says of one peer (report.peer_entries: {n, causal, ratio, max_error, note}): the
    precision its products ran in, its largest error and the range of its time over jit's; or,
    where it timed no shape, why not (the notes the run recorded)."""
    timed = [e for e in entries if e["ratio"]]
    if not timed:
        notes = sorted({e["note"] for e in entries if e["note"]})
        return f"This run did not time it: {'; '.join(notes) or 'the file has no row of it'}."
    return (f"In this run its products ran in {precision}, at errors up to {max(e['max_error'] for e in timed):.1e}, "
            f"and its time over jit's float32 time was {min(e['ratio'] for e in timed):.2f} to "
            f"{max(e['ratio'] for e in timed):.2f}.")


def other_runs(count: int, moved: float, where: str) -> str:
    """The sentence on the same machine's other peers runs a file keeps, or none ("") without them."""
    if not count:
        return ""
    return (f"The file keeps the float32 ratios of {count} more runs of the peers on the same machine; against them, "
            f"a ratio moved by at most {moved:.0%} ({where}).")


def first_call(cache_hits: int) -> str:
    """What the first call of a process did, from jit.kernel_info()'s cache counters."""
    return "loaded the machine code from Numba's cache" if cache_hits else "compiled the kernel (the cache was empty)"


def vectorised(packed_fmas: int) -> str:
    """Whether LLVM vectorised a loop, from its packed FMAs."""
    return "vectorised it" if packed_fmas else "did not vectorise it on this machine"


def isa_clause(flags: dict[str, bool]) -> str:
    """What the CPU offers for bfloat16 products, from bench.machine.isa_flags()."""
    if flags.get("amx_bf16") and flags.get("amx_tile"):
        halves = "bfloat16 and float16" if flags.get("amx_fp16") else "bfloat16"
        return (f"This CPU has AMX: tile instructions that multiply {halves} into float32 (and int8 "
                "into int32); never float32 inputs, so the kernel's float32 path cannot use them.")
    if flags.get("avx512_bf16"):
        return "This CPU has AVX512_BF16's vdpbf16ps but no AMX."
    return "This CPU has neither AMX nor AVX512_BF16: bfloat16 products are emulated in float32 here."


def goal(value: float, target: float, at_least: bool = True) -> str:
    """'met' or 'missed' for a value against its target."""
    return "met" if (value >= target if at_least else value <= target) else "missed"


def beside_goal(value: float, target: float, digits: int, percent: bool = False) -> str:
    """value with `digits` decimals, or more while it would read as the target itself: 69.6% is
    not printed as 70% beside a target of 70% that it misses."""
    def show(x: float, n: int) -> str:
        return f"{x:.{n}%}" if percent else f"{x:.{n}f}"

    while value != target and show(value, digits) == show(target, digits) and digits < 6:
        digits += 1
    return show(value, digits)


def from_cache(same_bytes_gbs: list[float], memory_gbs: list[float]) -> str:
    """Whether a reader of the step's own K and V got them faster than a reader of a large array,
    in the same rounds: only when every round of the first beat every round of the second (the
    ranges do not overlap) does a difference say more than the rounds' own spread."""
    if not same_bytes_gbs or not memory_gbs:
        return "not measured"
    if min(same_bytes_gbs) > max(memory_gbs):
        return "faster than from memory in every round: part of K and V came from a cache"
    if max(same_bytes_gbs) < min(memory_gbs):
        return "slower than the large array in every round"
    return "within the rounds' spread of the large array: no sign of a cache"


def error_verdict(mine: float, theirs: float, band: float = ERROR_BAND) -> str:
    """'smaller than', 'larger than' or 'about the same as' for two max errors (within the band)."""
    if mine < theirs * (1 - band):
        return "smaller than"
    if mine > theirs * (1 + band):
        return "larger than"
    return "about the same as"
