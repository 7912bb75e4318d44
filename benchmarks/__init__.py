"""The command-line benchmark harness of the course: `python -m benchmarks.harness --help`.

The measuring code lives in attncore.bench (chapter 7 uses it too). The harness times each
implementation in a worker process of its own, stopped while another one is timed, with
OpenMP's workers spinning between calls (attncore.bench.isolated). OpenBLAS (NumPy in the
harness's own process, and the naive implementations) would spin about 0.1 s (2^28
cycles) after each call: before NumPy loads, its workers are told to sleep after 2^4
cycles (the minimum). It can be overridden from outside.
"""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
