"""What the numbers were measured on: CPU, cores, library versions, threading settings."""
import datetime
import importlib.metadata
import os
import platform

ENV_VARS = (
    "OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def info():
    """A JSON-ready description of this machine and software."""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: version(p) for p in ("numpy", "numba", "llvmlite", "torch", "attncore")},
        "env": {name: os.environ.get(name) for name in ENV_VARS},
        "load_average": load_average(),
    }


def load_average():
    """1-minute load average: other processes on the cores make every timing noisier."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None
