"""Grade a notebook out of process: the learner's code runs in a worker, the grading here.

grade_notebook(cells) starts a worker (course.worker), runs every code cell of the
notebook in it except the graded test cells, then runs the suite that each test cell
names (by its grade id, "function-suite") through the engine, with every call of the
learner's function sent to the worker. The worker never holds an expected value; a cell
or a call that runs too long or ends the process stops only that cell or that suite:
the worker is started again and the rest of the notebook is graded as usual.

The worker runs in a sandbox (course.sandbox) where one can start, and nothing it sends
is believed beyond the values it returns, which are validated here: array arguments
are lent through an arena and read back by the grader, memory is measured from outside
(the worker's peak resident memory in /proc), notes are bounded, and the hidden cases
are drawn from a seed picked at grading time.
"""
import contextlib
import inspect
import os
import queue
import secrets
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

from ..engine import ASSIGNMENTS, SPECS, Outcome, run_suite
from ..engine.feedback import message
from ..observe import shorten
from . import sandbox as sandboxes, wire
from .arena import Arena
from .layout import parse_grade_id

TIME_LIMIT = 30.0  # seconds for one cell to load or one call to return
START_LIMIT = 120.0  # seconds for a worker to start (import NumPy, IPython) before any cell
MAX_NOTES = 20  # notes kept from one reply, each at most observe.MAX_NOTE_CHARS long
MAX_TEXT = 4000  # characters of one cell's feedback that reach the notebook
SANDBOX_CHOICES = ("bubblewrap", "none", "auto")
ASSIGNMENT_OF = {name: names for names in ASSIGNMENTS.values() for name in names}


@dataclass(frozen=True)
class CellVerdict:
    """The grade of one test cell: passed or not, the feedback, and notes that cost nothing.

    engine.Verdict (passed, message, notes) is what run_suite knows; this adds what only
    the course knows (the sandbox and the seed, the cell's load problem, the stand-ins)
    and renders the cell's text, so the engine stays free of cells and workers.
    """

    passed: bool
    message: str
    notes: tuple = ()
    how: str = ""  # how it was graded: sandboxed or not, the seed of the hidden cases
    cases: int = 0  # how many cases the suite that was run holds (0: not known)
    suite: str = ""  # the suite that was run
    load_problem: str = ""  # what the function's own cell did when loaded ("raised ...")
    stood_in: tuple = ()  # the wrong functions it calls, replaced by references when graded again
    misconception: str = ""  # what the feedback's first line names (engine.Verdict.misconception)

    def text(self, how=True):
        """What the learner reads in the cell's output (at most MAX_TEXT characters); how:
        end with how it was graded."""
        head = self.message if not self.passed else "\n".join(
            filter(None, [self.passed_line(), self.message]))
        lines = [head, *(f"Note: {note}" for note in self.notes),
                 *([f"({self.how})"] if how and self.how else [])]
        text = "\n".join(lines)
        return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 40] + "\n... (feedback cut short)"

    def passed_line(self):
        """One line: "passed: 5 hidden cases (suite extreme)", or "passed" when the suite is
        not known."""
        if not self.cases:
            return "passed"
        from ..engine.probe import VISIBLE_SUITES

        kind = "visible" if self.suite in VISIBLE_SUITES else "hidden"
        return (f"passed: {self.cases} {kind} case{'s' if self.cases != 1 else ''} "
                f"(suite {self.suite})")


class WorkerStopped(Exception):
    """The worker did not answer: it ran past the time limit or its process ended."""


class NotDefined(Exception):
    """The notebook's code does not define the function a test asks for."""


def test_cells(cells):
    """[(grade_id, cell)] of the graded code cells that are tests, not solutions."""
    return [(cell["metadata"]["nbgrader"]["grade_id"], cell) for cell in cells
            if cell["cell_type"] == "code" and _nbgrader(cell).get("grade")
            and not _nbgrader(cell).get("solution")]


