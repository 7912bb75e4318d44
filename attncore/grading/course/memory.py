"""The peak memory of one graded call, measured by the grader from outside the sandbox.

Two ways, in this order; the figure the worker could report is never used for a grade:

- the sandbox's control group (course.cgroups): the peak of every process of the sandbox,
  with its tmpfs files, since the call began;
- the worker process itself, from /proc (its high-water mark, reset with clear_refs), and
  only when the worker is, at the start and at the end of the call, the sandbox's one
  process, alive (not a zombie thread-group leader, which has no memory figures) and
  under the seccomp filter that refuses new processes (course.seccomp): then no other
  process can hold memory for the call.

When neither holds, peak() is None and why says why: the case fails as unmeasured.
"""
from collections.abc import Callable

from . import seccomp
from .cgroups import Group


class CallMemory:
    """Measures the peak of one call at a time (start(), then peak())."""

    def __init__(self, pid: int | None, group: Group | None,
                 others: Callable[[], list[int]] = list) -> None:
        self.pid, self.group, self.others = pid, group, others
        self.baseline, self.how, self.why = None, None, ""

    def start(self) -> bool:
        """Begin measuring; False (and why) when no measurement can be made."""
        self.how, self.why = None, ""
        if self.group is not None and self.group.start_peak():
            self.baseline, self.how = self.group.usage(), "group"
            if self.baseline is not None:
                return True
        problem = self._process_problem()
        if problem is None:
            try:
                with open(f"/proc/{self.pid}/clear_refs", "w") as clear:
                    clear.write("5")
                self.baseline, self.how = self._status("VmRSS"), "process"
                return True
            except (OSError, ValueError) as error:
                problem = f"its process's memory could not be read ({error})"
        self.why = problem
        return False

    def peak(self) -> int | None:
        """Peak bytes of the call above what was in use when it began, or None (why says why)."""
        try:
            if self.how == "group":
                peak = self.group.peak()
                return None if peak is None else max(0, peak - self.baseline)
            if self.how == "process":
                problem = self._process_problem()
                if problem is None:
                    return max(0, self._status("VmHWM") - self.baseline)
                self.why = problem
        except (OSError, ValueError) as error:
            self.why = f"its process's memory could not be read ({error})"
        return None

    def _process_problem(self):
        """Why the worker process alone cannot stand for the sandbox now, or None."""
        if self.pid is None:
            return "the grader does not know the process running your code"
        try:
            state = self._status("State", text=True)
        except (OSError, ValueError):
            return "the process running your code has no memory figures"
        if state.startswith("Z"):
            return "the process running your code had ended its main thread"
        filters = seccomp.filters_of(self.pid)
        if filters is None or filters < seccomp.FILTERS_SEALED:
            return "process creation is not refused in the process running your code here"
        if self.others():
            return "other processes were running beside the one running your code"
        return None

    def _status(self, field, text=False):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    value = line.split(":", 1)[1].strip()
                    return value if text else int(value.split()[0]) * 1024
        raise ValueError(f"no {field} in /proc/{self.pid}/status")
