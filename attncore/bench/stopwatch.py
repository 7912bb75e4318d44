"""Timing one call, and several calls side by side in rounds.

A pause (PAUSE seconds, settable, recorded in the results) comes before each timed call, so
that no thread pool still spinning from the previous implementation's call (OpenBLAS, OpenMP,
oneDNN/TBB under OpenVINO, ONNX Runtime's pool, XLA's Eigen pool) takes a core from the next
one. After the pause the call runs untimed for at least WARMUP seconds (at least once): after
a pause the memory system can be slow to wake, and calls that stream memory pay for it.

Within a round every call is timed once, one after another, so two calls of one round ran
side by side: the ratio of two calls is the median over the rounds of their ratio within a
round (paired), and a slow phase of the machine that hits one round moves neither side alone.
"""
import statistics
import time
from collections.abc import Callable, Mapping, Sequence

PAUSE = 0.05  # seconds of sleep before each timed call
WARMUP = 0.02  # seconds of untimed calls, at least one, between the pause and the timed call


def timed(fn: Callable[[], object], pause: float = PAUSE, sleep: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.perf_counter, cpu: list | None = None, warmup: float = WARMUP) -> float:
    """Seconds of one call of fn(): after a pause, then untimed calls for at least warmup seconds
    (at least one). cpu: a list that gets the process's CPU seconds of the timed call (every
    thread's; Linux adds other threads' time at scheduler ticks, so a call of a few ms can read
    as one thread's). A call with a `timed_in_worker(pause, warmup)` method (a worker process's,
    attncore.bench.isolated) times itself there, the same way."""
    own = getattr(fn, "timed_in_worker", None)
    if own is not None:
        seconds, cpu_seconds = own(pause, warmup)
        if cpu is not None:
            cpu.append(cpu_seconds)
        return seconds
    if pause:
        sleep(pause)
    warm_start = clock()
    fn()  # untimed
    while clock() - warm_start < warmup:
        fn()
    cpu_start, start = time.process_time(), clock()
    fn()
    seconds = clock() - start
    if cpu is not None:
        cpu.append(time.process_time() - cpu_start)
    return seconds


def rounds(calls: Mapping[str, Callable[[], object]], repeats: int, pause: float = PAUSE,
           between: Callable[[], None] | None = None, sleep: Callable[[float], None] = time.sleep,
           clock: Callable[[], float] = time.perf_counter, cpu: dict | None = None,
           warmup: float = WARMUP) -> dict[str, list[float]]:
    """{name: [seconds of each round]}: in each round every call of `calls` ({name: fn}) is timed
    once, in order, each after its pause and warm-up (timed); between() (if given) runs at the
    end of each round. cpu: a dict that gets {name: [CPU seconds of each round]}."""
    times = {name: [] for name in calls}
    for name in calls if cpu is not None else ():
        cpu[name] = []
    for _ in range(repeats):
        for name, fn in calls.items():
            times[name].append(timed(fn, pause, sleep, clock, None if cpu is None else cpu[name], warmup))
        if between:
            between()
    return times


def paired(mine: Sequence[float] | None, theirs: Sequence[float] | None) -> float | None:
    """Median over the rounds of theirs / mine within each round (None if either is missing)."""
    if not mine or not theirs:
        return None
    return statistics.median(t / s for s, t in zip(mine, theirs, strict=True))


def thread_scaling(call_on: Callable[[int], Callable[[], object]], counts: Sequence[int] = (1, 2), repeats: int = 5,
                   pause: float = PAUSE, warmup: float = WARMUP) -> dict:
    """How a call speeds up with threads: call_on(n) is the call to time on n threads.
    {"seconds": {n: median seconds}, "speedup": {n: median over the rounds of the time on
    counts[0] threads over the time on n}}, the calls of each round timed side by side."""
    times = rounds({n: call_on(n) for n in counts}, repeats, pause, warmup=warmup)
    return {"seconds": {n: statistics.median(t) for n, t in times.items()},
            "speedup": {n: paired(times[n], times[counts[0]]) for n in counts}}
