"""Grade a notebook out of process: the learner's code runs in a worker, the grading here.

grade_notebook(cells) starts a worker (course.worker), runs every code cell of the
notebook in it except the graded test cells, then runs the suite that each test cell
names (by its grade id, "function-suite") through the engine, with every call of the
learner's function sent to the worker. The worker never holds an expected value; a cell
or a call that runs too long or ends the process stops only that cell or that suite:
the worker is started again and the rest of the notebook is graded as usual.
"""
import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from ..engine import SPECS, Outcome, run_suite
from ..engine.feedback import message
from . import wire
from .layout import parse_grade_id

TIME_LIMIT = 30.0  # seconds for one cell to load or one call to return


@dataclass(frozen=True)
class CellVerdict:
    """The grade of one test cell: passed or not, the feedback, and notes that cost nothing."""

    passed: bool
    message: str
    notes: tuple = ()

    def text(self):
        """What the learner reads in the cell's output."""
        head = "passed" if self.passed else self.message
        return "\n".join([head, *(f"Note: {note}" for note in self.notes)])


class WorkerStopped(Exception):
    """The worker did not answer: it ran past the time limit or its process ended."""


class NotDefined(Exception):
    """The notebook's code does not define the function a test asks for."""


def test_cells(cells):
    """[(grade_id, cell)] of the graded code cells that are tests, not solutions."""
    return [(cell["metadata"]["nbgrader"]["grade_id"], cell) for cell in cells
            if cell["cell_type"] == "code" and _nbgrader(cell).get("grade")
            and not _nbgrader(cell).get("solution")]


def grade_notebook(cells, cwd=".", time_limit=TIME_LIMIT):
    """{grade_id: CellVerdict} for every test cell of a notebook.

    cells: the notebook's cells as dicts (nbformat nodes work) with cell_type, source and
    metadata; cwd: the folder the notebook's code runs in.
    """
    tests = test_cells(cells)
    tested = {id(cell) for _, cell in tests}
    code = [(_nbgrader(cell).get("grade_id") or f"{index + 1}", _source(cell))
            for index, cell in enumerate(cells)
            if cell["cell_type"] == "code" and id(cell) not in tested]
    with Session(code, cwd, time_limit) as session:
        return {grade_id: session.grade(grade_id) for grade_id, _ in tests}


class Session:
    """A worker with the notebook's code loaded, restarted whenever it stops."""

    def __init__(self, code, cwd, time_limit):
        self.code, self.cwd, self.time_limit = code, cwd, time_limit
        self.load_problems = {}  # cell name -> what went wrong while it ran
        self.skip = set()  # cells that stopped the worker: never run again
        self.worker = None

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
        missing = []

        def call(arguments, measure_memory):
            try:
                return self.worker.call(function, arguments, spec.forbidden, measure_memory)
            except WorkerStopped as stopped:
                self._start()
                return Outcome(stopped=str(stopped))
            except NotDefined as reason:
                missing.append(str(reason))
                return Outcome(stopped=str(reason))

        verdict = run_suite(spec, suite, call)
        if missing:
            return CellVerdict(False, self._not_defined(function, missing[0]))
        notes = verdict.notes
        if function in self.load_problems:
            notes = (f"while loading, your cell {self.load_problems[function]}", *notes)
        return CellVerdict(verdict.passed, verdict.message, notes)

    def _not_defined(self, function, what):
        problem = self.load_problems.get(function)
        why = f" Its cell {problem}." if problem else ""
        return message(function, f"{what} after the notebook's cells ran.{why}", show_values=False,
                       fix=f"make the cell with `def {function}(...)` run without errors "
                           f"(restart the kernel and run all cells to see).")

    def _start(self):
        """Start a worker and run every cell that has not stopped one before."""
        if self.worker is not None:
            self.worker.close()
        self.worker = Worker(self.cwd, self.time_limit)
        for name, source in self.code:
            if name in self.skip:
                continue
            try:
                reply = self.worker.exec(name, source)
            except WorkerStopped as stopped:
                self.load_problems[name] = f"did not finish: {stopped}"
                self.skip.add(name)
                return self._start()
            if reply["raised"]:
                self.load_problems[name] = f"raised {reply['raised']}"


class Worker:
    """One worker process and the pipes to it."""

    def __init__(self, cwd, time_limit):
        self.time_limit = time_limit
        to_worker_read, self._to_worker = os.pipe()
        self._from_worker, from_worker_write = os.pipe()
        self._log = tempfile.TemporaryFile()
        package_root = str(Path(__file__).resolve().parents[3])
        env = {**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [package_root,
                                                           os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "attncore.grading.course.worker",
             str(to_worker_read), str(from_worker_write)],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, pass_fds=(to_worker_read, from_worker_write))
        os.close(to_worker_read)
        os.close(from_worker_write)
        self._requests = os.fdopen(self._to_worker, "wb")
        self._replies = queue.Queue()
        replies = os.fdopen(self._from_worker, "rb")
        threading.Thread(target=self._read, args=(replies,), daemon=True).start()

    def exec(self, name, source):
        return self._ask({"op": "exec", "name": name, "source": source})

    def call(self, function, arguments, forbidden, measure_memory):
        """The Outcome of one call; NotDefined when the notebook has no such function."""
        reply = self._ask({"op": "call", "function": function,
                           "arguments": {k: wire.encode(v) for k, v in arguments.items()},
                           "forbidden": list(forbidden), "measure_memory": measure_memory})
        if isinstance(reply.get("missing"), str):
            raise NotDefined(reply["missing"])
        try:
            raised = reply["raised"]
            outcome = Outcome(
                returned=wire.decode(reply["returned"]),
                raised=None if raised is None else (str(raised[0]), str(raised[1])),
                arguments_after=dict(wire.decode(reply["arguments_after"])),
                peak_bytes=None if reply["peak_bytes"] is None else int(reply["peak_bytes"]),
                notes=tuple(str(note) for note in reply["notes"]))
        except Exception:  # a reply the worker code did not write
            self.close()
            raise WorkerStopped("the process running your code sent a reply the grader "
                                "cannot read") from None
        return outcome

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._requests.close()
        self._log.close()

    def _ask(self, request):
        try:
            wire.send(self._requests, request)
            reply = self._replies.get(timeout=self.time_limit)
        except (BrokenPipeError, OSError):
            reply = None
        except queue.Empty:
            self.close()
            raise WorkerStopped(f"no answer within {self.time_limit:g} s, so it was stopped") \
                from None
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
        """Move each reply into the queue; None once the worker's end of the pipe closes."""
        try:
            while (reply := wire.receive(replies)) is not None:
                self._replies.put(reply)
        except (ValueError, OSError):
            pass
        self._replies.put(None)

    def _ended(self):
        code = self.process.returncode
        self._log.seek(0)
        last = self._log.read().decode(errors="replace").strip().splitlines()[-1:]
        said = f"; its last output: {last[0][:200]!r}" if last else ""
        return f"the process running your code ended (exit code {code}){said}"


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source
