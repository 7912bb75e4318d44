"""The memory of one graded call, measured by the grader from outside the sandbox.

What a call used is the larger of two figures, so that memory held before the call counts
whether the call reuses it or gives it back:

- touched: the pages of the worker's writable memory that the call read or wrote (its
  Referenced pages in /proc/PID/smaps, cleared through /proc/PID/clear_refs when the call
  starts), and the bytes of the sandbox's in-memory files (its tmpfs folders, and what it
  holds open) changed during the call: a buffer filled at load and reused counts;
- grown: the peak of the memory in use during the call above the lower of what was in
  use at its start and at its end: memory dropped when the call starts, then used for the
  call's own arrays, counts (taken again before the call ends, it is touched).

The peak and the memory in use are those of the sandbox's control group (course.cgroups:
every process of the sandbox, its tmpfs files included) where there is one, else the
worker process's own (VmHWM, reset when the call starts, and VmRSS) with what its
in-memory folders hold. Either way the grader measures only a worker that is alive (not
a zombie thread-group leader, which has no memory figures), alone in its sandbox, and
held to the seccomp filter that refuses new processes (course.seccomp). The figure the
worker could report is never used for a grade. Memory the kernel holds for the sandbox
outside its processes and files (a pipe's or a socket's buffers filled and drained) is
not seen.

When no measurement can be made, peak() is None and why says why: the case fails as
unmeasured.
"""
import os
import stat
import time
from collections.abc import Callable, Iterable

from . import seccomp
from .cgroups import Group

MAX_FILES = 10_000  # files and folders of the sandbox the grader looks at; more: unmeasured
CLOCK_SLACK_NS = 50_000_000  # a file's change time comes from a coarse clock: this early counts


class CallMemory:
    """Measures one call at a time (start(), then peak()).

    folders: the sandbox's in-memory folders as the grader reaches them
    (/proc/PID/root/...; none without a sandbox); grader_files: (st_dev, st_ino) of the
    files the grader lends the worker (the arena, the log), which the call's own do not
    include.
    """

    def __init__(self, pid: int | None, group: Group | None,
                 others: Callable[[], list[int]] = list, folders: Iterable[str] = (),
                 grader_files: Iterable[tuple[int, int]] = ()) -> None:
        self.pid, self.group, self.others = pid, group, others
        self.folders, self.grader_files = list(folders), set(grader_files)
        self.how, self.why = None, ""
        self.at_start, self.files_at_start, self.since = 0, 0, 0

    def start(self) -> bool:
        """Begin measuring; False (and why) when no measurement can be made."""
        self.why = ""
        self.how = "group" if self.group is not None and self.group.start_peak() else "process"
        problem = self._problem()
        if problem is None:
            try:
                self._clear_refs("1")  # every page's Referenced bit
                if self.how == "process":
                    self._clear_refs("5")  # the high-water mark, VmHWM
                self.since = time.time_ns() - CLOCK_SLACK_NS
                self.files_at_start = self._files_held()
                self.at_start = self._in_use()
                return True
            except (OSError, ValueError) as error:
                problem = f"its memory could not be read ({error})"
        self.why = problem
        return False

    def peak(self) -> int | None:
        """Bytes the call used (the larger of what it touched and what it grew), or None
        (why says why)."""
        try:
            problem = self._problem()
            if problem is None:
                touched = self._referenced() + self._files_changed()
                grown = self._peak() - min(self.at_start, self._in_use())
                return max(touched, grown, 0)
            self.why = problem
        except (OSError, ValueError) as error:
            self.why = f"its memory could not be read ({error})"
        return None

    def _problem(self):
        """Why the worker cannot be measured now, or None."""
        if self.pid is None:
            return "the grader does not know the process running your code"
        try:
            state = self._status("State", text=True)
        except (OSError, ValueError):
            return "the process running your code has no memory figures"
        if state.startswith("Z"):
            return "the process running your code had ended its main thread"
        if seccomp.unfiltered(self.pid):
            return "process creation is not refused in the process running your code here"
        if self.others():
            return "other processes were running beside the one running your code"
        return None

    def _in_use(self):
        if self.how == "group":
            return _known(self.group.usage(), "its control group's memory")
        return self._status("VmRSS") + self._files_held()

    def _peak(self):
        if self.how == "group":
            return _known(self.group.peak(), "its control group's peak")
        return self._status("VmHWM") + max(self.files_at_start, self._files_held())

    def _clear_refs(self, what):
        with open(f"/proc/{self.pid}/clear_refs", "w") as clear:
            clear.write(what)

    def _referenced(self):
        """Bytes of the worker's writable mappings referenced since the refs were cleared."""
        total, writable = 0, False
        with open(f"/proc/{self.pid}/smaps") as smaps:
            for line in smaps:
                if line[:1] in "0123456789abcdef":  # a mapping: address range, permissions, ...
                    writable = line.split()[1][1] == "w"
                elif writable and line.startswith("Referenced:"):
                    total += int(line.split()[1]) * 1024
        return total

    def _files_held(self):
        """Bytes the sandbox's in-memory folders hold."""
        total = 0
        for folder in self.folders:
            usage = os.statvfs(folder)
            total += (usage.f_blocks - usage.f_bfree) * usage.f_frsize
        return total

    def _files_changed(self):
        """Bytes of the sandbox's files (in its folders, or open in the worker) changed since
        the call started: their change time, which no code in the sandbox can set back."""
        if not self.folders:
            return 0
        # (path, follow): an open file through its descriptor, a file of a folder as it is
        # (a link a learner made is not followed: it would resolve in the grader's files)
        paths = [(f"/proc/{self.pid}/fd/{fd}", True) for fd in os.listdir(f"/proc/{self.pid}/fd")]
        entries = 0
        for folder in self.folders:
            for parent, folders, names in os.walk(folder):
                paths += [(os.path.join(parent, name), False) for name in names]
                entries += len(folders) + len(names)
                if entries > MAX_FILES:
                    raise ValueError(f"more than {MAX_FILES} files in its sandbox")
        seen, total = set(self.grader_files), 0
        for path, follow in paths:
            try:
                info = os.stat(path, follow_symlinks=follow)
            except OSError:  # gone since it was listed
                continue
            if stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                total += info.st_blocks * 512 if info.st_ctime_ns >= self.since else 0
        return total

    def _status(self, field, text=False):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    value = line.split(":", 1)[1].strip()
                    return value if text else int(value.split()[0]) * 1024
        raise ValueError(f"no {field} in /proc/{self.pid}/status")


def _known(value, what):
    if value is None:
        raise ValueError(f"{what} could not be read")
    return value
