"""The worker process that runs a notebook's code, and every wait on it, with a deadline.

A Worker starts course.worker (in a sandbox, or not), sends it requests and waits for its
replies. Nothing it does can stop the grader: a request is written without blocking,
under the same deadline as the reply (a worker that stops reading its pipe is stopped
when the deadline passes, however large the request); a reply is awaited at most the
time limit, or what is left of the notebook's Budget, whichever is less. No call is made
before the grader has read from /proc that every thread of the worker carries the
seccomp filter that refuses new processes (course.seccomp). What it replies is
validated here: one reply per request (a message no request awaits stops it), values
through course.wire, arrays read back from the arena, memory measured from outside
(course.memory), notes bounded. Without a sandbox, the worker gets the sandbox's
attncore all the same (course.sandbox.library_copy).
"""
import contextlib
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..engine import Outcome
from ..observe import shorten
from . import sandbox as sandboxes
from . import seccomp, wire
from .arena import Arena
from .cgroups import Group
from .memory import CallMemory
from .verdict import MAX_TEXT

TIME_LIMIT = 30.0  # seconds for one cell to load or one call to return
START_LIMIT = 120.0  # seconds for a worker to start (import NumPy, IPython) before any cell
NOTEBOOK_SECONDS = 600.0  # seconds of grading one notebook may use, restarts included
RESTARTS = 5  # times one notebook's worker may be started again after it stopped
MAX_NOTES = 20  # notes kept from one reply, each at most observe.MAX_NOTE_CHARS long


class WorkerStopped(Exception):
    """The worker did not answer: it ran past the time limit or its process ended."""


class NotDefined(Exception):
    """The notebook's code does not define the function a test asks for."""


@dataclass
class Budget:
    """What grading one notebook may spend: seconds of wall-clock time from its start, and
    starts of its worker after the first."""

    seconds: float = NOTEBOOK_SECONDS
    restarts: int = RESTARTS
    started: float = field(default_factory=time.monotonic)
    restarted: int = 0  # times a start after the first was asked for (one more than allowed: spent)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def spent(self) -> str:
        """Why no more can be spent ("" while some can)."""
        if self.left() <= 0:
            return (f"this notebook used its whole grading time of {self.seconds:g} s (its cells "
                    f"and calls together), so the rest of it was not run")
        if self.restarted > self.restarts:
            most = "once" if self.restarts == 1 else f"{self.restarts} times"
            return (f"the process running this notebook's code stopped {self.restarted} times, "
                    f"and it is not started again more than {most}, so the rest of it was not run")
        return ""