def grade_notebook(cells, cwd=".", time_limit=TIME_LIMIT, sandbox="auto", seed=None):
    """{grade_id: CellVerdict} for every test cell of a notebook.

    cells: the notebook's cells as dicts (nbformat nodes work) with cell_type, source and
    metadata; cwd: the folder the notebook's code runs in when it is not sandboxed (a
    sandbox has a private empty folder); sandbox: "bubblewrap" (raise SandboxUnavailable
    where none can start), "none", or "auto" (bubblewrap where it can start); seed: the
    draw of the hidden cases (None: a fresh one).
    """
    tests = test_cells(cells)
    tested = {id(cell) for _, cell in tests}
    code = [(_nbgrader(cell).get("grade_id") or f"{index + 1}", _source(cell))
            for index, cell in enumerate(cells)
            if cell["cell_type"] == "code" and id(cell) not in tested]
    seed = secrets.randbelow(2 ** 31) if seed is None else int(seed)
    graded = {parsed[0] for parsed in map(parse_grade_id, (gid for gid, _ in tests))
              if parsed and parsed[0] in SPECS}
    forbidden = sorted(set().union(*(SPECS[function].forbidden for function in graded)))
    with Session(code, cwd, time_limit, resolve_sandbox(sandbox), seed, forbidden) as session:
        graded = {grade_id: session.grade(grade_id) for grade_id in sorted(
            (grade_id for grade_id, _ in tests), key=_notebook_order)}
        return {grade_id: graded[grade_id] for grade_id, _ in tests}


def _notebook_order(grade_id):
    """Where a test cell belongs: its function's place in the assignment, then its
    suite's; cells of no known function last. Graded in this order whatever order a
    submission has its cells in."""
    parsed = parse_grade_id(grade_id)
    if parsed is None or parsed[0] not in SPECS:
        return (len(SPECS), 0)
    function, suite = parsed
    suites = list(SPECS[function].suites)
    return (ASSIGNMENT_OF[function].index(function),
            suites.index(suite) if suite in suites else len(suites))


def resolve_sandbox(choice):
    """True to sandbox, False not to, for a choice of SANDBOX_CHOICES."""
    if choice not in SANDBOX_CHOICES:
        raise ValueError(f"sandbox must be one of {SANDBOX_CHOICES}, got {choice!r}")
    if choice == "none":
        return False
    why_not = sandboxes.available()
    if why_not and choice == "bubblewrap":
        raise sandboxes.SandboxUnavailable(
            f"cannot grade in a sandbox: {why_not}. Install bubblewrap, or grade without "
            f"one, knowing that a submission's code can then reach the grader's files "
            f"(nbgrader: --GradeOutOfProcess.sandbox=none).")
    return not why_not


