"""Grade a notebook out of process: the learner's code runs in a worker, the grading here.

grade_notebook(cells) starts a worker (course.process) that sees of attncore only what the
notebook's exercises allow (course.allowed), runs every code cell of the notebook in it
except the graded test cells, seals it (what it still holds of attncore but what the
exercise allows is tripped), then runs the suite that each test cell names (by
its grade id, "function-suite") through the engine, with every call of the learner's
function sent to the worker. The worker never holds an expected value; a cell or a call
that runs too long or ends the process stops only that cell or that suite: the worker is
started again and the rest of the notebook is graded as usual, within the notebook's
budget of time and restarts, after which the rest fails with a message that says so.

Only the learner's own call and the comparison of what it returned can cost points: when
building a case or the reference fails, or a diagnosis of a plain result (numbers, arrays
of them), the cell's verdict is a grader error (CellVerdict.grader_error), which nbgrader
leaves for the instructor (course.preprocessors); a returned value that cannot be read as
one (a ragged list, a dict, an object of the learner's own) fails the case, the learner's.
"""
import hashlib
import inspect
import json
import os
import secrets
import textwrap
import traceback
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from ..engine import ASSIGNMENTS, SPECS, Outcome, run_suite
from ..engine.diagnosis.generic import NOT_AN_ARRAY, NOT_AN_ARRAY_FIX, seen
from ..engine.feedback import message
from ..engine.probe import STRICT_DETECTORS
from ..observe import shorten
from . import sandbox as sandboxes
from .allowed import ALLOWED, kept_modules
from .layout import parse_grade_id
from .process import (
    NOTEBOOK_SECONDS,
    RESTARTS,
    TIME_LIMIT,
    Budget,
    NotDefined,
    Worker,
    WorkerStopped,
    _stood_in,  # noqa: F401  (tests/test_stand_ins.py reads it from here)
)
from .verdict import CellVerdict, as_sentence

SANDBOX_CHOICES = ("bubblewrap", "none", "auto")
ASSIGNMENT_OF = {name: names for names in ASSIGNMENTS.values() for name in names}
ASSIGNMENT_NAME = {name: assignment for assignment, names in ASSIGNMENTS.items() for name in names}


class GraderError(Exception):
    """The grader failed (a case, a reference, a diagnosis): no verdict on the learner."""


def test_cells(cells: list) -> list[tuple[str, dict]]:
    """[(grade_id, cell)] of the graded code cells that are tests, not solutions."""
    return [(cell["metadata"]["nbgrader"]["grade_id"], cell) for cell in cells
            if cell["cell_type"] == "code" and _nbgrader(cell).get("grade")
            and not _nbgrader(cell).get("solution")]


def grade_notebook(cells: list, cwd: str | os.PathLike = ".", time_limit: float = TIME_LIMIT,
                   sandbox: str = "auto", seed: int | None = None, seconds: float = NOTEBOOK_SECONDS,
                   restarts: int = RESTARTS) -> dict[str, CellVerdict]:
    """{grade_id: CellVerdict} for every test cell of a notebook.

    cells: the notebook's cells as dicts (nbformat nodes work) with cell_type, source and
    metadata; cwd: the folder the notebook's code runs in when it is not sandboxed (a
    sandbox has a private empty folder); sandbox: "bubblewrap" (raise SandboxUnavailable
    where none can start), "none", or "auto" (bubblewrap where it can start); seed: the
    draw of the hidden cases (None: a fresh one); seconds and restarts: the notebook's
    budget (course.process.Budget).
    """
    code, tests = graded_code(cells)
    seed = secrets.randbelow(2 ** 31) if seed is None else int(seed)
    graded = {parsed[0] for parsed in map(parse_grade_id, tests) if parsed and parsed[0] in SPECS}
    forbidden = set().union(*(SPECS[function].forbidden for function in graded))
    allowed = set().union(*(ALLOWED[ASSIGNMENT_NAME[function]] for function in graded))
    budget = Budget(seconds, restarts)
    with Session(code, cwd, time_limit, resolve_sandbox(sandbox), seed, forbidden, allowed,
                 budget) as session:
        graded = {grade_id: session.grade(grade_id) for grade_id in sorted(tests, key=_notebook_order)}
        return {grade_id: graded[grade_id] for grade_id in tests}


