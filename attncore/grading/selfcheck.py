"""`python -m attncore.grading check NOTEBOOK`: grade your own notebook, no instructor needed.

Your notebook goes through nbgrader's own autograde in a temporary course, with
the hidden tests when the repository's solutions/ folder is present, and the
result is printed per function: points, and what went wrong, by name.
"""
import json
import tempfile
from pathlib import Path

import nbformat

from .catalog import ASSIGNMENTS
from .course import Course


class NotAnAssignment(ValueError):
    """The path is not a notebook of one of the course's assignments."""


def identify(path):
    """The assignment a notebook belongs to (by its graded cells), or NotAnAssignment."""
    path = Path(path)
    if not path.is_file():
        raise NotAnAssignment(f"{path}: no such file")
    try:
        notebook = nbformat.read(path, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, UnicodeDecodeError) as error:
        raise NotAnAssignment(f"{path} is not a Jupyter notebook ({error.__class__.__name__})") from None
    ids = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in notebook.cells}
    for assignment, functions in ASSIGNMENTS.items():
        if functions and set(functions) <= ids:
            return assignment
    raise NotAnAssignment(
        f"{path} is a notebook, but not one of the course's assignments "
        f"({', '.join(ASSIGNMENTS)}): none has all of its graded cells")


def find_sources(notebook_path, assignment):
    """(source notebook, includes hidden tests?) from solutions/, else the released exercise."""
    starts = [Path(notebook_path).resolve().parent, Path(__file__).resolve().parents[2]]
    for start in starts:
        for folder in (start, *start.parents):
            solution = folder / "solutions" / assignment / f"{assignment}.ipynb"
            if solution.is_file():
                return solution, True
    for start in starts:
        for folder in (start, *start.parents):
            release = folder / "exercises" / assignment / f"{assignment}.ipynb"
            if release.is_file():
                return release, False
    raise NotAnAssignment(f"cannot find exercises/{assignment} or solutions/{assignment} "
                          f"above {notebook_path}; run the check from a clone of the course")


def grade(notebook_path):
    """Autograde a learner's notebook; returns (assignment, hidden tests?, [CellGrade])."""
    assignment = identify(notebook_path)
    source, hidden = find_sources(notebook_path, assignment)
    with tempfile.TemporaryDirectory(prefix="attncore-check-") as root:
        course = Course(root, {assignment: source})
        course.generate(assignment)
        course.submit(assignment, "me", notebook_path)
        course.autograde(assignment, "me")
        return assignment, hidden, course.grades(assignment, "me")


def report(assignment, hidden, grades):
    """The printed table and the feedback of every test that lost points."""
    functions = ASSIGNMENTS[assignment]
    auto = [g for g in grades if not g.manual]
    got, total = sum(g.score for g in auto), sum(g.max_score for g in auto)
    lines = [f"{assignment}: {got:g} / {total:g} automatic points "
             + ("(visible and hidden tests)" if hidden else
                "(visible tests only: solutions/ with the hidden tests was not found)"),
             "", f"{'function':<26}{'points':>10}  feedback", "-" * 72]
    failures = []
    for function in functions:
        cells = [g for g in auto if g.grade_id.split("-")[0] == function]
        score, most = sum(g.score for g in cells), sum(g.max_score for g in cells)
        failed = [g for g in cells if g.score < g.max_score]
        first_line = failed[0].message.splitlines()[0] if failed and failed[0].message else ""
        status = "ok" if not failed else (first_line or "no output: the test did not run")
        lines.append(f"{function:<26}{f'{score:g} / {most:g}':>10}  {status[:80]}")
        failures += failed[:1]  # the first failing test of each function, in full
    for answer in (g for g in grades if g.manual):
        lines.append(f"{answer.grade_id:<26}{f'? / {answer.max_score:g}':>10}  written answer, "
                     "graded by hand")
    for failure in failures:
        lines += ["", f"== {failure.grade_id} ({failure.score:g} / {failure.max_score:g})",
                  failure.message or "The cell produced no error output but scored 0 "
                                     "(it may have timed out)."]
    return "\n".join(lines), got == total
