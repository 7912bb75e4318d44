"""The command-line benchmark harness of the course: `python -m benchmarks.harness --help`.

The measuring code lives in attncore.bench (chapter 7 uses it too). The harness times each
implementation in a worker process of its own (attncore.bench.isolated), so that torch's
and Numba's OpenMP runtimes never meet. Thread pools stay awake for a while after a call,
so that a timed call right after its untimed one finds them awake, and go to sleep before
the pause before the next implementation's call ends (harness.PAUSE):

- OpenMP (torch, attncore.jit) spins about 33 ms on the course machine with 3e6 spins
  (GOMP_SPINCOUNT). At libgomp's default, torch's workers slept after 0.5 ms and half of
  torch's calls at N = 1024 took 8 ms instead of 1; with 3e6, none of 15 did.
- OpenBLAS (NumPy, the naive implementations) would spin about 0.1 s (2^28 cycles): its
  workers sleep after 2^4 cycles, the minimum.

Both are set before NumPy loads and can be overridden from outside.
"""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("GOMP_SPINCOUNT", "3000000")
