"""The nbgrader preprocessors of autograde (see config.py): one repairs a submission's
grading metadata before nbgrader checks it, one grades it out of process, one leaves a
cell the grader itself failed on for the instructor to grade."""
import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum, Float, Integer

from .layout import function_of
from .normalise import Known, normalise
from .printable import printable
from .process import NOTEBOOK_SECONDS, RESTARTS
from .runner import TIME_LIMIT, grade_notebook, test_cells
from .verdict import as_sentence

GRADER_ERRORS = "attncore_grader_errors"  # resources key: the cells the grader failed on


class GradeOutOfProcess(NbGraderPreprocessor):
    """Replace Execute: grade every test cell with course.runner and write its verdict as
    the cell's output (an error output when it fails), which nbgrader then scores."""

    time_limit = Float(TIME_LIMIT, help="Seconds for one cell to load or one call to "
                                        "return in the grading worker.").tag(config=True)
    sandbox = Enum(["bubblewrap", "none"], default_value="bubblewrap", help=(
        "Where each submission's code runs: 'bubblewrap', a sandbox of its own that cannot "
        "reach the course folder, the gradebook or the grader (Linux, package bubblewrap); "
        "'none', a plain process that can (only for trusted code). With 'bubblewrap', a "
        "machine where no sandbox starts refuses to grade.")).tag(config=True)
    seed = Integer(None, allow_none=True, help=(
        "The draw of the hidden cases: None draws a fresh seed for every notebook (its "
        "feedback names it, so the run can be replayed); an integer fixes it for every "
        "notebook, e.g. to regrade exactly as before.")).tag(config=True)

    notebook_time_limit = Float(NOTEBOOK_SECONDS, help=(
        "Seconds one notebook may take in all (its cells, calls and worker restarts); "
        "the tests not run by then fail, saying so.")).tag(config=True)
    restarts = Integer(RESTARTS, help=(
        "Times one notebook's worker is started again after its code stopped it; the "
        "tests not run by then fail, saying so.")).tag(config=True)

    def preprocess(self, nb, resources):
        folder = resources.get("metadata", {}).get("path") or "."
        verdicts = grade_notebook(nb.cells, cwd=folder, time_limit=self.time_limit,
                                  sandbox=self.sandbox, seed=self.seed,
                                  seconds=self.notebook_time_limit, restarts=self.restarts)
        student = resources.get("nbgrader", {}).get("student", "?")
        for grade_id, cell in test_cells(nb.cells):
            verdict = verdicts[grade_id]
            kind = "GraderError" if verdict.grader_error else "AssertionError"
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=verdict.text() + "\n")
                if verdict.passed else
                nbformat.v4.new_output("error", ename=kind, evalue=verdict.text(),
                                       traceback=[verdict.text()])]
            if verdict.grader_error:
                self.log.error("grader error in cell %s of student %s (not the student's "
                               "mistake; the cell is left for manual grading):\n%s",
                               printable(grade_id), student, verdict.grader_error)
                resources.setdefault(GRADER_ERRORS, []).append(grade_id)
        # A function's own cell that raised (or never finished) when the grader ran it
        # says so under the cell, where the learner looks for it (the feedback page too).
        loaded = {function_of(gid): v.load_problem for gid, v in verdicts.items() if v.load_problem}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            function = meta.get("grade_id")
            if cell.cell_type == "code" and meta.get("solution") and function in loaded:
                text = (f"When the grader ran this cell, it {as_sentence(loaded[function])}\nThe cell "
                        f"stopped there: what it defines after that point is missing. Restart "
                        f"the kernel and run all cells to see the whole error.")
                cell.outputs = [nbformat.v4.new_output("error", ename="CellError", evalue=text,
                                                       traceback=[text])]
        return nb, resources


class NormaliseMetadata(NbGraderPreprocessor):
    """First of autograde's sanitising steps: give every graded cell the metadata the
    gradebook has for its id, and take it from copies and from ids the gradebook lacks
    (course.normalise), so that nbgrader's own checks never stop on a submission and
    score only the instructor's cells."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        known = gradebook_cells(info["db_url"], info["notebook"], info["assignment"])
        for repair in normalise(nb.cells, known):
            self.log.warning("student %s, notebook %s: %s", info["student"], info["notebook"], repair)
        return nbformat.from_dict(nb), resources


def gradebook_cells(db_url: str, notebook: str, assignment: str) -> dict[str, Known]:
    """{grade id: Known} of every cell the gradebook holds for one notebook."""
    with Gradebook(db_url) as gradebook:
        source = gradebook.find_notebook(notebook, assignment)
        graded = {cell.name: cell.max_score for cell in source.grade_cells}
        tasks = {cell.name: cell.max_score for cell in source.task_cells}
        solutions = {cell.name for cell in source.solution_cells}
        return {cell.name: Known(
            cell.cell_type, grade=cell.name in graded, solution=cell.name in solutions,
            locked=bool(cell.locked), task=cell.name in tasks,
            points=graded.get(cell.name, tasks.get(cell.name)),
            source=cell.source if cell.locked else None, checksum=cell.checksum)
            for cell in source.source_cells}


class LeaveGraderErrorsToTheInstructor(NbGraderPreprocessor):
    """After SaveAutoGrades: a test cell the grader itself failed on gets no automatic
    score and needs manual grading (formgrader shows it), instead of a zero the learner
    did not earn."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        failed = resources.get(GRADER_ERRORS, [])
        if not failed:
            return nb, resources
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            for grade_id in failed:
                grade = gradebook.find_grade(grade_id, info["notebook"], info["assignment"],
                                             info["student"])
                grade.auto_score, grade.needs_manual_grade = None, True
            gradebook.db.commit()
        return nb, resources
