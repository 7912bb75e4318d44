"""Where a learner's code runs when it is graded: a bubblewrap sandbox per worker.

The sandbox has its own user, PID, mount, IPC, UTS and network namespaces; it sees a
read-only system (/usr, the Python installation, its site-packages), one private
writable tmpfs that is its home and working folder, and nothing else: not the course
folder, the gradebook, solutions/, other submissions, the grader's files or its /proc.
It dies with the grader, and every process in it ends when the worker ends (the worker
is PID 1 of its namespace) and, but the worker, when a cell or a call returns
(end_other_processes). Its environment is built here, not inherited.

It sees a learner's attncore: the library without the grading engine (no suites, no
references, no hidden cases), and no library that would do the work (torch, scipy,
jax, ...). Hard resource limits are set by the worker itself before it runs any
learner code (see worker.HARD_LIMITS): no code inside can raise a hard limit. No new user
namespace can be made inside (--disable-userns), its /dev/shm is a small tmpfs, the
whole sandbox lives in a control group capped at MEMORY_BYTES and TASKS where the machine
offers one (course.cgroups), and a grader that runs as root starts it as an unprivileged
user (UID outside too), so the kernel holds it to its process limit (RLIMIT_NPROC).

Linux only, with the `bwrap` binary (Debian/Ubuntu package `bubblewrap`) and
unprivileged user namespaces. available() says why not when it cannot start.
"""
import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import attncore

# Top-level packages that would do a learner's work, or that only the grader needs.
HIDDEN_PACKAGES = ("torch", "functorch", "scipy", "jax", "jaxlib", "tensorflow", "keras",
                   "transformers", "sentence_transformers", "onnxruntime", "openvino",
                   "sklearn", "nbgrader", "attncore")
HOME = "/home/learner"  # the private tmpfs: the notebook's working folder
UID = 65534  # the sandbox's own user inside its user namespace ("nobody")
LIBRARY = "/sandbox/lib"  # the learner's attncore
SITE = "/sandbox/site"  # the grader's site-packages, numbered, read-only
SCRATCH_BYTES = 512 << 20  # size of the private tmpfs
TMP_BYTES = 64 << 20  # size of its /tmp
SHM_BYTES = 64 << 20  # size of its /dev/shm (all three live in memory, within MEMORY_BYTES)
MEMORY_BYTES = 2 << 30  # memory of the whole sandbox, tmpfs files included (with a cgroup)
TASKS = 64  # processes and threads of the whole sandbox (with a cgroup)
OUTSIDE_UID = 65534  # who the sandbox runs as on the machine when the grader is root
SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                "/etc/fonts", "/etc/alternatives")
ABSENT = str(Path(__file__).with_name("absent.py"))  # a module whose import fails
# Environment the worker gets: nothing of the grader's but the two OpenBLAS settings that
# some CPUs need for correct results.
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


class SandboxUnavailable(RuntimeError):
    """No sandbox can start here; the message says why."""


