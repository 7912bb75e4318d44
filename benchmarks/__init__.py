"""The command-line benchmark harness of the course: `python -m benchmarks.harness --help`.

The measuring code lives in attncore.bench (chapter 7 uses it too). Thread pools share
the cores (NumPy's OpenBLAS, Numba's and torch's OpenMP, the peers' own); idle workers of
each spin and take the cores from the next timed call of another: measured 5-20x slower
calls at N = 256 on 2 cores. A pause before each timed call outlasts every pool's spinning
but OpenBLAS's (2^28 cycles), so, before NumPy loads, OpenBLAS workers sleep after 2^4
cycles (the minimum; attncore.bench.THREAD_ENV, which says why OpenMP keeps its default;
it can be overridden from outside).
"""
import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
