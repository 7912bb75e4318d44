"""attncore.jit's on-disk cache stays correct across the files of the package.

Numba stamps a kernel's cache entry with the one file that defines it, but the flash driver
(flash.py) compiles in the micro-kernels (microkernels.py). attncore/jit/compiling.py stamps
every kernel of the package with all of its files; these tests edit a copy of the package
and check that the driver is compiled again, with NUMBA_CACHE_DIR and in __pycache__."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

import attncore  # noqa: E402
from attncore.jit import compiling  # noqa: E402

# the driver's cache hits and misses in a fresh process, on the portable path only
DRIVER_HITS_AND_MISSES = (
    "import numpy as np\n"
    "from attncore import jit\n"
    "x = np.ones((1, 8, 4), np.float32)\n"
    "jit.flash_attention(x, x, x, path='portable')\n"
    "info = jit.kernel_info()\n"
    "print(info['cache_hits'], info['cache_misses'])\n"
)


def _copy_of_attncore(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(Path(attncore.__file__).parent, source / "attncore",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return source


def _driver_hits_and_misses(source, cache_dir):
    """Run DRIVER_HITS_AND_MISSES on the copy of attncore in source, with NUMBA_CACHE_DIR=cache_dir
    (None: unset, the cache goes to __pycache__)."""
    env = {name: value for name, value in os.environ.items() if name != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = str(source)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    done = subprocess.run([sys.executable, "-c", DRIVER_HITS_AND_MISSES], capture_output=True, text=True,
                          env=env, cwd=source)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["NUMBA_CACHE_DIR", "__pycache__"])
def test_an_edit_of_another_file_of_the_package_recompiles_the_driver(tmp_path, where):
    source = _copy_of_attncore(tmp_path)
    cache_dir = tmp_path / "cache" if where == "NUMBA_CACHE_DIR" else None
    cache = cache_dir or source / "attncore" / "jit" / "__pycache__"
    assert _driver_hits_and_misses(source, cache_dir) == ["0", "1"]
    (index,) = cache.rglob("flash._flash-*.nbi")
    stamped = index.read_bytes()
    assert _driver_hits_and_misses(source, cache_dir) == ["1", "0"]
    # flash.py is unchanged: Numba's own stamp would load the stale machine code here
    with open(source / "attncore" / "jit" / "microkernels.py", "a") as microkernels:
        microkernels.write("\n# an edit\n")
    assert _driver_hits_and_misses(source, cache_dir) == ["0", "1"]
    assert index.read_bytes() != stamped
    assert _driver_hits_and_misses(source, cache_dir) == ["1", "0"]


def test_the_package_locators_answer_only_for_the_package():
    def kernel():
        pass

    outside = Path(attncore.__file__).parent / "flash.py"
    inside = compiling.PACKAGE / "flash.py"
    for locator in compiling.LOCATORS:
        assert locator.from_function(kernel, str(outside)) is None
    located = compiling.PackageInTreeLocator.from_function(kernel, str(inside))
    assert located.get_source_stamp() == compiling.package_stamp()
    assert located.get_cache_path() == str(compiling.PACKAGE / "__pycache__")
