"""A control group per sandbox: caps on its memory and processes, and the peak of its memory.

Every process of a sandbox lives in its group, whatever it forks, so the group's peak is
the memory of the whole sandbox (children, tmpfs files, /dev/shm included) and its caps
bind whoever the grader runs as (the kernel does not hold root to RLIMIT_NPROC). Where the
machine offers one, Group.create() makes it:

- cgroup v1 (a memory and a pids hierarchy, writable: the grader is root): a child of the
  grader's own group in each; the peak is memory.max_usage_in_bytes, reset per call;
- cgroup v2: a child of ATTNCORE_CGROUP (a folder of the unified hierarchy delegated to the
  grader, with memory and pids in its cgroup.subtree_control), else of the grader's own
  group when that delegates them; the peak is memory.peak, reset per call (Linux 6.12 and
  later; before that no per-call peak is read from it and the grader measures the worker
  process instead, see course.memory).

Where there is none (a non-root grader without a delegated folder), create() returns None
and why_not() says why. The groups are removed when their sandbox ends.
"""
import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

DELEGATED = "ATTNCORE_CGROUP"  # environment: a cgroup v2 folder the grader may make groups in
_COUNTER = itertools.count()


class Group:
    """The group(s) of one sandbox: one folder per hierarchy (v1: memory and pids; v2: one)."""

    def __init__(self, folders: list[Path], version: int, memory_bytes: int, tasks: int) -> None:
        self.folders, self.version = folders, version
        self.memory_bytes, self.tasks = memory_bytes, tasks
        self._peak_file = None

    @classmethod
    def create(cls, memory_bytes: int, tasks: int) -> "Group | None":
        """A new group capped at memory_bytes and tasks processes and threads, or None."""
        made = []
        try:
            parents = _v1_parents() or _v2_parent()
            if parents is None:
                return None
            version = 1 if len(parents) == 2 else 2
            name = f"attncore-{os.getpid()}-{next(_COUNTER)}"
            for parent in parents:
                folder = parent / name
                folder.mkdir()
                made.append(folder)
            group = cls(made, version, memory_bytes, tasks)
            group._limit()
            return group
        except OSError:
            for folder in made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            return None

    def add(self, pid: int) -> None:
        """Move process pid (all its threads) into the group."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def start_peak(self) -> bool:
        """Start measuring the group's peak memory from now; False when this kernel cannot."""
        if self.version == 1:
            return _write(self._memory / "memory.max_usage_in_bytes", "0")
        self._close_peak()
        try:  # Linux 6.12+: writing to memory.peak resets the peak seen through this fd
            self._peak_file = open(self._memory / "memory.peak", "r+")
            self._peak_file.write("reset\n")
            self._peak_file.flush()
        except OSError:
            self._close_peak()
            return False
        return True

    def usage(self) -> int | None:
        """Bytes the group's processes use now."""
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        return _read_int(self._memory / name)

    def peak(self) -> int | None:
        """Peak bytes since start_peak(), or None."""
        if self.version == 1:
            return _read_int(self._memory / "memory.max_usage_in_bytes")
        if self._peak_file is None:
            return None
        try:
            self._peak_file.seek(0)
            return int(self._peak_file.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for using more than its cap."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = (self._memory / name).read_text()
        except OSError:
            return False
        fields = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return int(fields.get("oom_kill", "0")) > 0

    def processes(self) -> list[int]:
        """The PIDs in the group."""
        try:
            return [int(pid) for pid in (self.folders[-1] / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def close(self) -> None:
        """Kill what is left in the group and remove it."""
        self._close_peak()
        for _ in range(100):
            for pid in self.processes():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                for folder in self.folders:
                    if folder.exists():
                        folder.rmdir()
                return
            time.sleep(0.02)

    @property
    def _memory(self):
        return self.folders[0]

    def _limit(self):
        memory, tasks = str(self.memory_bytes), str(self.tasks)
        if self.version == 1:
            (self._memory / "memory.limit_in_bytes").write_text(memory)
            _write(self._memory / "memory.memsw.limit_in_bytes", memory)  # no swap past it
            (self.folders[1] / "pids.max").write_text(tasks)
        else:
            (self._memory / "memory.max").write_text(memory)
            _write(self._memory / "memory.swap.max", "0")
            (self._memory / "pids.max").write_text(tasks)

    def _close_peak(self):
        if self._peak_file is not None:
            with contextlib.suppress(OSError):
                self._peak_file.close()
            self._peak_file = None


def why_not() -> str | None:
    """None when Group.create() can make a group here, else why not."""
    group = Group.create(1 << 30, 64)
    if group is not None:
        group.close()
        return None
    if not os.path.exists("/proc/self/cgroup"):
        return "this system has no control groups"
    return ("no control group could be made (cgroup v1 needs the grader to be root; cgroup v2 "
            f"a folder delegated to the grader, named by {DELEGATED}, with memory and pids "
            "controllers)")


def _v1_parents():
    """[memory folder, pids folder]: the grader's own v1 groups, or None."""
    mounts, own = _mounts(), _own_groups()
    found = []
    for controller in ("memory", "pids"):
        mount = mounts.get(controller)
        if mount is None or controller not in own:
            return None
        found.append(Path(mount) / own[controller].lstrip("/"))
    return found


def _v2_parent():
    """[the folder new groups go in] of the unified hierarchy, or None."""
    root = _mounts().get("")
    candidates = [os.environ.get(DELEGATED)]
    if root is not None and "" in _own_groups():
        candidates.append(str(Path(root) / _own_groups()[""].lstrip("/")))
    for candidate in filter(None, candidates):
        folder = Path(candidate)
        try:
            delegated = set((folder / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if {"memory", "pids"} <= delegated and os.access(folder, os.W_OK):
            return [folder]
    return None


def _mounts():
    """{controller: mount point} of the v1 hierarchies, and "" for the unified (v2) one."""
    found = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split(" - ")
        if len(fields) != 2:
            continue
        mount_point, (kind, _, options) = fields[0].split()[4], fields[1].split()[:3]
        if kind == "cgroup2":
            found.setdefault("", mount_point)
        elif kind == "cgroup":
            for option in options.split(","):
                found.setdefault(option, mount_point)
    return found


def _own_groups():
    """{controller: this process's group path} (v1), and "" for the unified hierarchy."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _write(path, text):
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def _read_int(path):
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