def graded_code(cells: list) -> tuple[list[tuple[str, str]], list[str]]:
    """What the grader runs of a notebook: [(name, source)] of every code cell but the test
    cells, in order (a cell's name is its grade id, else its place in the notebook), and the
    grade ids of the test cells (whose suites run; their sources never do)."""
    tests = test_cells(cells)
    tested = {id(cell) for _, cell in tests}
    code = [(_nbgrader(cell).get("grade_id") or f"{index + 1}", _source(cell))
            for index, cell in enumerate(cells)
            if cell["cell_type"] == "code" and id(cell) not in tested]
    return code, [grade_id for grade_id, _ in tests]


def submission_digest(cells: list) -> str:
    """SHA-256 (hex) of what the grader runs of a notebook (graded_code): any change to its
    code, a cell's name or its test cells changes it; outputs, Markdown text and metadata
    beyond the grade ids do not. A student's hidden draw is keyed by it (course.secret)."""
    return hashlib.sha256(json.dumps(graded_code(cells)).encode()).hexdigest()


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


def resolve_sandbox(choice: str) -> bool:
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
    """A worker with the notebook's code loaded and sealed, restarted whenever it stops,
    while the notebook's budget lasts."""

    def __init__(self, code: list[tuple[str, str]], cwd: str | os.PathLike, time_limit: float,
                 sandboxed: bool = False, seed: int | None = None, forbidden: Iterable[str] = (),
                 allowed: Iterable[str] | None = None, budget: Budget | None = None) -> None:
        self.code, self.cwd, self.time_limit = code, cwd, time_limit
        self.sandboxed, self.seed = sandboxed, seed
        self.forbidden = forbidden  # what the notebook's exercises forbid by name, always
        self.allowed = allowed  # what they allow of attncore (None: all but the forbidden)
        self.budget = budget or Budget()
        self.load_problems = {}  # cell name -> what went wrong while it ran
        self.skip = set()  # cells that stopped the worker: never run again
        self.roots = {}  # graded function -> the functions whose mistakes fail it (_roots)
        self.worker, self.stopped = None, ""  # stopped: why no worker runs any more
        self.how = (("graded in a bubblewrap sandbox" if sandboxed else
                     "not sandboxed: fine for self-study, not for a grade that counts")
                    + ("" if seed is None else f"; hidden cases drawn with seed {seed} "
                                               f"(attncore-check --seed {seed} replays them on "
                                               f"this code)"))

    def __enter__(self):
        self._start(first=True)
        return self

    def __exit__(self, *exc):
        if self.worker is not None:
            self.worker.close()

    def grade(self, grade_id: str) -> CellVerdict:
        """The verdict of one test cell."""
        parsed = parse_grade_id(grade_id)
        if parsed is None or parsed[0] not in SPECS or parsed[1] not in SPECS[parsed[0]].suites:
            return CellVerdict(False, f"{grade_id}: no suite of that name is known to "
                                      f"attncore.grading, so this test was not run and gives "
                                      f"no points.")
        function, suite = parsed
        spec = SPECS[function]
        if self.stopped or self.budget.spent():
            return self._not_run(function, self.stopped or self.budget.spent())
        try:
            verdict, missing, _ = self._run(function, suite)
            if not verdict.passed and not missing and (wrong := self._wrong_callees(function)):
                again, missing, used = self._run(function, suite, wrong)
                if used:
                    return self._graded_again(function, suite, again, used)
        except _NotComparable as error:
            return CellVerdict(False, message(
                function, NOT_AN_ARRAY, detail=f"Your function returned {seen(error.returned)}; "
                f"reading it raised {type(error.__cause__).__name__}: "
                f"{shorten(error.__cause__)}", fix=NOT_AN_ARRAY_FIX, show_values=False),
                how=self.how, suite=suite, misconception=NOT_AN_ARRAY)
        except GraderError as error:
            return self._grader_error(function, suite, error)
        if missing:
            return CellVerdict(False, self._not_defined(function, missing[0]), how=self.how,
                               load_problem=self.load_problems.get(function, ""))
        return CellVerdict(verdict.passed, verdict.message, self._notes(function, verdict),
                           self.how, cases=len(spec.suites[suite]), suite=suite,
                           load_problem=self.load_problems.get(function, ""),
                           misconception=verdict.misconception)

    def _run(self, function, suite, stand_ins=()):
        """(Verdict, [why the function is not defined], {stand-ins the calls used}) of one
        suite, with the named graded functions replaced by their stand-ins. Raises
        GraderError when the grader fails, _NotComparable when what the learner's function
        returned breaks the comparison."""
        missing, used, last = [], set(), {}
        sent = [{"name": name, "source": _source_of(SPECS[name].stand_in),
                 "entry": SPECS[name].stand_in.__name__} for name in stand_ins]

        def call(arguments, measure_memory):
            last.clear()
            if self.worker is None:
                return Outcome(stopped=self.stopped)
            try:
                outcome = self.worker.call(function, arguments, measure_memory, sent)
            except WorkerStopped as stopped:
                self._start()
                return Outcome(stopped=str(stopped))
            except NotDefined as reason:
                missing.append(str(reason))
                return Outcome(stopped=str(reason))
            used.update(outcome.stood_in)
            last["returned"] = outcome.returned
            return outcome

        try:
            verdict = run_suite(_guarded(SPECS[function]), suite, call, self.seed)
        except GraderError:
            raise
        except Exception as error:
            if os.environ.get(STRICT_DETECTORS) == "1":
                raise
            if "returned" in last and not _plain(last["returned"]):
                raise _NotComparable(last["returned"]) from error  # the learner's own odd value
            raise GraderError(f"comparing or diagnosing a result of {function} raised "
                              f"{type(error).__name__}: {error}") from error
        return verdict, missing, used

    def _passes(self, function, suite, stand_ins=()):
        """(passed, stand-ins used) of one suite; a result that breaks the comparison fails."""
        try:
            verdict, missing, used = self._run(function, suite, stand_ins)
        except _NotComparable:
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

    def _grader_error(self, function, suite, error):
        """A cell the grader could not grade: the learner is told it is not their mistake,
        the instructor gets the traceback."""
        text = (f"{function}: grader error: tell your instructor. The grader itself failed "
                f"while running the tests of suite {suite} ({shorten(error, 200)}); this says "
                f"nothing about your code, and the instructor's log has the details.")
        return CellVerdict(False, text, how=self.how, suite=suite, misconception="grader error",
                           grader_error="".join(traceback.format_exception(error)))

    def _not_run(self, function, why):
        return CellVerdict(False, message(function, "not graded", detail=why, show_values=False,
                                          fix="make every cell of the notebook finish in a few "
                                              "seconds, and no function stop the process that "
                                              "runs it."), how=self.how,
                           load_problem=self.load_problems.get(function, ""), misconception="not graded")

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

    def _start(self, first=False):
        """Start a worker (within the budget), run every cell that has not stopped one
        before, and seal it."""
        if self.worker is not None:
            self.worker.close()
            self.worker = None
        if not first:
            self.budget.restarted += 1
        if why := self.budget.spent():
            self.stopped = why
            return
        library = None if self.allowed is None else kept_modules(self.allowed)
        try:
            self.worker = Worker(self.cwd, self.time_limit, self.sandboxed, self.budget, library)
        except WorkerStopped as stopped:
            self.stopped = f"the process that runs your code could not start: {stopped}"
            return
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
        try:
            self.worker.seal(self.allowed, self.forbidden)
        except WorkerStopped:
            return self._start()


