"""The red team's attempts of 6 Dec 2026 (a01-a17), each through the instructor's real route
(`nbgrader generate_assignment`, submissions, `nbgrader autograde`), with honest students
graded in the same run: no notebook stops the class, earns points for code the exercise
forbids, or reaches the instructor's terminal. The earlier red team's attempts are in
tests/test_tamper.py and tests/test_sandbox.py.
"""
import copy
import json
import os

import nbformat
import pytest
from nbformat.corpus.words import generate_corpus_id

from attncore.grading.course import sandbox, ungradable
from attncore.grading.course.layout import WORK

from .gradekit import Course, auto_points, points_by_function, submission
from .test_tamper import last_wrong

pytestmark = [pytest.mark.slow, pytest.mark.pipeline,
              pytest.mark.skipif(sandbox.available() is not None and not os.environ.get("CI"),
                                 reason=f"no sandbox here: {sandbox.available()}")]
ESCAPES = "\x1b]0;OWNED-TITLE\x07\x1b[1A\x1b[2K\x1b[8m"


def pasted(notebook, *grade_ids):
    """The notebook with a copy of each named cell pasted above it, as Jupyter pastes one
    (the copy keeps the cell's metadata)."""
    for grade_id in grade_ids:
        at = next(k for k, c in enumerate(notebook.cells)
                  if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        notebook.cells.insert(at, copy.deepcopy(notebook.cells[at]))
        notebook.cells[at].id = generate_corpus_id()  # Jupyter gives a paste its own id
    return notebook


def edited(notebook, change):
    change(notebook)
    return notebook


def with_source(notebook, index, source):
    """The notebook's JSON text with one cell's source replaced by any JSON value."""
    data = json.loads(nbformat.writes(notebook))
    data["cells"][index]["source"] = source
    return json.dumps(data)


# ---------------------------------------------------------------- a05, a07, a08, a11

ASSIGNMENT = "02-simplex"


def metadata_attempts():
    """{student: (the submission, what its automatic points must be)}: the honest ones
    keep full marks, the forged ones earn nothing for the function they forge, and the
    files that are no notebook are recorded as ungradable (points None)."""
    wrong = last_wrong(ASSIGNMENT)
    forged_cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade_id": "softmax-extreme2", "grade": True, "points": 50, "solution": False,
        "locked": True, "schema_version": 3}})
    escape_cell = nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": {
        "grade_id": ESCAPES, "grade": True, "points": 1, "solution": False, "locked": True,
        "schema_version": 3}})

    def raw_tests(notebook):
        for cell in notebook.cells:
            if cell.metadata["nbgrader"].get("grade_id", "").startswith(wrong.function + "-"):
                cell.cell_type = "raw"
                del cell["outputs"], cell["execution_count"]

    def points_100(notebook):
        for cell in notebook.cells:
            if cell.metadata["nbgrader"].get("grade"):
                cell.metadata["nbgrader"]["points"] = 100

    full, lost = 7, 7 - 3  # is_row_stochastic's three test cells are worth 3
    return {
        "a-pasted-cells": (pasted(submission(ASSIGNMENT), "worked-example-code",
                                  "softmax-basic", "softmax"), full),
        "b-schema-99": (edited(submission(ASSIGNMENT), lambda nb: nb.cells[6].metadata[
            "nbgrader"].update(schema_version=99)), full),
        "c-schema-0": (edited(submission(ASSIGNMENT), lambda nb: nb.cells[3].metadata.update(
            nbgrader={})), full),
        "d-escape-grade-id": (edited(submission(ASSIGNMENT),
                                     lambda nb: nb.cells.append(escape_cell)), full),
        "e-forged-cell": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                 lambda nb: nb.cells.append(forged_cell)), lost),
        "f-points-100": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                points_100), lost),
        "g-raw-tests": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                               raw_tests), lost),
        "h-not-json": ("{not json" + ESCAPES, None),
        "i-nbformat-99": ('{"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}', None),
        "j-source-a-number": (with_source(submission(ASSIGNMENT), 5, 12), None),
        "zzz-honest": (submission(ASSIGNMENT), full),
    }


REASONS = {"h-not-json": "02-simplex.ipynb is not a Jupyter notebook (NotJSONError): nothing graded",
           "i-nbformat-99": "02-simplex.ipynb is a notebook of a format nbgrader cannot read",
           "j-source-a-number": "02-simplex.ipynb is not a valid Jupyter notebook"}


@pytest.mark.xdist_group("red-team-metadata")
def test_no_metadata_stops_the_class_and_what_cannot_be_graded_is_recorded(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    attempts = metadata_attempts()
    for student, (notebook, _) in attempts.items():
        if isinstance(notebook, str):
            folder = course.root / WORK / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            (folder / f"{ASSIGNMENT}.ipynb").write_text(notebook)
        else:
            course.submit(ASSIGNMENT, student, notebook)

    with pytest.raises(RuntimeError) as failed:  # exit 1: some submissions are ungradable
        course.autograde(ASSIGNMENT)
    log = str(failed.value)

    assert "\x1b" not in log and "\x07" not in log, "a submission's escapes reached the terminal"
    recorded = ungradable.read(course.root, ASSIGNMENT)
    assert set(recorded) == set(REASONS), recorded
    for student, reason in REASONS.items():
        assert recorded[student].startswith(reason), recorded[student]
        assert f"There was an error processing assignment '{ASSIGNMENT}' for student '{student}'" in log
    for student, (_, points) in attempts.items():
        if points is not None:
            assert auto_points(course.grades(ASSIGNMENT, student)) == (points, 7), student
    assert "cell 'softmax-basic' appears 2 times" in log  # what was repaired is logged

    # The instructor asks for the file again; a successful grade clears the record.
    course.submit(ASSIGNMENT, "h-not-json", submission(ASSIGNMENT))
    course.autograde(ASSIGNMENT, "--student=h-not-json")
    assert set(ungradable.read(course.root, ASSIGNMENT)) == set(REASONS) - {"h-not-json"}
    assert points_by_function(course.grades(ASSIGNMENT, "h-not-json"), ASSIGNMENT)["softmax"][:2] == (4, 4)
