"""The class report: `python -m attncore.grading report <assignment>` writes, under the
course's reports/<assignment>/,

- students.csv: one row per student (student, status graded / ungradable / missing,
  score, max_score, the misconceptions the grader named with ";" between them, and why a
  submission could not be graded);
- misconceptions.csv: per function, how many students the grader named each misconception
  for;
- report.html: the score distribution, a bar chart of each function's misconceptions with
  the book's section that explains each, and the ungradable submissions with why
  (course.report_page, one self-contained file).

Scores come from nbgrader's gradebook; the misconceptions from what the grader wrote in
each test cell's metadata of the autograded notebooks (GradeOutOfProcess), so they are
those the students' feedback names.
"""
import csv
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..engine import ASSIGNMENTS
from . import ungradable
from .collect import read_record
from .downloads import read_roster
from .layout import VERDICT_KEY, WORK
from .selfcheck import misconception_of
from .verdict import CellVerdict

REPORTS = "reports"  # beside .nbgrader/ in the course root, ignored by git
STATUSES = ("graded", "ungradable", "missing")


@dataclass
class Student:
    """One student's row of the report."""

    student: str
    status: str  # one of STATUSES
    score: float | None = None
    max_score: float | None = None
    misconceptions: list = field(default_factory=list)  # [(function, misconception)]
    reason: str = ""  # why the submission could not be graded


def named_in(notebook_path: str | os.PathLike) -> list:
    """[(function, misconception)] the grader named in an autograded notebook's failed test
    cells, each once, in the notebook's order."""
    notebook = json.loads(Path(notebook_path).read_text(encoding="utf-8"))
    named = []
    for cell in notebook.get("cells", []):
        verdict = cell.get("metadata", {}).get(VERDICT_KEY)
        if not verdict or verdict.get("function") not in ASSIGNMENT_OF:
            continue
        name = misconception_of(verdict["function"], CellVerdict(
            bool(verdict.get("passed")), "", misconception=verdict.get("misconception") or ""))
        if name and (verdict["function"], name) not in named:
            named.append((verdict["function"], name))
    return named


ASSIGNMENT_OF = {function: assignment for assignment, functions in ASSIGNMENTS.items()
                 for function in functions}


def class_rows(root: str | os.PathLike, db_url: str, assignment: str) -> list:
    """A Student for everyone the course knows (the gradebook's students, the roster, the
    LMS downloads), sorted by student id."""
    from nbgrader.api import Gradebook, MissingEntry

    root = Path(root)
    why_not = ungradable.read(root, assignment)
    roster = root / WORK / "roster.csv"
    known = set(read_record(root, assignment)) | set(why_not)
    if roster.is_file():
        known |= {entry["student_id"] for entry in read_roster(roster).values()}
    rows = []
    with Gradebook(db_url) as gradebook:
        try:
            most = gradebook.find_assignment(assignment).max_score
        except MissingEntry:
            raise LookupError(f"the gradebook has no assignment {assignment!r}: run `nbgrader "
                              f"generate_assignment {assignment}`, then autograde it") from None
        known |= {student.id for student in gradebook.students}
        for student in sorted(known):
            if student in why_not:
                rows.append(Student(student, "ungradable", max_score=most, reason=why_not[student]))
                continue
            notebooks = sorted((root / WORK / "autograded" / student / assignment).glob("*.ipynb"))
            try:
                submission = gradebook.find_submission(assignment, student)
            except MissingEntry:
                submission = None
            if submission is None or not notebooks:
                rows.append(Student(student, "missing", max_score=most))
                continue
            rows.append(Student(student, "graded", submission.score, most,
                                [named for path in notebooks for named in named_in(path)]))
    return rows


def counts(rows: list, assignment: str) -> dict:
    """{function: Counter({misconception: students})} over the rows, every graded function
    of the assignment present, in the assignment's order."""
    tally = {function: Counter() for function in ASSIGNMENTS[assignment]}
    for row in rows:
        for function, name in row.misconceptions:
            tally[function][name] += 1
    return tally


def write(root: str | os.PathLike, db_url: str, assignment: str) -> Path:
    """Write reports/<assignment>/ (students.csv, misconceptions.csv, report.html) under
    the course root; return the folder."""
    from .report_page import render

    rows = class_rows(root, db_url, assignment)
    folder = Path(root) / REPORTS / assignment
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "students.csv", "w", newline="", encoding="utf-8") as file:
        table = csv.writer(file)
        table.writerow(["student", "status", "score", "max_score", "misconceptions", "reason"])
        for row in rows:
            table.writerow([row.student, row.status, _number(row.score), _number(row.max_score),
                            ";".join(f"{f}: {name}" for f, name in row.misconceptions),
                            row.reason])
    tally = counts(rows, assignment)
    with open(folder / "misconceptions.csv", "w", newline="", encoding="utf-8") as file:
        table = csv.writer(file)
        table.writerow(["function", "misconception", "students"])
        for function, counter in tally.items():
            for name, students in counter.most_common():
                table.writerow([function, name, students])
    (folder / "report.html").write_text(render(assignment, rows, tally, Path(root)),
                                        encoding="utf-8")
    return folder


def _number(value):
    return "" if value is None else f"{value:g}"
