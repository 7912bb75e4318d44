"""Where a learner's code runs when it is graded: a bubblewrap sandbox per worker.

The sandbox has its own user, PID, mount, IPC, UTS and network namespaces; it sees a
read-only system (/usr, the Python installation, its site-packages), one private
writable tmpfs that is its home and working folder, and nothing else: not the course
folder, the gradebook, solutions/, other submissions, the grader's files or its /proc.
It dies with the grader, and every process in it ends when the worker ends (the worker
is PID 1 of its namespace) and, but the worker, when a cell or a call returns (its
members are killed, those of its control group or of its PID namespace: end_processes).
None should be there: the worker starts no process (course.seccomp). Its environment is
built here, not inherited.

It sees a learner's attncore: the library without the grading engine (no suites, no
references, no hidden cases) and, for a graded notebook, without the modules its exercise
does not allow (course.allowed): each is a stand-in (course.left_out) whose names raise
ForbiddenCall, and no compiled copy of it is there, so that no code in the worker can
reach what is not there. Of the grader's site-packages it sees only what a
notebook needs (ALLOWED_DISTRIBUTIONS and what they require): no library that would do
the work (torch, scipy, jax, or any other the grading machine happens to have). Hard resource
limits are set by the worker itself before it runs any learner code (see
worker.HARD_LIMITS): no code inside can raise a hard limit. No new user namespace can be
made inside (--disable-userns), its /dev/shm is a small tmpfs, and the whole sandbox
lives in a control group capped at MEMORY_BYTES and TASKS where the machine offers one
(course.cgroups); a grader that runs as root where none is offered starts it as an
unprivileged user, whom the kernel holds to the process limit (RLIMIT_NPROC).

Linux only, with the `bwrap` binary (Debian/Ubuntu package `bubblewrap`) and
unprivileged user namespaces. available() says why not when it cannot start.
"""
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import attncore

from .allowed import library_modules

# What a notebook may import from the grader's site-packages, with every distribution
# these require: NumPy, IPython (the worker's shell), matplotlib (figures), Numba (attncore.jit).
ALLOWED_DISTRIBUTIONS = ("numpy", "ipython", "matplotlib", "numba")
HOME = "/home/learner"  # the private tmpfs: the notebook's working folder
UID = 65534  # the sandbox's own user inside its user namespace ("nobody")
LIBRARY = "/sandbox/lib"  # the learner's attncore
SITE = "/sandbox/site"  # the grader's site-packages, numbered, read-only
SCRATCH_BYTES = 512 << 20  # size of the private tmpfs
TMP_BYTES = 64 << 20  # size of its /tmp
SHM_BYTES = 64 << 20  # size of its /dev/shm (all three live in memory, within MEMORY_BYTES)
IN_MEMORY = (HOME, "/tmp", "/dev/shm")  # the sandbox's writable folders, all three tmpfs
MEMORY_BYTES = 2 << 30  # memory of the whole sandbox, tmpfs files included (with a cgroup)
TASKS = 64  # processes and threads of the whole sandbox (with a cgroup)
OUTSIDE_UID = 65534  # who the sandbox runs as on the machine when the grader is root
SYSTEM = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                "/etc/fonts", "/etc/alternatives")
ABSENT = str(Path(__file__).with_name("absent.py"))  # a package whose import fails
LEFT_OUT = str(Path(__file__).with_name("left_out.py"))  # a module of names that raise ForbiddenCall
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


def command(arguments: list[str], info_fd: int | None = None,
            library: frozenset[str] | None = None) -> list[str]:
    """The command line that runs `python ARGUMENTS` inside a fresh sandbox, with the
    grader's interpreter (not a virtual environment's launcher, which the sandbox lacks:
    the site-packages are given by PYTHONPATH, and -S keeps .pth files out).

    info_fd: a descriptor bwrap writes {"child-pid": N} to, N being the worker's PID as the
    grader sees it (the worker is PID 1 inside). library: the top-level attncore modules
    the sandbox keeps (course.allowed.kept_modules; None: all of them).
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
    options += _learner_library(library)
    sites = _site_packages()
    for index, site in enumerate(sites):
        options += [option for entry in sorted(set(os.listdir(site)) & allowed_entries())
                    for option in ("--ro-bind", f"{site}/{entry}", f"{SITE}/{index}/{entry}")]
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


def namespace_members(pid: int) -> list[int]:
    """The PIDs, as the grader sees them, of every process in the PID namespace of process
    pid (pid included), whatever their state: a process belongs to the sandbox by where it
    lives, not by whose child it is or whether its main thread has ended."""
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return []
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    members.append(int(entry))
    return members


def alive(pid: int) -> bool:
    """Whether any thread of process pid still runs: a thread-group leader that ended its
    main thread shows Z while its other threads run; a process all of whose threads ended
    is a zombie that holds nothing."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        with contextlib.suppress(OSError, IndexError):
            with open(f"/proc/{pid}/task/{task}/stat") as stat:
                if stat.read().rpartition(")")[2].split()[0] not in "ZX":
                    return True
    return False