def bwrap() -> str | None:
    """The bubblewrap binary, or None."""
    return os.environ.get("ATTNCORE_BWRAP") or shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def available() -> str | None:
    """None when a sandbox starts here, else why not (one trial run, cached)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap sandboxes need Linux (this is {sys.platform})"
    binary = bwrap()
    if binary is None:
        return ("the `bwrap` command is missing (install the package `bubblewrap`: "
                "apt-get install bubblewrap, dnf install bubblewrap)")
    try:
        trial = subprocess.run(command(["-c", "pass"]), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=60, **launch_options())
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"`{binary}` could not be run ({error})"
    if trial.returncode != 0:
        nobody = (f"; with no control group here, a grader running as root starts it as "
                  f"user {OUTSIDE_UID}, who must be able to read Python and its packages"
                  if launch_options() else "")
        return (f"`bwrap` could not start a sandbox (exit {trial.returncode}: "
                f"{trial.stderr.strip()[:300]}); unprivileged user namespaces may be off{nobody}")
    return None


def command(arguments: list[str], info_fd: int | None = None) -> list[str]:
    """The command line that runs `python ARGUMENTS` inside a fresh sandbox, with the
    grader's interpreter (not a virtual environment's launcher, which the sandbox lacks:
    the site-packages are given by PYTHONPATH, and -S keeps .pth files out).

    info_fd: a descriptor bwrap writes {"child-pid": N} to, N being the worker's PID as the
    grader sees it (the worker is PID 1 inside).
    """
    options = ["--unshare-all", "--unshare-user", "--disable-userns", "--assert-userns-disabled",
               "--die-with-parent", "--new-session", "--as-pid-1",
               "--cap-drop", "ALL", "--clearenv", "--hostname", "sandbox",
               "--uid", str(UID), "--gid", str(UID)]
    for path in SYSTEM:
        if os.path.islink(path):
            options += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            options += ["--ro-bind", path, path]
    for path in SYSTEM_FILES:
        options += ["--ro-bind-try", path, path]
    for path in _python_installation():
        options += ["--ro-bind", path, path]
    options += ["--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev",
                "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
                "--size", str(SCRATCH_BYTES), "--perms", "0700", "--tmpfs", HOME,
                "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--chdir", HOME]
    options += _learner_library()
    sites = _site_packages()
    for index, site in enumerate(sites):
        options += ["--ro-bind", site, f"{SITE}/{index}", *_hidden_in(site, f"{SITE}/{index}")]
    options += ["--remount-ro", "/"]  # the sandbox's own root: only HOME and /tmp are writable
    for name, value in _environment(len(sites)).items():
        options += ["--setenv", name, value]
    if info_fd is not None:
        options += ["--info-fd", str(info_fd)]
    return [bwrap(), *options, "--", os.path.realpath(sys.executable), "-S", *arguments]


@functools.lru_cache(maxsize=1)
def launch_options() -> dict:
    """subprocess options for bwrap: as the grader, unless the grader is root and no
    control group caps the sandbox's processes (course.cgroups); then as an unprivileged
    user, whom the kernel holds to the process limit (it does not hold root to it)."""
    from .cgroups import why_not

    if not hasattr(os, "geteuid") or os.geteuid() != 0 or why_not() is None:
        return {}
    return {"user": OUTSIDE_UID, "group": OUTSIDE_UID, "extra_groups": []}


def read_child_pid(stream: IO[str]) -> int | None:
    """The worker's PID from bwrap's --info-fd stream (None when bwrap wrote nothing)."""
    try:
        return int(json.loads(stream.read() or "{}")["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def end_other_processes(pid: int) -> None:
    """Kill every process in the sandbox whose PID 1 is `pid` (as the grader sees it), but
    that one: whatever a cell or a call started ends when it returns. Orphans in a PID
    namespace become children of its PID 1, so its descendants are all of them."""
    for _ in range(3):  # a process may fork while its siblings are being killed
        others = descendants(pid)
        if not others:
            return
        for child in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """The live processes below pid (zombies hold nothing, and their children are
    reparented to the sandbox's PID 1)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    todo += [int(child) for child in children.read().split()]
        if parent != pid and not _zombie(parent):
            found.append(parent)
    return found


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return True  # gone


def _python_installation():
    """The folders holding the interpreter and its standard library, outside /usr."""
    folders = {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(f for f in folders if not f.startswith(("/usr/", "/bin", "/lib")) and f != "/usr")


def _site_packages():
    """The grader's site-packages folders that exist (the venv's, the user's, the system's)."""
    seen = []
    for entry in sys.path:
        real = os.path.realpath(entry)
        if os.path.isdir(real) and Path(real).name in ("site-packages", "dist-packages") \
                and real not in seen:
            seen.append(real)
    return seen


def _hidden_in(source, target):
    """bwrap options that hide HIDDEN_PACKAGES in the site folder bound at target."""
    options = []
    for entry in os.listdir(source):
        name = entry.split(".")[0].split("-")[0]
        if name in HIDDEN_PACKAGES and not entry.endswith((".dist-info", ".egg-info")):
            options += _absent(f"{target}/{entry}", os.path.isdir(os.path.join(source, entry)))
    return options


def _absent(path, folder):
    """bwrap options that leave at path a package (folder) or module whose import fails."""
    if folder:
        return ["--tmpfs", path, "--ro-bind", ABSENT, f"{path}/__init__.py"]
    return ["--ro-bind", ABSENT, path]


def _learner_library():
    """attncore, read-only, without the grading engine."""
    package = Path(attncore.__file__).resolve().parent
    target = f"{LIBRARY}/attncore"
    return ["--ro-bind", str(package), target, *_absent(f"{target}/grading/engine", True)]


def _environment(n_sites):
    path = [LIBRARY, *(f"{SITE}/{index}" for index in range(n_sites))]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{HOME}/.matplotlib",
           "NUMBA_CACHE_DIR": f"{HOME}/.numba", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    env.update({name: os.environ[name] for name in PASSED_THROUGH if name in os.environ})
    return env
