"""The nbgrader preprocessors of autograde (see config.py): one repairs a submission's
grading metadata before nbgrader checks it, one grades it out of process, one leaves a
cell the grader itself failed on for the instructor to grade."""
import atexit
import sys

import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum, Float, Integer, Unicode
from traitlets.config import Config

from . import ungradable
from .ahead import load_ahead, notebook_key
from .layout import VERDICT_KEY, WORK, function_of, parse_grade_id
from .normalise import Known, normalise
from .printable import printable
from .process import NOTEBOOK_SECONDS, RESTARTS
from .runner import TIME_LIMIT, grade_notebook, submission_digest, test_cells
from .secret import SECRET_FILE, keyed_secret, replay_seed
from .verdict import as_sentence

GRADER_ERRORS = "attncore_grader_errors"  # resources key: the cells the grader failed on


class GradeOutOfProcess(NbGraderPreprocessor):
    """Replace Execute: grade every test cell with course.runner and write its verdict as
    the cell's output (an error output when it fails), which nbgrader then scores, and
    in the cell's metadata (VERDICT_KEY), which the class report reads."""

    time_limit = Float(TIME_LIMIT, help="Seconds for one cell to load or one call to "
                                        "return in the grading worker.").tag(config=True)
    sandbox = Enum(["bubblewrap", "none"], default_value="bubblewrap", help=(
        "Where each submission's code runs: 'bubblewrap', a sandbox of its own that cannot "
        "reach the course folder, the gradebook or the grader (Linux, package bubblewrap); "
        "'none', a plain process that can (only for trusted code). With 'bubblewrap', a "
        "machine where no sandbox starts refuses to grade.")).tag(config=True)
    secret = Unicode("", help=(
        "The course secret that keys each student's draw of the hidden cases. Empty: the "
        f"one in {WORK}/{SECRET_FILE}, made the first time grading needs it. Changing it "
        "changes every student's draw.")).tag(config=True)
    seed = Integer(None, allow_none=True, help=(
        "The draw of the hidden cases: None draws each submission's own, from the course "
        "secret, the assignment, the student and the code submitted (the same at every "
        "regrade of the same file, new for a changed one; the feedback names it, so that "
        "grading can be replayed); an integer draws the same for every notebook, for "
        "special cases.")).tag(config=True)

    ahead = Unicode("", help=(
        "A folder of verdicts graded ahead, one <student>.json each (python -m "
        "attncore.grading autograde --jobs N writes it): a notebook whose cells and draw "
        "match its student's takes them instead of being graded again.")).tag(config=True)

    notebook_time_limit = Float(NOTEBOOK_SECONDS, help=(
        "Seconds one notebook may take in all (its cells, calls and worker restarts); "
        "the tests not run by then fail, saying so.")).tag(config=True)
    restarts = Integer(RESTARTS, help=(
        "Times one notebook's worker is started again after its code stopped it; the "
        "tests not run by then fail, saying so.")).tag(config=True)

    def preprocess(self, nb, resources):
        folder = resources.get("metadata", {}).get("path") or "."
        seed = self.draw(resources, nb.cells)
        options = self.options()
        verdicts = self.graded_ahead(nb.cells, seed, options, resources) or grade_notebook(
            nb.cells, cwd=folder, seed=seed, **options)
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
            function, suite = parse_grade_id(grade_id) or (grade_id, "")
            cell.metadata[VERDICT_KEY] = {
                "function": function, "suite": suite, "passed": verdict.passed,
                "misconception": verdict.misconception, "seed": seed,
                "grader_error": bool(verdict.grader_error)}
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
        self.remember(resources)
        return nb, resources

    def draw(self, resources, cells):
        """The seed of this notebook's hidden cases: the configured one, else the replay
        seed of this submission (course.secret): keyed by the course secret, of the
        assignment, the student and the code the grader runs of `cells`."""
        if self.seed is not None:
            return self.seed
        graded = resources.get("nbgrader", {})
        if not graded.get("student") or not graded.get("assignment"):
            raise ValueError("GradeOutOfProcess draws each student's hidden cases from the "
                             "student and the assignment, which nbgrader autograde gives; "
                             "set --GradeOutOfProcess.seed to grade outside it")
        from nbgrader.coursedir import CourseDirectory

        secret = keyed_secret(CourseDirectory(config=self.config).root, self.secret)
        return replay_seed(secret, graded["assignment"], graded["student"],
                           submission_digest(cells))

    def options(self):
        """grade_notebook's options, as configured (each value as its trait holds it)."""
        return {keyword: getattr(self, trait) for keyword, trait in OPTIONS.items()}

    def graded_ahead(self, cells, seed, options, resources):
        """The verdicts graded ahead for this very notebook, draw and options, or None."""
        if not self.ahead:
            return None
        student = resources.get("nbgrader", {}).get("student")
        key = notebook_key(cells, seed, options)
        verdicts = load_ahead(f"{self.ahead}/{student}.json", key)
        if verdicts is not None:
            AHEAD.add((resources["nbgrader"].get("assignment"), student))
        return verdicts

    def remember(self, resources):
        """Note the student graded, for the summary printed when autograde ends."""
        from nbgrader.coursedir import CourseDirectory

        graded = resources.get("nbgrader", {})
        if not GRADED:
            atexit.register(print_summary, graded.get("db_url"),
                            CourseDirectory(config=self.config).root)
        GRADED.setdefault(graded.get("assignment"), set()).add(graded.get("student"))


# grade_notebook's keyword: the trait of GradeOutOfProcess that sets it
OPTIONS = {"time_limit": "time_limit", "sandbox": "sandbox", "seconds": "notebook_time_limit",
           "restarts": "restarts"}


def configured(section) -> GradeOutOfProcess:
    """GradeOutOfProcess as nbgrader makes it from its configuration section (a Config or
    a dict of trait values): each value read through its trait, so `time_limit = 2` is the
    2.0 that nbgrader grades with, and each trait's default where the section says nothing."""
    return GradeOutOfProcess(config=Config({"GradeOutOfProcess": section}))


GRADED = {}  # assignment -> the students graded by this process, for print_summary
AHEAD = set()  # (assignment, student) whose verdicts were graded ahead, in parallel


def print_summary(db_url, root):
    """One line per assignment when nbgrader autograde ends: how many students it graded,
    their mean score, and how many of the assignment's submissions are ungradable.
    nbgrader's own command has no hook at its end, so this runs when its process exits."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gradebook:
        for assignment, students in GRADED.items():
            scores = []
            for student in sorted(students):
                try:
                    submission = gradebook.find_submission(assignment, student)
                except MissingEntry:
                    continue
                scores.append((submission.score, submission.max_score))
            mean = sum(score for score, _ in scores) / len(scores) if scores else 0.0
            most = max((most for _, most in scores), default=0.0)
            ahead = sum(1 for graded, _ in AHEAD if graded == assignment)
            failed = len(ungradable.read(root, assignment))
            sys.stderr.write(
                f"[attncore] {assignment}: {len(scores)} graded, mean score {mean:.2f} / "
                f"{most:g}" + (f" ({ahead} graded ahead in parallel)" if AHEAD else "")
                + f"; {failed} ungradable"
                + (f" (why: python -m attncore.grading report {assignment})" if failed else "")
                + "\n")


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