class Session:
    """A worker with the notebook's code loaded, restarted whenever it stops."""

    def __init__(self, code, cwd, time_limit, sandboxed=False, seed=None, forbidden=()):
        self.code, self.cwd, self.time_limit = code, cwd, time_limit
        self.sandboxed, self.seed = sandboxed, seed
        self.forbidden = forbidden  # what the notebook's exercises forbid, all of it, always
        self.load_problems = {}  # cell name -> what went wrong while it ran
        self.skip = set()  # cells that stopped the worker: never run again
        self.roots = {}  # graded function -> the functions whose mistakes fail it (_roots)
        self.worker = None
        self.how = (("graded in a bubblewrap sandbox" if sandboxed else
                     "not sandboxed: fine for self-study, not for a grade that counts")
                    + ("" if seed is None else f"; hidden cases drawn with seed {seed}"))

    def __enter__(self):
        self._start()
        return self

    def __exit__(self, *exc):
        self.worker.close()

    def grade(self, grade_id):
        """The verdict of one test cell."""
        parsed = parse_grade_id(grade_id)
        if parsed is None or parsed[0] not in SPECS or parsed[1] not in SPECS[parsed[0]].suites:
            return CellVerdict(False, f"{grade_id}: no suite of that name is known to "
                                      f"attncore.grading, so this test was not run and gives "
                                      f"no points.")
        function, suite = parsed
        spec = SPECS[function]
        try:
            verdict, missing, _ = self._run(function, suite)
            if not verdict.passed and not missing and (wrong := self._wrong_callees(function)):
                again, missing, used = self._run(function, suite, wrong)
                if used:
                    return self._graded_again(function, suite, again, used)
        except Exception as error:  # what came back broke a comparison: it cannot pass
            return CellVerdict(False, message(
                function, "a result the grader cannot compare", detail=f"Comparing it with "
                f"the expected result raised {type(error).__name__}: {shorten(error)}",
                show_values=False, fix="return a NumPy array of numbers (float or bool, as "
                                       "the exercise asks), not an object of your own."),
                how=self.how)
        if missing:
            return CellVerdict(False, self._not_defined(function, missing[0]), how=self.how,
                               load_problem=self.load_problems.get(function, ""))
        return CellVerdict(verdict.passed, verdict.message, self._notes(function, verdict),
                           self.how, cases=len(spec.suites[suite]), suite=suite,
                           load_problem=self.load_problems.get(function, ""),
                           misconception=verdict.misconception)

    def _run(self, function, suite, stand_ins=()):
        """(Verdict, [why the function is not defined], {stand-ins the calls used}) of one
        suite, with the named graded functions replaced by their stand-ins."""
        missing, used = [], set()
        sent = [{"name": name, "source": _source_of(SPECS[name].stand_in),
                 "entry": SPECS[name].stand_in.__name__} for name in stand_ins]

        def call(arguments, measure_memory):
            try:
                outcome = self.worker.call(function, arguments, self.forbidden, measure_memory,
                                           sent)
            except WorkerStopped as stopped:
                self._start()
                return Outcome(stopped=str(stopped))
            except NotDefined as reason:
                missing.append(str(reason))
                return Outcome(stopped=str(reason))
            used.update(outcome.stood_in)
            return outcome

        return run_suite(SPECS[function], suite, call, self.seed), missing, used

    def _passes(self, function, suite, stand_ins=()):
        """(passed, stand-ins used) of one suite; a result that breaks the comparison fails."""
        try:
            verdict, missing, used = self._run(function, suite, stand_ins)
        except Exception:
            return False, set()
        return verdict.passed and not missing, used

    def _wrong_callees(self, function):
        """The graded functions before function in its notebook that have a stand-in and
        fail one of their own suites (each run once, with this session's cases). Only
        those before: their cells are graded first (grade_notebook), so no stand-in is
        in the worker before every cell of its function has been graded."""
        earlier = ASSIGNMENT_OF[function][:ASSIGNMENT_OF[function].index(function)]
        return [name for name in earlier if SPECS[name].stand_in and self._roots(name)]

    def _roots(self, function):
        """The graded functions whose own mistakes make function fail its suites: () when
        it passes them, (function,) when the mistake is its own, else those of the wrong
        functions before it in the notebook that it calls (found by grading it again with
        their stand-ins in their place)."""
        if function not in self.roots:
            failed = [suite for suite in SPECS[function].suites
                      if not self._passes(function, suite)[0]]
            wrong = self._wrong_callees(function) if failed else []
            again = [self._passes(function, suite, wrong) for suite in failed if wrong]
            used = set().union(*(stood_in for _, stood_in in again))
            rescued = again and used and all(passed for passed, _ in again)
            self.roots[function] = (tuple(sorted(set().union(*map(self._roots, used))))
                                    if rescued else (function,) if failed else ())
        return self.roots[function]

    def _graded_again(self, function, suite, verdict, used):
        """The verdict of a suite run again with the reference of the wrong functions it
        calls: passed, their mistakes alone failed it; failed, the mistake is its own."""
        stood_in = " and ".join(sorted(used))
        roots = sorted(set().union(*(self._roots(name) for name in used)))
        wrong, one = " and ".join(roots), len(roots) == 1
        if verdict.passed:
            return CellVerdict(
                True, f"Your {function} is right: it failed only because your {wrong} "
                f"{'is' if one else 'are'} wrong ({'its' if one else 'their'} own tests say "
                f"how), so fix that first. With the reference {stood_in} in place of yours, "
                f"it passes.", self._notes(function, verdict), self.how,
                cases=len(SPECS[function].suites[suite]), suite=suite,
                load_problem=self.load_problems.get(function, ""), stood_in=tuple(sorted(used)))
        note = (f"graded with the reference {stood_in} in place of yours (your {wrong} "
                f"{'fails its' if one else 'fail their'} own tests), so the mistake above is "
                f"in {function} itself")
        return CellVerdict(False, verdict.message, (note, *self._notes(function, verdict)),
                           self.how, load_problem=self.load_problems.get(function, ""),
                           stood_in=tuple(sorted(used)), misconception=verdict.misconception)

    def _notes(self, function, verdict):
        if function in self.load_problems:
            return (f"while loading, your cell {self.load_problems[function]}", *verdict.notes)
        return verdict.notes

    def _not_defined(self, function, what):
        problem = self.load_problems.get(function)
        why = f" Its cell {as_sentence(problem)}" if problem else ""
        return message(function, f"{what} after the notebook's cells ran.{why}", show_values=False,
                       fix=f"make the cell with `def {function}(...)` run without errors "
                           f"(restart the kernel and run all cells to see).")

    def _start(self):
        """Start a worker and run every cell that has not stopped one before."""
        if self.worker is not None:
            self.worker.close()
        self.worker = Worker(self.cwd, self.time_limit, self.sandboxed)
        for name, source in self.code:
            if name in self.skip:
                continue
            try:
                reply = self.worker.exec(name, source)
            except WorkerStopped as stopped:
                self.load_problems[name] = f"did not finish: {stopped}"
                self.skip.add(name)
                return self._start()
            if reply.get("raised"):
                self.load_problems[name] = f"raised {_bounded_lines(reply['raised'])}"


