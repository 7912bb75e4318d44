"""The instructors' route from an LMS download to grades.csv, as book/instructors.md gives it.

An LMS hands the instructor a zip of the students' notebooks, each named
"<student id>_<assignment>.ipynb". The page says: put the zip files (or the notebooks) in
.nbgrader/downloaded/<assignment>/archive/, run `nbgrader zip_collect <assignment>`, then
`nbgrader autograde <assignment>` and `nbgrader export`, which writes .nbgrader/grades.csv.
This test runs exactly those commands, with the repository's nbgrader_config.py, in a
throwaway course, and checks each student's score in grades.csv.
"""
import csv
import zipfile

import nbformat
import pytest

from attncore.grading.course.downloads import parse
from attncore.grading.course.layout import WORK, function_of
from attncore.grading.engine import ASSIGNMENTS

from .gradekit import ROOT, Course, release_notebook, source_notebook, submission
from .test_tamper import last_wrong

ASSIGNMENT = "01-convention"
PAGE = ROOT / "book" / "instructors.md"


def points(assignment, counts=lambda meta: True):
    """The points of the source notebook's graded cells that `counts`."""
    notebook = nbformat.read(source_notebook(assignment), as_version=4)
    return sum(c.metadata["nbgrader"]["points"] for c in notebook.cells
               if c.metadata.get("nbgrader", {}).get("grade") and counts(c.metadata["nbgrader"]))


def auto(meta):
    return not meta.get("solution")  # test cells; graded solution cells are written answers


def test_the_page_gives_the_route_this_test_follows():
    text = " ".join(PAGE.read_text().split())
    for step in ("`<student-id>_<assignment>.ipynb`", "`.nbgrader/downloaded/<assignment>/archive/`",
                 "`nbgrader zip_collect <assignment>`", "`nbgrader autograde <assignment>`",
                 "`nbgrader export`", "`.nbgrader/grades.csv`",
                 "`python -m attncore.grading report <assignment>`",
                 "`python -m attncore.grading export <assignment> --lms canvas`",
                 "`python -m attncore.grading export <assignment> --lms moodle --out-of 100`",
                 "python -m attncore.grading autograde 03-masking --jobs 16",
                 "`nbgrader generate_assignment 03-masking`", "Directory not found. Creating"):
        assert step in text, f"book/instructors.md no longer says {step}"


@pytest.mark.parametrize("path, ids", [
    ("alice_03-masking.ipynb", ("alice", "03-masking.ipynb")),
    # the path below the extracted folder: its folders may have underscores
    ("class_zip/s123_03-masking.ipynb", ("s123", "03-masking.ipynb")),
    ("03-masking.ipynb", None),  # no student id: an error that names the file, not misfiled
])
def test_the_student_id_is_read_from_the_file_name_alone(path, ids):
    download = parse(path)
    assert (download and (download.lms_id, download.notebook)) == ids


@pytest.mark.slow
@pytest.mark.pipeline
def test_from_an_lms_zip_to_grades_csv(tmp_path):
    # folder names with underscores, as a user's home or a zip's own name may have
    (tmp_path / "my_course").mkdir()
    course = Course(tmp_path / "my_course", [ASSIGNMENT])
    course.generate(ASSIGNMENT)  # step 1 of the page (make exercises) on this machine
    last = ASSIGNMENTS[ASSIGNMENT][-1]
    wrong = last_wrong(ASSIGNMENT)
    assert wrong.function == last
    notebooks = {
        "alice": submission(ASSIGNMENT),  # right throughout
        "bob": nbformat.read(release_notebook(ASSIGNMENT), as_version=4),  # nothing written
        "carol": submission(ASSIGNMENT, {last: wrong.source}),  # the last function wrong
        "dave": submission(ASSIGNMENT),  # a notebook downloaded alone, not in the zip
    }
    total = points(ASSIGNMENT, auto)
    of_last = points(ASSIGNMENT, lambda m: auto(m) and function_of(m["grade_id"]) == last)
    expected = {"alice": total, "bob": 0, "carol": total - of_last, "dave": total}

    archive = course.root / WORK / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / f"{ASSIGNMENT}_submissions.zip", "w") as lms:
        for student in ("alice", "bob", "carol"):
            lms.writestr(f"{student}_{ASSIGNMENT}.ipynb", nbformat.writes(notebooks[student]))
    nbformat.write(notebooks["dave"], archive / f"dave_{ASSIGNMENT}.ipynb")

    collected = course.nbgrader("zip_collect", ASSIGNMENT)
    assert "WARNING" not in collected.stderr.replace(
        "WARNING] Directory not found. Creating", ""), collected.stderr
    submitted = course.root / WORK / "submitted"
    assert sorted(p.relative_to(submitted).as_posix() for p in submitted.rglob("*.ipynb")) == [
        f"{student}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" for student in sorted(notebooks)]

    course.nbgrader("autograde", ASSIGNMENT)  # verbatim: no --create, no --force
    course.nbgrader("export")
    with open(course.root / WORK / "grades.csv", newline="") as table:
        rows = {row["student_id"]: row for row in csv.DictReader(table)}
    assert sorted(rows) == sorted(notebooks)
    for student, score in expected.items():
        row = rows[student]
        assert row["assignment"] == ASSIGNMENT
        assert float(row["score"]) == pytest.approx(score), (student, row)
        assert float(row["max_score"]) == pytest.approx(points(ASSIGNMENT)), (student, row)
    assert 0 < expected["carol"] < total
