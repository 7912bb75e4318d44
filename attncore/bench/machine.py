"""What the numbers were measured on: CPU, cores, clock, peak rates, versions, thread settings."""
import contextlib
import ctypes
import datetime
import glob
import importlib.metadata
import os
import platform
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ENV_VARS = (
    "OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
    "ATTNCORE_JIT_PATH",
)


def _cpuinfo():
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def _field(name, text=None):
    text = _cpuinfo() if text is None else text
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.split(":")[0].strip() == name]


def cpu_model() -> str:
    return next(iter(_field("model name")), None) or platform.processor() or "unknown"


def cores() -> int:
    """CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def clock_ghz() -> float | None:
    """The highest clock the system reports (cpufreq's maximum, else /proc/cpuinfo's MHz).
    A virtual machine often reports only its nominal clock; turbo may run faster: the clock
    the cores run at is measured by bench.clock.measured_clock."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) / 1e6
    except (OSError, ValueError):
        mhz = [float(x) for x in _field("cpu MHz")]
        return max(mhz) / 1e3 if mhz else None


def threads_per_core() -> int | None:
    """Hardware threads per core that the system shows for CPU 0 (its SMT siblings), or None.
    A virtual machine shows what its hypervisor chooses to, not the host's topology."""
    try:
        with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
            text = f.read().strip()
    except OSError:
        return None
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def theoretical_peak() -> dict:
    """cores x FMA pipes x float32 lanes per pipe x 2 flops x clock, from the machine.

    Pipes and lanes per pipe: 2 FMA pipes on current x86 server cores; 16 lanes with
    AVX-512 on Intel (512-bit pipes), 8 with AVX2, and 8 on AMD Zen 4 (AVX-512 on
    256-bit pipes, family 25); 4 (128-bit) elsewhere. These are read from the CPU's
    features and vendor, and assumed per family: the JSON keeps every factor."""
    from llvmlite import binding

    # What the CPU can do, so its raw features: not jit.host_features, which says what the
    # kernels compile for (without AVX when Numba is told so).
    features = binding.get_host_cpu_features()
    vendor = next(iter(_field("vendor_id")), "")
    family = next(iter(_field("cpu family")), "")
    if features.get("avx512f") and not (vendor == "AuthenticAMD" and family == "25"):
        lanes = 16
    elif features.get("avx512f") or (features.get("avx2") and features.get("fma")):
        lanes = 8
    else:
        lanes = 4
    pipes, clock, n = 2, clock_ghz(), cores()
    gflops = n * pipes * lanes * 2 * clock if clock else None
    return {"cores": n, "fma_pipes": pipes, "lanes": lanes, "clock_ghz": clock, "gflops": gflops,
            "vendor": vendor, "family": family}


def _openblas():
    """NumPy's OpenBLAS, loaded in this process, with its thread setters (None if not found)."""
    folders = [os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs"), os.path.dirname(np.__file__)]
    for path in [p for folder in folders for p in glob.glob(os.path.join(folder, "*openblas*"))]:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "")):
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                return setter, getter
    return None


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[bool]:
    """NumPy's BLAS limited to n threads inside the block (a no-op where it cannot be found)."""
    found = _openblas()
    if found is None:
        yield False
        return
    setter, getter = found
    before = getter()
    setter(n)
    try:
        yield True
    finally:
        setter(before)


def sgemm_rate(n: int = 1024, repeats: int = 5, threads: int = 1) -> float | None:
    """GFLOP/s of one float32 (n, n) @ (n, n) product on `threads` BLAS threads, or None if
    NumPy's BLAS cannot be limited. One thread: timed in CPU time (the fastest of the repeats),
    which other jobs on the machine disturb less than wall time; more threads: wall time (the
    fastest), since CPU time would add the threads up. The harness times the one-thread product
    in wall time beside each size instead."""
    a, b = (np.random.default_rng(i).standard_normal((n, n), dtype=np.float32) for i in range(2))
    clock = time.process_time if threads == 1 else time.perf_counter
    with blas_threads(threads) as limited:
        if not limited:
            return None
        a @ b
        times = []
        for _ in range(repeats):
            start = clock()
            a @ b
            times.append(clock() - start)
    return 2 * n**3 / min(times) / 1e9


def copy_bandwidth(threads: int = 1, mib: int = 256, repeats: int = 3) -> float:
    """GB/s (read + write) of copying a float32 array of `mib` MiB: the fastest of copy_rates."""
    return max(copy_rates(threads, mib, repeats))