class Worker:
    """One worker process (in a sandbox, or not), the pipes to it, and what the grader
    measures of it from outside."""

    def __init__(self, cwd, time_limit, sandboxed=False):
        self.time_limit, self.sandboxed = time_limit, sandboxed
        to_worker_read, self._to_worker = os.pipe()
        self._from_worker, from_worker_write = os.pipe()
        self._log = tempfile.TemporaryFile()
        self.arena = Arena.create()
        argv = [sys.executable, "-m", "attncore.grading.course.worker",
                str(to_worker_read), str(from_worker_write)]
        ours = [to_worker_read, from_worker_write]  # the child's ends: closed here once it has them
        if sandboxed:
            info_read, info_write = os.pipe()
            command = sandboxes.command(argv[1:], info_fd=info_write)
            ours.append(info_write)
            options = {"cwd": "/", "env": {}}
        else:
            command, info_read = argv, None
            package_root = str(Path(__file__).resolve().parents[3])
            options = {"cwd": cwd, "start_new_session": True, "env": {
                **os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [package_root,
                                                            os.environ.get("PYTHONPATH")]))}}
        if self.arena is not None:
            command += [str(self.arena.fd), str(self.arena.size)]
        shared = [] if self.arena is None else [self.arena.fd]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT, pass_fds=ours + shared,
                                        **options)
        for fd in ours:
            os.close(fd)
        self.pid = self.process.pid
        if info_read is not None:
            with os.fdopen(info_read) as info:
                self.pid = sandboxes.read_child_pid(info)
        self.memory = ResidentMemory(self.pid)
        self._requests = os.fdopen(self._to_worker, "wb")
        self._replies = queue.Queue()
        replies = os.fdopen(self._from_worker, "rb")
        threading.Thread(target=self._read, args=(replies,), daemon=True).start()
        self._ask(None, START_LIMIT)  # the worker says it is ready before any time limit runs

    def exec(self, name, source):
        return self._ask({"op": "exec", "name": name, "source": source})

    def call(self, function, arguments, forbidden, measure_memory, stand_ins=()):
        """The Outcome of one call; NotDefined when the notebook has no such function.
        stand_ins: [{"name", "source", "entry"}] to replace the notebook's functions of
        those names during the call (course.worker)."""
        place = None
        if self.arena is not None:
            self.arena.start_call()
            place = self.arena.put
        arguments = {k: wire.encode(v, place) for k, v in arguments.items()}
        # Measured from outside where /proc allows (the worker then runs no tracemalloc,
        # whose own tables would count); else as the worker reports it.
        outside = measure_memory and self.memory.start()
        request = {"op": "call", "function": function, "arguments": arguments,
                   "forbidden": list(forbidden), "measure_memory": measure_memory and not outside,
                   "stand_ins": list(stand_ins)}
        reply = self._ask(request)
        if isinstance(reply.get("missing"), str):
            raise NotDefined(shorten(reply["missing"]))
        try:
            raised = reply["raised"]
            outcome = Outcome(
                returned=wire.decode(reply["returned"]),
                raised=None if raised is None else (str(raised[0])[:100], str(raised[1])[:MAX_TEXT]),
                arguments_after=self._arguments_after(request["arguments"], reply),
                peak_bytes=self._peak(outside, reply) if measure_memory else None,
                notes=_bounded_notes(reply["notes"]),
                stood_in=_stood_in(reply.get("stood_in", []), stand_ins))
        except Exception:  # a reply the worker code did not write
            self.close()
            raise WorkerStopped("the process running your code sent a reply the grader "
                                "cannot read") from None
        return outcome

    def _arguments_after(self, sent, reply):
        """The arguments as the call left them: read from the arena where they were lent
        there, as the worker says only where no arena exists."""
        if self.arena is None:
            return dict(wire.decode(reply["arguments_after"]))
        return {k: wire.decode(v, self.arena.read) for k, v in sent.items()}

    def _peak(self, measured, reply):
        """Peak bytes of the call: measured here where /proc allows it, else as reported."""
        if measured:
            return self.memory.peak()
        return None if reply["peak_bytes"] is None else int(reply["peak_bytes"])

    def close(self):
        if self.process.poll() is None and self.sandboxed:
            self.process.kill()  # bwrap: the sandbox and every process in it die with it
        elif self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # the worker and what it started
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._requests.close()
        self._log.close()
        if self.arena is not None:
            self.arena.close()
            self.arena = None

    def _ask(self, request, time_limit=None):
        time_limit = self.time_limit if time_limit is None else time_limit
        try:
            if request is not None:
                wire.send(self._requests, request)
            reply = self._replies.get(timeout=time_limit)
        except (BrokenPipeError, OSError):
            reply = None
        except queue.Empty:
            self.close()
            raise WorkerStopped(f"no answer within {time_limit:g} s, so it was stopped") \
                from None
        if self.sandboxed and self.pid is not None:
            sandboxes.end_other_processes(self.pid)
        if not isinstance(reply, dict):
            try:  # the pipe closed because the process ended, or it sent what is no reply
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.close()
                raise WorkerStopped("the process running your code sent a reply the grader "
                                    "cannot read, so it was stopped") from None
            raise WorkerStopped(self._ended())
        return reply

    def _read(self, replies):
        """Move each reply into the queue; None once the worker's end of the pipe closes or
        it sends what is no frame (whatever it sends, this thread never dies silently)."""
        try:
            while (reply := wire.receive(replies)) is not None:
                self._replies.put(reply)
        except BaseException:  # a hostile frame (too large, too deep, not JSON) ends it
            pass
        self._replies.put(None)

    def _ended(self):
        code = self.process.returncode
        self._log.seek(0)
        last = self._log.read(1 << 16).decode(errors="replace").strip().splitlines()[-1:]
        said = f"; its last output: {last[0][:200]!r}" if last else ""
        return f"the process running your code ended (exit code {code}){said}"


