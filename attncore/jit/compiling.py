"""How the kernels of attncore.jit are compiled, and cached on disk across all of its files.

Every kernel is compiled with cache=True: a second process loads the machine code from
__pycache__ (or NUMBA_CACHE_DIR) instead of compiling it. Numba stamps a kernel's cache
entry with a hash of the one file that defines the kernel. Here a kernel compiles in code
from its neighbours (the flash driver in flash.py inlines the micro-kernels of
microkernels.py, the exp2 polynomial of exponential.py, the TileShape constants of
isa.py), so with Numba's stamp an edit of microkernels.py alone would leave the driver's
cached machine code stale. The locators below stamp every kernel of this package with a
hash of all of the package's .py files instead. They go first in Numba's list of
locators and answer only for files in this folder, in Numba's own order:
NUMBA_CACHE_DIR if set, else __pycache__ beside the file, else the user-wide cache.
(NUMBA_CACHE_LOCATOR_CLASSES replaces Numba's list, these locators included.)

Since the locators and isa.host_features read parts of Numba that are not public, importing
attncore.jit refuses a Numba outside the versions it is tested with (TESTED_NUMBA), and where
such a part has moved all the same, falls back to Numba's public API with a warning.
"""
import functools
import hashlib
import re
import warnings
from pathlib import Path

import numba
import numpy as np
from numba.core import caching

TESTED_NUMBA = ((0, 68), (0, 69))  # Numba >= 0.68 and < 0.69: what attncore.jit is tested with (pyproject's jit extra)


def require_tested_numba(version: str) -> None:
    """Raise ImportError unless Numba `version` is one attncore.jit is tested with (TESTED_NUMBA):
    it reads parts of Numba that may change between minor versions."""
    (low_major, low_minor), (high_major, high_minor) = TESTED_NUMBA
    wanted = f"numba>={low_major}.{low_minor},<{high_major}.{high_minor}"
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if not TESTED_NUMBA[0] <= found < TESTED_NUMBA[1]:
        raise ImportError(f"attncore.jit is tested with {wanted} and reads parts of Numba that change between "
                          f"versions; this is Numba {version}: pip install '{wanted}'")


require_tested_numba(numba.__version__)  # before anything below touches Numba's internals


@functools.cache
def _warn_numba_moved(private: str, public: str) -> None:
    """Once per process: a private part of Numba that attncore.jit reads has moved; it uses public instead."""
    warnings.warn(f"attncore.jit reads {private}, which Numba {numba.__version__} lacks; it uses {public} "
                  f"instead. Please report this with your Numba version.", RuntimeWarning, stacklevel=3)

# Of the fast-math flags only `contract` (fused multiply-add) is on: -inf marks masked
# scores, so no-inf or no-NaN assumptions would be wrong here.
FASTMATH = {"contract"}
PACKAGE = Path(__file__).resolve().parent


def package_stamp():
    """A hash of the names and contents of every .py file of attncore.jit (a hex string)."""
    files = sorted(PACKAGE.glob("*.py"))
    return _hash_files(tuple((path, path.stat().st_mtime_ns, path.stat().st_size) for path in files))


@functools.lru_cache(maxsize=16)
def _hash_files(files):
    """files: (path, mtime, size) triples; the times and sizes only key the memo, so a file
    that changes while the process runs is hashed again."""
    digest = hashlib.sha256()
    for path, _, _ in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class _PackageStamp:
    """A locator mixin: only for functions defined in attncore/jit/, stamped with the whole package."""

    def get_source_stamp(self):
        return package_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != PACKAGE:
            return None
        return super().from_function(py_func, py_file)


class PackageUserProvidedLocator(_PackageStamp, caching.UserProvidedCacheLocator):
    """The folder NUMBA_CACHE_DIR names."""


class PackageInTreeLocator(_PackageStamp, caching.InTreeCacheLocator):
    """attncore/jit/__pycache__."""


class PackageUserWideLocator(_PackageStamp, caching.UserWideCacheLocator):
    """The user's cache folder, when __pycache__ is not writable (a read-only install)."""


LOCATORS = (PackageUserProvidedLocator, PackageInTreeLocator, PackageUserWideLocator)


def _install_locators():
    """Put LOCATORS first in Numba's list (once): before any kernel below is declared. Where
    Numba keeps that list elsewhere (a private attribute), its own locators stay, with a
    warning: each kernel is then stamped with its own file only."""
    classes = getattr(caching.CacheImpl, "_locator_classes", None)
    if not isinstance(classes, list):
        _warn_numba_moved("numba.core.caching.CacheImpl._locator_classes",
                          "Numba's own cache locators (an edit of one file of attncore.jit leaves the cached "
                          "kernels of the others stale: delete attncore/jit/__pycache__ after one)")
        return
    classes[:0] = [locator for locator in LOCATORS if locator not in classes]


_install_locators()
_jit = numba.njit(cache=True, fastmath=FASTMATH)
_parallel_jit = numba.njit(cache=True, fastmath=FASTMATH, parallel=True)


def _compute_dtype(dtype):
    """Numba kernels run in float32 or float64; float16 is computed in float32."""
    return np.float64 if dtype == np.float64 else np.float32
