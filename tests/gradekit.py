"""Shared by the grading tests: the repository's assignments, built into submissions, and a
throwaway nbgrader course driven through nbgrader's own command line."""
import contextlib
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.corpus.words import generate_corpus_id

from attncore.grading.course.layout import RELEASE, SOURCE, WORK, by_function, parse_grade_id
from attncore.grading.course.runner import grade_notebook, test_cells
from attncore.grading.engine import ASSIGNMENTS, SPECS, Outcome, run_suite
from attncore.grading.engine.suites import MODULES
from attncore.grading.observe import observe

ROOT = Path(__file__).resolve().parents[1]
# assignment -> the name of its suite module, which tests/wrong/ and tests/right/ share
SUITE_MODULE = {module.ASSIGNMENT: module.__name__.rpartition(".")[2] for module in MODULES}


def source_notebook(assignment):
    return ROOT / SOURCE / assignment / f"{assignment}.ipynb"


def release_notebook(assignment):
    return ROOT / RELEASE / assignment / f"{assignment}.ipynb"


def reference_sources(assignment):
    """{function: its reference solution cell, solution markers removed}."""
    notebook = nbformat.read(source_notebook(assignment), as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: re.sub(
                r"^\s*### (BEGIN|END) SOLUTION\s*\n", "", cell.source, flags=re.M)
            for cell in notebook.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}


def submission(assignment, replaced=None):
    """The released notebook with every function filled in: the reference, or replaced[f]."""
    notebook = nbformat.read(release_notebook(assignment), as_version=4)
    sources = {**reference_sources(assignment), **(replaced or {})}
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in sources:
            cell.source = sources[grade_id]
    return notebook


def pasted(notebook):
    """The notebook with a copy of its first solution cell (metadata and all: Jupyter's copy
    keeps it) pasted above it."""
    at = next(k for k, cell in enumerate(notebook.cells) if cell.cell_type == "code"
              and cell.metadata.get("nbgrader", {}).get("solution"))
    copy = nbformat.from_dict(json.loads(json.dumps(notebook.cells[at])))
    copy.id = generate_corpus_id()
    notebook.cells.insert(at, copy)
    return notebook


def verdicts(notebook, **options):
    """{grade_id: CellVerdict} of a submission, graded as the self-check and nbgrader grade
    it: the code runs in a worker process (options: grade_notebook's, e.g. time_limit)."""
    return grade_notebook(notebook.cells, **options)


@functools.lru_cache(maxsize=4096)
def _compiled(source):
    """A cell's code object: the catalogue runs the same setup and solution cells thousands of times."""
    return compile(source, "<cell>", "exec")


def loaded(notebook):
    """(the namespace a submission's code defines, run in this process; its test cells as
    [(grade_id, cell)])."""
    tests = test_cells(notebook.cells)
    tested = {id(cell) for _, cell in tests}
    namespace = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in notebook.cells:
            if cell.cell_type == "code" and id(cell) not in tested:
                exec(_compiled(cell.source), namespace)
    return namespace, tests


def in_process_verdicts(notebook, seed=None):
    """{grade_id: engine.Verdict} of a submission, its code run in this process: the fast
    path for the catalogue of wrong solutions (no worker, no nbgrader). seed: the draw of
    the hidden cases, as the grade that counts makes one (None: the fixed cases)."""
    namespace, tests = loaded(notebook)
    result = {}
    for grade_id, _ in tests:
        function, suite = parse_grade_id(grade_id)
        spec = SPECS[function]
        result[grade_id] = run_suite(spec, suite, _observed(namespace[function], spec.forbidden), seed)
    return result


def _observed(function, forbidden):
    """A suite's call of function in this process, watched as the worker watches it."""
    return lambda arguments, measure_memory: Outcome(**observe(function, arguments, forbidden, measure_memory))


@dataclass(frozen=True)
class CellGrade:
    """One graded cell of one submission, as nbgrader scored it."""

    grade_id: str
    score: float
    max_score: float
    manual: bool  # a written answer, graded by hand
    message: str  # the error the cell shows ("" when it passed)
    output: str  # everything the cell shows


def points_by_function(grades, assignment):
    """{function: (score, max, [messages of failing cells])} from a list of CellGrade."""
    automatic = [g for g in grades if not g.manual]
    return {function: (sum(g.score for g in cells), sum(g.max_score for g in cells),
                       [g.message for g in cells if g.score < g.max_score])
            for function, cells in by_function(
                automatic, ASSIGNMENTS[assignment], lambda g: g.grade_id).items()}


def auto_points(grades):
    auto = [g for g in grades if not g.manual]
    return sum(g.score for g in auto), sum(g.max_score for g in auto)


class Course:
    """A throwaway nbgrader course folder with the repository's nbgrader_config.py."""

    def __init__(self, root, assignments):
        self.root = Path(root)
        shutil.copy(ROOT / "nbgrader_config.py", self.root / "nbgrader_config.py")
        for assignment in assignments:
            target = self.root / SOURCE / assignment
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(source_notebook(assignment), target / f"{assignment}.ipynb")

    def run(self, *args, timeout=1800):
        """Run `python -m ARGS` in the course folder, as an instructor types it; return the
        finished process, whatever its exit status."""
        bin_dir = os.path.dirname(sys.executable)  # nbgrader calls `alembic` from PATH
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        return subprocess.run([sys.executable, "-m", *args], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=timeout)

    def nbgrader(self, *args, timeout=1800):
        """Run `nbgrader ARGS` in the course folder; raise with its log if it fails."""
        result = self.run("nbgrader", *args, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def generate(self, assignment):
        self.nbgrader("generate_assignment", assignment, "--force")
        return self.root / RELEASE / assignment / f"{assignment}.ipynb"

    def submit(self, assignment, student, notebook):
        """Place a notebook (a path or an nbformat node) as student's submission."""
        folder = self.root / WORK / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{assignment}.ipynb"
        if isinstance(notebook, (str, Path)):
            shutil.copy(notebook, target)
        else:
            nbformat.write(notebook, target)

    def autograde(self, assignment, *options):
        """Autograde every submitted notebook (options: nbgrader flags)."""
        return self.nbgrader("autograde", assignment, "--create", "--force", *options)

    def generate_feedback(self, assignment):
        self.nbgrader("generate_feedback", assignment, "--force")
        return self.root / WORK / "feedback"

    def autograded(self, assignment, student):
        return self.root / WORK / "autograded" / student / assignment / f"{assignment}.ipynb"

    def grades(self, assignment, student):
        """Every graded cell of a student's autograded notebook, in notebook order."""
        from nbgrader.api import Gradebook

        notebook = nbformat.read(self.autograded(assignment, student), as_version=4)
        with Gradebook(f"sqlite:///{self.root / WORK / 'gradebook.db'}") as gradebook:
            scores = {grade.name: grade for grade in gradebook.find_submission_notebook(
                assignment, assignment, student).grades}
            result = []
            for cell in notebook.cells:
                meta = cell.metadata.get("nbgrader", {})
                grade = scores.get(meta.get("grade_id"))
                if grade is not None:
                    outputs = cell.get("outputs", [])
                    result.append(CellGrade(
                        meta["grade_id"], grade.score, grade.max_score, bool(meta.get("solution")),
                        "\n".join(o.evalue for o in outputs if o.output_type == "error"),
                        "\n".join(o.get("text", o.get("evalue", "")) for o in outputs)))
        return result
