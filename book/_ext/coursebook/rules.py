"""Every rule by which chapter 7 and its peers page choose a word from measured data.

Each rule is a small function of numbers read from a results file or measured by the build;
the tests render it on files where its word flips. A verdict near its threshold says so
instead of picking a side (a margin), since a build on the same machine must not flip it.
"""
RIDGE_MARGIN = 0.25  # within 25% of the ridge, a point's side is not decided
ERROR_BAND = 0.10  # two errors within 10% of each other are "about the same"


def ridge_side(intensity: float, ridge: float | None, margin: float = RIDGE_MARGIN) -> str:
    """Where an intensity lies against the ridge of a roofline: 'below the ridge (memory-bound)',
    'above the ridge (compute-bound)', or 'within 25% of the ridge: not decided', or 'not known'
    without a measured bandwidth."""
    if ridge is None:
        return "not known: the run measured no bandwidth"
    if abs(intensity - ridge) <= margin * ridge:
        return f"within {margin:.0%} of the ridge: not decided"
    return "below the ridge (memory-bound)" if intensity < ridge else "above the ridge (compute-bound)"


def ridge_clause(ridge: float | None, bandwidth: float | None) -> str:
    """Where a run's roofline has its ridge, or why it has none."""
    if ridge is None:
        return "that run measured no bandwidth, so its figure has no sloped roof and no ridge."
    return f"its copy bandwidth was {bandwidth:.1f} GB/s, so its ridge sits at {ridge:.1f} flop per byte."


def above_ceiling(points: list[tuple[str, float, float]], peak_name: str, peak: float) -> str:
    """The clause a roofline's text adds about points above its one peak (ceiling()): none above,
    or why a point can be there: past the sgemm yardstick a faster product is possible; past the
    peak at the measured clock only a wrong count of pipes or lanes, or a clock that moved."""
    above = [(name, rate) for name, _, rate in points if rate > peak]
    if not above:
        return f"Every point is under the {peak_name} ({peak:.0f} GFLOP/s)."
    listed = ", ".join(f"{name} at {rate / peak:.0%}" for name, rate in above)
    if peak_name.startswith("sgemm peak"):
        return (f"Above the {peak_name} ({peak:.0f} GFLOP/s): {listed}. That peak is a yardstick, not a ceiling: "
                "a product faster than one thread's sgemm passes it.")
    return (f"Above the {peak_name} ({peak:.0f} GFLOP/s): {listed}, which that peak rules out: the pipes and lanes "
            "it assumes do not describe this CPU, or its clock changed between the measurements.")


def stores_clause(stores: int, multiply_adds: int) -> str:
    """What a tile product's reduction loop does with C, from its counts of stores and multiply-adds."""
    if stores == 0:
        return "It stores nothing: C stays in registers for the whole reduction and is stored once, after the loop."
    return (f"It stores {stores} vectors per pass: every vector of C comes in from the cache and goes back out "
            f"once per {multiply_adds / stores:.0f} multiply-adds.")


def packing_bound(tile_fraction: float, products_share: float) -> str:
    """What packing A could buy at most: the tile product brought up to one thread's large product,
    over the products' share of the kernel's time (Amdahl)."""
    if tile_fraction >= 1:
        return ("The tile product already ran at least as fast as one thread's large product, so this build shows "
                "no gap for packing A to close.")
    bound = 1 / ((1 - products_share) + products_share * tile_fraction)
    return (f"Brought up to one thread's large product, the tile products would run {1 / tile_fraction:.2f} times as "
            f"fast; at {products_share:.0%} of the kernel's time, that makes the whole call at most {bound:.2f} times "
            "as fast.")


def first_call(cache_hits: int) -> str:
    """What the first call of a process did, from jit.kernel_info()'s cache counters."""
    return "loaded the machine code from Numba's cache" if cache_hits else "compiled the kernel (the cache was empty)"


def vectorised(packed_fmas: int) -> str:
    """Whether LLVM vectorised a loop, from its packed FMAs."""
    return "vectorised it" if packed_fmas else "did not vectorise it on this machine"


def isa_clause(flags: dict[str, bool]) -> str:
    """What the CPU offers for bfloat16 products, from bench.machine.isa_flags()."""
    if flags.get("amx_bf16") and flags.get("amx_tile"):
        return ("This CPU has AMX: tile instructions that multiply bfloat16 into float32 (and int8 into int32); "
                "never float32 inputs, so the kernel's float32 path cannot use them.")
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