class ResidentMemory:
    """The peak resident memory of a process during a call, read from /proc from outside.

    start() resets the process's high-water mark (clear_refs) and notes its resident size;
    peak() is the high-water mark since, less that size. The sandbox's /proc is read-only,
    so the code inside cannot reset the mark itself.
    """

    def __init__(self, pid):
        self.pid, self.baseline = pid, None

    def start(self):
        """True when the measurement could start (Linux, a process that is still there)."""
        if self.pid is None:
            return False
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as clear:
                clear.write("5")
            self.baseline = self._status("VmRSS")
        except (OSError, ValueError):
            return False
        return True

    def peak(self):
        try:
            return max(0, self._status("VmHWM") - self.baseline)
        except (OSError, ValueError, TypeError):
            return None

    def _status(self, field):
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise ValueError(f"no {field} in /proc/{self.pid}/status")


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


def _bounded_lines(text, most=4):
    """At most `most` lines of text, each shortened: what a cell raised when loaded."""
    return "\n".join(shorten(line) if index == 0 else "  " + shorten(line)
                     for index, line in enumerate(str(text).splitlines()[:most]))


def as_sentence(problem):
    """What a cell did when loaded, as a sentence: its first line ends with a full stop,
    the cell's lines it went through follow."""
    head, *lines = problem.split("\n")
    return "\n".join([head + ".", *lines])


def _stood_in(names, stand_ins):
    """The stand-ins the worker says were used, of those it was sent (it says no more)."""
    if not isinstance(names, list):
        raise TypeError("stood_in must be a list")
    sent = {stand_in["name"] for stand_in in stand_ins}
    return tuple(sorted(sent.intersection(name for name in names if isinstance(name, str))))


def _source_of(function):
    """The source of a module-level function, to define it again in the worker."""
    return textwrap.dedent(inspect.getsource(function))


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source
