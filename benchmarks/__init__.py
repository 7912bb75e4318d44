"""The command-line benchmark harness of the course: `python -m benchmarks.harness --help`.

The measuring code lives in attncore.bench (chapter 7 uses it too). Three thread pools
share the cores (NumPy's OpenBLAS, Numba's and torch's OpenMP); idle workers of each
spin and take the cores from the next timed call of another: measured 5-20x slower
calls at N = 256 on 2 cores. So, before any of them loads, OpenBLAS workers sleep after
2^4 cycles (the minimum; default 2^28) and OpenMP workers sleep at once
(attncore.bench.THREAD_ENV; either can be overridden from outside).
"""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