def copy_rates(threads: int = 1, mib: int = 256, repeats: int = 3) -> list[float]:
    """GB/s (read + write) of each of `repeats` copies of a float32 array of `mib` MiB, far larger
    than any cache, split over `threads` Python threads (NumPy releases the GIL while it copies),
    in wall time, after one untimed copy that touches every page."""
    import threading

    source = np.ones(mib * 2**20 // 4, np.float32)
    target = np.empty_like(source)
    edges = np.linspace(0, source.size, threads + 1).astype(int)

    def part(i):
        np.copyto(target[edges[i]:edges[i + 1]], source[edges[i]:edges[i + 1]])

    def copy():
        workers = [threading.Thread(target=part, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    copy()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy()
        times.append(time.perf_counter() - start)
    return [2 * source.nbytes / t / 1e9 for t in times]


def read_bandwidth(threads: int = 1, mib: int = 256, repeats: int = 3) -> float:
    """GB/s of reading a float32 array of `mib` MiB once, split over `threads` threads (reader.py:
    compiled, asking for its rows ahead): the roof of a kernel that only reads, as decoding reads
    K and V. Fastest of the repeats, after one untimed pass."""
    from .reader import ROW, read_seconds

    source = np.ones(mib * 2**20 // 4 // ROW * ROW, np.float32)
    return source.nbytes / read_seconds(source, threads, repeats) / 1e9


def read_method(mib: int) -> str:
    """How read_bandwidth(mib=mib) reads, for a results file."""
    from .reader import PREFETCH_ROWS, ROW

    return (f"a compiled sum of {mib} MiB float32 by rows of {ROW * 4} bytes, each thread asking for the row "
            f"{PREFETCH_ROWS} ahead of the one it reads; read once, fastest")


def _caches() -> list[tuple[int, str, int]]:
    """(level, type, bytes) of each cache the system reports for CPU 0 (a virtual machine may
    report its host's)."""
    found = []
    for folder in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(os.path.join(folder, "size")) as f:
                text = f.read().strip()
            with open(os.path.join(folder, "level")) as f:
                level = int(f.read())
            with open(os.path.join(folder, "type")) as f:
                kind = f.read().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        found.append((level, kind, int(text.rstrip("KMG")) * scale))
    return found


def last_level_cache_bytes() -> int | None:
    """The size of the largest cache the system reports, or None: a bandwidth measured on less
    than about twice this may be the cache's."""
    return max((size for *_, size in _caches()), default=None)


def l1_data_cache_bytes() -> int | None:
    """The size of the first-level data cache the system reports for CPU 0, or None."""
    return next((size for level, kind, size in _caches() if level == 1 and kind == "Data"), None)


def memory_mib() -> int:
    """MiB of an array that comes from memory, not a cache: at least 1 GiB and twice the largest
    cache the system reports. Every bandwidth of a run (copy and read) uses this size."""
    return max(1024, 2 * (last_level_cache_bytes() or 0) // 2**20)


def isa_flags() -> dict[str, bool]:
    """The instruction-set extensions that matter for attention kernels, from /proc/cpuinfo."""
    flags = set(next(iter(_field("flags")), "").split())
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile",
              "amx_bf16", "amx_fp16", "amx_int8")
    return {flag: flag in flags for flag in wanted}


def bandwidth(repeats: int = 3) -> dict:
    """Copy bandwidth of one core and of all the cores this process may use (the fastest copy,
    and every copy of all the cores), and the read bandwidth of all of them, in GB/s, on arrays
    of memory_mib(): the sloped roof of the roofline, for the same cores as the peak."""
    mib = memory_mib()
    runs = copy_rates(cores(), mib=mib, repeats=repeats)
    return {"per_core_gbs": copy_bandwidth(1, mib=mib, repeats=repeats),
            "all_cores_gbs": max(runs), "all_cores_runs_gbs": runs, "threads": cores(),
            "method": copy_method(mib),
            "read_all_cores_gbs": read_bandwidth(cores(), mib=mib, repeats=repeats),
            "read_method": read_method(mib), "array_mib": mib}


def copy_method(mib: int) -> str:
    """How copy_bandwidth(mib=mib) copies, for a results file."""
    return f"numpy.copyto of {mib} MiB float32, read + write counted, fastest of the repeats"


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def source() -> dict | None:
    """{"commit", "attncore_modified"}: the commit of the git clone attncore was imported from, and
    whether attncore/ differs from it; None where attncore's files are not tracked by git (a wheel)."""
    package = Path(__file__).resolve().parents[1]

    def git(*args):
        return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        git("ls-files", "--error-unmatch", "__init__.py")
        return {"commit": git("rev-parse", "HEAD"), "attncore_modified": bool(git("status", "--porcelain", "--", "."))}
    except (OSError, subprocess.SubprocessError):
        return None


def info() -> dict:
    """A JSON-ready description of this machine and software, and of the commit measured (source())."""
    return {
        "l1_data_cache_bytes": l1_data_cache_bytes(),
        "last_level_cache_bytes": last_level_cache_bytes(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": cores(),
        "isa": isa_flags(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: version(p) for p in ("numpy", "numba", "llvmlite", "torch", "attncore", "onnx", "onnxruntime",
                                             "openvino", "jax", "jaxlib")},
        "env": {name: os.environ.get(name) for name in ENV_VARS},
        "load_average": load_average(),
        "source": source(),
    }


def load_average() -> float | None:
    """1-minute load average: other processes on the cores make every timing noisier."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None
