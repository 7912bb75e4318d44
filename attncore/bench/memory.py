"""Peak extra memory of one call, two ways.

* traced(fn): tracemalloc peak, in this process. Sees NumPy's allocations and,
  with Numba 0.68, the arrays Numba kernels allocate (their per-task tiles
  included); misses all of torch, whose allocator is not traced.
* rss(name, n, d, causal): the resident-set high-water mark in a fresh
  subprocess (`python -m attncore.bench.memory NAME N D CAUSAL`): reset it through
  /proc/self/clear_refs after a small warm-up call (Numba then loads its
  cache), make the call, report VmHWM - VmRSS before. Sees every allocator,
  counts only touched pages; Linux only.
"""
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable


def traced(fn: Callable[[], object]) -> int:
    """Peak bytes allocated through Python's allocators while fn() runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _status_kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def rss(name: str, n: int, d: int, causal: bool, timeout: float = 600) -> int | None:
    """Peak extra resident bytes of one call, measured in a fresh subprocess; None if unavailable."""
    command = [sys.executable, "-m", "attncore.bench.memory", name, str(n), str(d), str(int(causal))]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return json.loads(done.stdout)["bytes"]


def main(name: str, n: int, d: int, causal: bool) -> None:
    from .impls import IMPLS, inputs

    fn = IMPLS[name]
    fn(*inputs(64, d), causal)  # warm-up: imports, Numba cache load, torch kernels
    q, k, v = inputs(n, d)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark to the current RSS
    before = _status_kib("VmRSS")
    fn(q, k, v, causal)
    print(json.dumps({"bytes": (_status_kib("VmHWM") - before) * 1024}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), bool(int(sys.argv[4])))