class _NotComparable(Exception):
    """What the learner's function returned broke the comparison (the cause says how)."""

    def __init__(self, returned):
        super().__init__()
        self.returned = returned


def _guarded(spec):
    """spec with its reference and its cases' builders raising GraderError when they fail."""
    def guard(function, what):
        def guarded(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except Exception as error:
                if os.environ.get(STRICT_DETECTORS) == "1":
                    raise
                raise GraderError(f"{what} raised {type(error).__name__}: {error}") from error
        return guarded

    suites = {name: [replace(case, make=guard(case.make, f"building the case {case.description!r}"))
                     for case in cases] for name, cases in spec.suites.items()}
    return replace(spec, reference=guard(spec.reference, f"the reference {spec.name}"), suites=suites)


def _plain(value):
    """Whether value is what a graded function should return: numbers, booleans, arrays
    of them, or tuples of these (a comparison of these failing is the grader's). Anything
    else, a list too (np.asarray of a ragged one raises), is the learner's to fix when
    reading it fails."""
    if value is None or type(value) in (bool, int, float, complex):
        return True
    if type(value) is np.ndarray or isinstance(value, np.generic):
        return value.dtype.kind in "biufc"
    if type(value) is tuple:
        return all(map(_plain, value))
    return False


def _bounded_lines(text, most=4):
    """At most `most` lines of text, each shortened: what a cell raised when loaded."""
    return "\n".join(shorten(line) if index == 0 else "  " + shorten(line)
                     for index, line in enumerate(str(text).splitlines()[:most]))


def _source_of(function):
    """The source of a module-level function, to define it again in the worker."""
    return textwrap.dedent(inspect.getsource(function))


def _nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell):
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source