def end_processes(others: Callable[[], list[int]]) -> None:
    """Kill every process others() names, again while it names any (a process may start
    one while its siblings are being killed): a sandbox's processes but its worker end
    when a cell or a call returns."""
    for _ in range(3):
        found = others()
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


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


@functools.lru_cache(maxsize=1)
def allowed_entries() -> frozenset[str]:
    """The names in a site-packages folder (packages, modules, their .libs and .dist-info
    folders) of ALLOWED_DISTRIBUTIONS and every distribution they require, as the
    distributions' own lists of files give them."""
    from importlib.metadata import PackageNotFoundError, distribution

    seen, todo, entries = set(), list(ALLOWED_DISTRIBUTIONS), set()
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            found = distribution(name)
        except PackageNotFoundError:  # a requirement for another platform or Python
            continue
        todo += [re.match(r"[A-Za-z0-9._-]+", requirement)[0] for requirement in found.requires or ()
                 if "extra ==" not in requirement]
        entries.update(path.parts[0] for path in found.files or ()
                       if path.parts[0] not in ("..", "__pycache__") and not path.name.endswith(".pth"))
    return frozenset(entries)


def _absent(path):
    """bwrap options that leave at path a package whose import fails."""
    return ["--tmpfs", path, "--ro-bind", ABSENT, f"{path}/__init__.py"]


def _learner_library(kept):
    """bwrap options that give the sandbox the learner's attncore (library_overlays),
    read-only."""
    package = Path(attncore.__file__).resolve().parent
    target = f"{LIBRARY}/attncore"
    options = ["--ro-bind", str(package), target]
    for path, file in library_overlays(kept).items():
        if (package / path).is_dir():
            options += ["--tmpfs", f"{target}/{path}",
                        *(["--ro-bind", file, f"{target}/{path}/__init__.py"] if file else [])]
        else:
            options += ["--ro-bind", file, f"{target}/{path}"]
    return options


def library_overlays(kept: frozenset[str] | None) -> dict[str, str | None]:
    """{path inside attncore: what stands there instead}: the learner's attncore is the
    library without the grading engine (a package whose import fails) and, when `kept`
    is given, with a stand-in for each module not kept (course.left_out; a subpackage:
    a folder holding only the stand-in) and no compiled copies of the modules (an empty
    __pycache__). A folder's entry names the file that is its only __init__.py (None:
    an empty folder); a module's, the file it is."""
    package = Path(attncore.__file__).resolve().parent
    overlays = {"grading/engine": ABSENT}
    if kept is None:
        return overlays
    for module in sorted(library_modules() - kept):
        overlays[module if (package / module).is_dir() else f"{module}.py"] = LEFT_OUT
    if (package / "__pycache__").is_dir():
        overlays["__pycache__"] = None
    return overlays


def library_copy(kept: frozenset[str] | None, folder: str | os.PathLike) -> None:
    """Build in folder, of links to the library's files (copies where no link can be
    made), the learner's attncore a sandbox would give (library_overlays): the same
    library for a worker without a sandbox, whose path starts with folder. It keeps
    honest code honest; code that runs there can still read the files the links point to."""
    overlays = library_overlays(kept)

    def build(source, target, prefix):
        target.mkdir()
        for entry in sorted(source.iterdir()):
            path, place = prefix + entry.name, target / entry.name
            if path in overlays and entry.is_dir():
                place.mkdir()
                if overlays[path]:
                    _link(overlays[path], place / "__init__.py")
            elif path in overlays:
                _link(overlays[path], place)
            elif any(other.startswith(f"{path}/") for other in overlays):
                build(entry, place, f"{path}/")
            else:
                _link(entry, place)

    build(Path(attncore.__file__).resolve().parent, Path(folder) / "attncore", "")


def _link(source, place):
    """place as a link to source, or a copy where links cannot be made (Windows without
    the right to make them)."""
    try:
        os.symlink(source, place)
    except OSError:
        if os.path.isdir(source):
            shutil.copytree(source, place, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, place)


def _environment(n_sites):
    path = [LIBRARY, *(f"{SITE}/{index}" for index in range(n_sites))]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8",
           "PYTHONPATH": os.pathsep.join(path), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{HOME}/.matplotlib",
           "NUMBA_CACHE_DIR": f"{HOME}/.numba", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    env.update({name: os.environ[name] for name in PASSED_THROUGH if name in os.environ})
    return env