class Worker:
    """One worker process (in a sandbox, or not), the pipes to it, and what the grader
    measures of it from outside."""

    def __init__(self, cwd: str | os.PathLike, time_limit: float, sandboxed: bool = False,
                 budget: Budget | None = None, library: frozenset[str] | None = None) -> None:
        """library: the attncore modules the worker keeps (course.allowed; None: all), in
        its sandbox or, without one, in a copy of links first on its path."""
        self.time_limit, self.sandboxed = time_limit, sandboxed
        self._library = None
        self.budget = budget or Budget()
        to_worker_read, self._to_worker = os.pipe()
        self._from_worker, from_worker_write = os.pipe()
        self._log = tempfile.TemporaryFile()
        self.arena = Arena.create()
        self.group = Group.create(sandboxes.MEMORY_BYTES, sandboxes.TASKS) if sandboxed else None
        argv = [sys.executable, "-m", "attncore.grading.course.worker",
                str(to_worker_read), str(from_worker_write)]
        ours = [to_worker_read, from_worker_write]  # the child's ends: closed here once it has them
        if sandboxed:
            info_read, info_write = os.pipe()
            command = sandboxes.command(argv[1:], info_fd=info_write, library=library)
            ours.append(info_write)
            options = {"cwd": "/", "env": {}, **sandboxes.launch_options()}
        else:
            command, info_read = argv, None
            path = [str(Path(__file__).resolve().parents[3]), os.environ.get("PYTHONPATH")]
            if library is not None:  # the sandbox's library (course.sandbox), before all
                self._library = tempfile.TemporaryDirectory(prefix="attncore-library-")
                sandboxes.library_copy(library, self._library.name)
                # -P: the notebook's folder comes last, so that no attncore there shadows it
                command = [sys.executable, "-P", *argv[1:]]
                path = [self._library.name, os.environ.get("PYTHONPATH"), os.path.abspath(cwd)]
            options = {"cwd": cwd, "start_new_session": True, "env": {
                **os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, path))}}
        if self.arena is not None:
            command += [str(self.arena.fd), str(self.arena.size)]
        shared = [] if self.arena is None else [self.arena.fd]
        try:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log,
                                            stderr=subprocess.STDOUT, pass_fds=ours + shared,
                                            **options)
        except BaseException:
            if self.group is not None:
                self.group.close()
            if self._library is not None:
                self._library.cleanup()
            raise
        for fd in ours:
            os.close(fd)
        self.pid = self.process.pid
        if info_read is not None:
            with os.fdopen(info_read) as info:
                self.pid = sandboxes.read_child_pid(info)
        os.set_blocking(self._to_worker, False)  # writes wait in poll(), with a deadline
        self._replies = queue.Queue()  # at most one reply and one sentinel (_read)
        self._sending = threading.Lock()  # held while a request is written
        self._awaited = True  # whether a frame would be a reply (under _sending): first, "ready"
        replies = os.fdopen(self._from_worker, "rb")
        threading.Thread(target=self._read, args=(replies,), daemon=True).start()
        self._ask(None, START_LIMIT)  # the worker says it is ready before any time limit runs
        self._enter_group()
        folders = [f"/proc/{self.pid}/root{folder}" for folder in sandboxes.IN_MEMORY] \
            if sandboxed and self.pid is not None else []
        lent = [os.fstat(fd) for fd in (self._log.fileno(), *shared)]
        self.memory = CallMemory(self.pid, self.group, self._others, folders,
                                 [(info.st_dev, info.st_ino) for info in lent])

    def exec(self, name: str, source: str) -> dict:
        return self._ask({"op": "exec", "name": name, "source": source})

    def seal(self, allowed: Iterable[str] | None, forbidden: Iterable[str]) -> dict:
        """From now on attncore's functions in the worker are tripped but for `allowed`
        (None: every public one), and `forbidden` in any case (course.worker): a second
        line, behind the library the sandbox leaves out (its reply is not believed)."""
        return self._ask({"op": "seal", "allowed": None if allowed is None else sorted(allowed),
                          "forbidden": sorted(forbidden)})

    def call(self, function: str, arguments: dict, measure_memory: bool,
             stand_ins: Sequence[dict] = ()) -> Outcome:
        """The Outcome of one call; NotDefined when the notebook has no such function.
        stand_ins: [{"name", "source", "entry"}] to replace the notebook's functions of
        those names during the call (course.worker). A worker whose threads do not all
        carry the seccomp filter is not called: the Outcome says so."""
        if why := seccomp.unfiltered(self.pid):
            return Outcome(stopped=f"the grader could not confirm that the process running "
                                  f"your code can start no other process ({why}), so the call "
                                  f"was not made")
        place = None
        if self.arena is not None:
            self.arena.start_call()
            place = self.arena.put
        arguments = {k: wire.encode(v, place) for k, v in arguments.items()}
        outside = measure_memory and self.memory.start()
        # Only where no grader could measure at all (no /proc: self-study off Linux, never a
        # sandbox) does the worker report its own figure.
        reported = measure_memory and not outside and not self.sandboxed and not os.path.isdir("/proc")
        request = {"op": "call", "function": function, "arguments": arguments,
                   "measure_memory": reported, "measured": outside, "stand_ins": list(stand_ins)}
        reply = self._ask(request)
        if isinstance(reply.get("missing"), str):
            raise NotDefined(shorten(reply["missing"]))
        try:
            raised = reply["raised"]
            peak = self.memory.peak() if outside else \
                int(reply["peak_bytes"]) if reported and reply["peak_bytes"] is not None else None
            unmeasured = (f"the grader could not measure the memory of this call: "
                          f"{self.memory.why or 'no way to measure it here'}",) \
                if measure_memory and peak is None else ()
            outcome = Outcome(
                returned=wire.decode(reply["returned"]),
                raised=None if raised is None else (str(raised[0])[:100], str(raised[1])[:MAX_TEXT]),
                arguments_after=self._arguments_after(request["arguments"], reply),
                peak_bytes=peak, notes=unmeasured + _bounded_notes(reply["notes"]),
                stood_in=_stood_in(reply.get("stood_in", []), stand_ins))
        except Exception:  # a reply the worker code did not write
            self.close()
            raise WorkerStopped("the process running your code sent a reply the grader "
                                "cannot read") from None
        return outcome

    def close(self) -> None:
        """Stop the worker and every process of its sandbox, and free what it held (a
        second call does nothing more)."""
        if self.process.poll() is None and self.sandboxed:
            self.process.kill()  # bwrap: the sandbox and every process in it die with it
        elif self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # the worker and what it started
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        if self.group is not None:
            self.group.close()
            self.group = None
        if self._to_worker is not None:
            os.close(self._to_worker)
            self._to_worker = None
        self._log.close()
        if self.arena is not None:
            self.arena.close()
            self.arena = None
        if self._library is not None:
            self._library.cleanup()
            self._library = None

    def _enter_group(self):
        """Move the sandbox (bwrap and the worker, before any learner code) into its group;
        without one, the caps are the worker's own limits (course.worker)."""
        if self.group is None:
            return
        try:
            for pid in (self.process.pid, self.pid):
                self.group.add(pid)
        except (OSError, TypeError):
            self.group.close()
            self.group = None

    def _others(self):
        """Every live process of the worker's sandbox but the worker (and bwrap, which
        started it): the members of its control group, else of its PID namespace; without
        a sandbox, of its session (sandbox.alive: a leader whose threads run is live)."""
        if self.pid is None:
            return []
        members = self.group.processes() if self.group is not None else \
            sandboxes.namespace_members(self.pid) if self.sandboxed else _session_members(self.pid)
        return [pid for pid in members if pid not in (self.pid, self.process.pid)
                and sandboxes.alive(pid)]

    def _arguments_after(self, sent, reply):
        """The arguments as the call left them: read from the arena where they were lent
        there, as the worker says only where no arena exists. A shape set in place
        (x.shape = ...) changes the learner's view, not the arena's bytes: the shape the
        worker reports after the call is taken where it differs (None where no array of
        these bytes has it), so that the change is caught like any other."""
        if self.arena is None:
            return dict(wire.decode(reply["arguments_after"]))
        after = {k: wire.decode(v, self.arena.read) for k, v in sent.items()}
        shapes = reply.get("shapes_after")
        for name, shape in (shapes.items() if isinstance(shapes, dict) else ()):
            array = after.get(name)
            if isinstance(array, np.ndarray) and isinstance(shape, list) and tuple(shape) != array.shape:
                fits = all(isinstance(n, int) and n >= 0 for n in shape) and \
                    int(np.prod(shape, dtype=object)) == array.size
                after[name] = array.reshape(shape) if fits else None
        return after

    def _ask(self, request, time_limit=None):
        limit = self.time_limit if time_limit is None else time_limit
        seconds = min(limit, max(0.0, self.budget.left()))
        deadline = time.monotonic() + seconds
        late = (f"no answer within {seconds:g} s, so it was stopped" if seconds == limit
                else self.budget.spent() or "this notebook's grading time ran out, so it was stopped")
        try:
            if request is not None:
                with self._sending:
                    self._send(wire.frame(request), deadline)
                    self._awaited = True
            reply = self._replies.get(timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self.close()
            raise WorkerStopped(f"it stopped reading what the grader sent it; {late}") from None
        except queue.Empty:
            self.close()
            raise WorkerStopped(late) from None
        except OSError:  # the pipe closed: the process ended
            reply = None
        sandboxes.end_processes(self._others)
        if reply is _UNASKED:
            self.close()
            raise WorkerStopped("the process running your code sent the grader a message it "
                                "did not ask for, so it was stopped")
        if not isinstance(reply, dict):
            try:  # the pipe closed because the process ended, or it sent what is no reply
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.close()
                raise WorkerStopped("the process running your code sent a reply the grader "
                                    "cannot read, so it was stopped") from None
            ended = self._ended()
            self.close()
            raise WorkerStopped(ended)
        return reply

    def _send(self, data, deadline):
        """Write data to the worker by the deadline (TimeoutError if it stops reading)."""
        pending = memoryview(data)
        poller = select.poll()
        poller.register(self._to_worker, select.POLLOUT)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                raise TimeoutError
            with contextlib.suppress(BlockingIOError):
                pending = pending[os.write(self._to_worker, pending):]

    def _read(self, replies):
        """Move the reply to each request into the queue, then, once the worker's end of the
        pipe closes or it sends what is no frame, None. A frame is a reply only when it starts
        while a request awaits one (a request counts as awaiting once all of it is written,
        so a reply is never judged before its request): one that starts when none does puts
        _UNASKED and ends the reading before its body is read, so that no flood of frames
        can fill the grader's memory (whatever the worker sends, this thread never dies
        silently)."""
        try:
            while replies.peek(1):  # a frame has started (nothing: the pipe closed)
                with self._sending:  # waits while a request is being written
                    awaited, self._awaited = self._awaited, False
                if not awaited:
                    self._replies.put(_UNASKED)
                    return
                if (reply := wire.receive(replies)) is None:
                    break
                self._replies.put(reply)
        except BaseException:  # a hostile frame (too large, too deep, not JSON) ends it
            pass
        self._replies.put(None)

    def _ended(self):
        code = self.process.returncode
        self._log.seek(0)
        last = self._log.read(1 << 16).decode(errors="replace").strip().splitlines()[-1:]
        said = f"; its last output: {last[0][:200]!r}" if last else ""
        if self.group is not None and self.group.out_of_memory():
            said = (f"; it used more than the {sandboxes.MEMORY_BYTES / 2**30:g} GiB of memory "
                    f"its sandbox may use{said}")
        return f"the process running your code ended (exit code {code}){said}"


_UNASKED = object()  # what _read queues for a frame no request awaited


def _session_members(leader):
    """The PIDs of every process in the session that process leader leads."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rpartition(")")[2].split()[3]) == leader:
                        members.append(int(entry))
    return members


def _bounded_notes(notes):
    """At most MAX_NOTES distinct notes, each shortened: a reply cannot flood the feedback."""
    if not isinstance(notes, list):
        raise TypeError("notes must be a list")
    kept = {}
    for note in notes[:MAX_NOTES * 4]:
        kept.setdefault(shorten(note), None)
        if len(kept) == MAX_NOTES:
            break
    return tuple(kept)


def _stood_in(names, stand_ins):
    """The stand-ins the worker says were used, of those it was sent (it says no more)."""
    if not isinstance(names, list):
        raise TypeError("stood_in must be a list")
    sent = {stand_in["name"] for stand_in in stand_ins}
    return tuple(sorted(sent.intersection(name for name in names if isinstance(name, str))))
