"""The nbgrader course layout, in one place for nbgrader_config.py, the self-check and the tests.

solutions/<assignment>/<assignment>.ipynb is nbgrader's source; exercises/ its release;
everything nbgrader writes per student (submitted, autograded, feedback, gradebook)
lives under .nbgrader/, which git ignores.
"""
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from traitlets.config import Config

WORK = ".nbgrader"
EXECUTION_TIMEOUT = 120  # seconds per cell: a first Numba compile fits, an endless loop does not


def course_config(root):
    """The nbgrader Config for a course rooted at `root` (creates root/.nbgrader for the gradebook)."""
    from nbgrader.preprocessors import (
        AssignLatePenalties, CheckCellMetadata, Execute, IgnorePattern, LimitOutput, SaveAutoGrades,
    )
    from nbconvert.preprocessors import ClearMetadataPreprocessor

    from .nbgrader_plugins import TamperGuard, TrimLongOutput

    root = os.path.abspath(root)
    os.makedirs(os.path.join(root, WORK), exist_ok=True)
    c = Config()
    c.CourseDirectory.root = root
    c.CourseDirectory.course_id = "attention-matrix"
    c.CourseDirectory.source_directory = "solutions"
    c.CourseDirectory.release_directory = "exercises"
    c.CourseDirectory.submitted_directory = f"{WORK}/submitted"
    c.CourseDirectory.autograded_directory = f"{WORK}/autograded"
    c.CourseDirectory.feedback_directory = f"{WORK}/feedback"
    c.CourseDirectory.solution_directory = f"{WORK}/solution"
    c.CourseDirectory.db_url = f"sqlite:///{os.path.join(root, WORK, 'gradebook.db')}"
    c.Execute.timeout = EXECUTION_TIMEOUT
    c.LimitOutput.max_lines = 200
    c.LimitOutput.max_traceback = 60
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.Autograde.autograde_preprocessors = [
        Execute, TamperGuard, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, TrimLongOutput,
        SaveAutoGrades, AssignLatePenalties, CheckCellMetadata,
    ]
    return c


CONFIG_FILE = '''"""nbgrader configuration: run nbgrader commands from this folder.

The layout (source solutions/, release exercises/, per-student work in .nbgrader/)
is defined once, in attncore/grading/course.py.
"""
import os

from attncore.grading.course import course_config

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)
c.merge(course_config(os.path.dirname(os.path.abspath(__file__))))
'''


@dataclass(frozen=True)
class CellGrade:
    """One graded cell of one submission, as nbgrader scored it."""

    grade_id: str
    score: float
    max_score: float
    manual: bool  # a written answer, graded by hand
    message: str  # the error the cell printed ("" when it passed)


class Course:
    """A throwaway nbgrader course folder, driven through the nbgrader command line.

    The self-check and the tests use it; instructors run the same commands by hand.
    """

    def __init__(self, root, sources):
        """root: an empty folder; sources: {assignment: path of its source notebook}."""
        self.root = Path(root)
        (self.root / "nbgrader_config.py").write_text(CONFIG_FILE)
        for assignment, notebook in sources.items():
            target = self.root / "solutions" / assignment
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(notebook, target / f"{assignment}.ipynb")

    def nbgrader(self, *args, timeout=1800):
        """Run `nbgrader ARGS` in the course folder; raise with its log if it fails."""
        bin_dir = os.path.dirname(sys.executable)  # nbgrader calls `alembic` from PATH
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        result = subprocess.run([os.path.join(bin_dir, "nbgrader"), *args], cwd=self.root,
                                env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def generate(self, assignment):
        self.nbgrader("generate_assignment", assignment, "--force")
        return self.root / "exercises" / assignment / f"{assignment}.ipynb"

    def submit(self, assignment, student, notebook):
        """Place a notebook (a path or an nbformat node) as student's submission."""
        folder = self.root / WORK / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{assignment}.ipynb"
        if isinstance(notebook, (str, Path)):
            shutil.copy(notebook, target)
        else:
            nbformat.write(notebook, target)

    def autograde(self, assignment, student=None, *options):
        """Autograde one student's submission, or every submitted one (options: nbgrader flags)."""
        who = ["--student", student] if student else []
        return self.nbgrader("autograde", assignment, *who, "--create", "--force", *options)

    def generate_feedback(self, assignment):
        self.nbgrader("generate_feedback", assignment, "--force")
        return self.root / WORK / "feedback"

    def grades(self, assignment, student):
        """Every graded cell of a student's autograded notebook, in notebook order."""
        from nbgrader.api import Gradebook

        graded = self.root / WORK / "autograded" / student / assignment / f"{assignment}.ipynb"
        notebook = nbformat.read(graded, as_version=4)
        with Gradebook(f"sqlite:///{self.root / WORK / 'gradebook.db'}") as gradebook:
            scores = {grade.name: grade for grade in gradebook.find_submission_notebook(
                assignment, assignment, student).grades}
            result = []
            for cell in notebook.cells:
                meta = cell.metadata.get("nbgrader", {})
                grade_id = meta.get("grade_id")
                if grade_id in scores:
                    grade = scores[grade_id]
                    result.append(CellGrade(
                        grade_id, grade.score, grade.max_score, bool(meta.get("solution")),
                        "\n".join(out.evalue for out in cell.get("outputs", [])
                                  if out.output_type == "error")))
        return result
