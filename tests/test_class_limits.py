"""What autograde reads of a submission before any time limit runs: a notebook larger than a
submission may be (in bytes or in cells) and a timestamp.txt nbgrader cannot read are
recorded as ungradable, with one sentence of reason, and the class goes on
(course.contain). The second red team's 300,000-cell notebook held the grader for 147 s
outside every budget, and a timestamp of control characters failed its student with no
record."""
import json

import nbformat
import pytest

from attncore.grading.course import ungradable
from attncore.grading.course.contain import read_within
from attncore.grading.course.layout import WORK
from attncore.grading.course.reading import TooLarge, reason_timestamp_unreadable

from .gradekit import Course, points_by_function, submission

pytestmark = []  # the fast tier (tests/conftest.py); the class below is slow and pipeline

ASSIGNMENT = "02-simplex"


def _with_cells(notebook, count):
    notebook = nbformat.from_dict(json.loads(nbformat.writes(notebook)))
    notebook.cells.extend(nbformat.v4.new_markdown_cell("") for _ in range(count))
    return notebook


def test_a_notebook_within_both_limits_reads_as_nbformat_reads_it(tmp_path):
    path = tmp_path / "n.ipynb"
    nbformat.write(submission(ASSIGNMENT), path)
    assert read_within(str(path), max_bytes=1 << 20, max_cells=100) == \
        nbformat.read(path, as_version=4)


def test_more_cells_than_allowed_are_refused_before_nbformat_reads_them(tmp_path):
    path = tmp_path / "n.ipynb"
    notebook = _with_cells(submission(ASSIGNMENT), 300)
    nbformat.write(notebook, path)
    with pytest.raises(TooLarge, match=f"holds {len(notebook.cells)} cells, more than the 200 a "
                                       r"submission may hold \(ContainedExporter.max_cells\)"):
        read_within(str(path), max_bytes=1 << 20, max_cells=200)
    assert read_within(str(path), max_bytes=1 << 20, max_cells=len(notebook.cells)).cells


def test_cells_of_a_version_3_notebook_count_in_every_worksheet(tmp_path):
    path = tmp_path / "v3.ipynb"
    sheet = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "x"}] * 3, "metadata": {}}
    path.write_text(json.dumps({"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                "worksheets": [sheet, sheet]}))
    with pytest.raises(TooLarge, match="holds 6 cells"):
        read_within(str(path), max_bytes=1 << 20, max_cells=5)
    assert len(read_within(str(path), max_bytes=1 << 20, max_cells=6).cells) == 6


def test_a_file_over_the_size_is_refused_unparsed(tmp_path):
    path = tmp_path / "big.ipynb"
    path.write_bytes(b"{" + b" " * (2 << 20))  # not even JSON: the size is all that is read
    with pytest.raises(TooLarge, match="larger than the 1 MiB a submission may be"):
        read_within(str(path), max_bytes=1 << 20, max_cells=10)


@pytest.mark.parametrize("written, readable", [
    ("2026-12-01 10:00:00.000000 UTC", True),
    ("2026-12-01T10:00:00+01:00", True),
    ("", True),  # nbgrader takes an empty file for no time
    ("\x1b]0;OWNED\x07\x1b[2K", False),
    ("2026-13-45", False),
    ("99999999999999999999", False),  # OverflowError, not ValueError
    ("2026-12-01 10:00:00 +99999999999", False),
    ("2026-12-01 " + "9" * 500, False),  # longer than any time
    (b"\xff\xfe not UTF-8", False),
])
def test_a_timestamp_is_readable_exactly_when_nbgrader_can_parse_it(tmp_path, written, readable):
    from nbgrader.utils import parse_utc

    path = tmp_path / "timestamp.txt"
    path.write_bytes(written if isinstance(written, bytes) else written.encode())
    reason = reason_timestamp_unreadable(path)
    assert (reason is None) == readable, reason
    if readable and written:
        parse_utc(written)  # nbgrader agrees
    if not readable:
        assert "not a time nbgrader can read" in reason and "\x1b" not in reason
    assert reason_timestamp_unreadable(tmp_path / "none.txt") is None


@pytest.mark.slow
@pytest.mark.pipeline
def test_what_is_too_large_or_undated_is_recorded_and_the_class_goes_on(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    (tmp_path / "nbgrader_config.py").write_text(
        (tmp_path / "nbgrader_config.py").read_text()
        + "\nc.ContainedExporter.max_cells = 500\nc.ContainedExporter.max_bytes = 2 << 20\n")
    honest = submission(ASSIGNMENT)
    course.submit(ASSIGNMENT, "a-honest", honest)
    course.submit(ASSIGNMENT, "b-many-cells", _with_cells(honest, 600))
    oversized = _with_cells(honest, 0)
    oversized.cells.append(nbformat.v4.new_markdown_cell("x" * (3 << 20)))
    course.submit(ASSIGNMENT, "c-oversized", oversized)
    for student, stamp in (("d-escapes", "\x1b]0;OWNED\x07"), ("e-overflow", "9" * 20)):
        course.submit(ASSIGNMENT, student, honest)
        (tmp_path / WORK / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(stamp)

    with pytest.raises(RuntimeError) as failed:  # exit 1: some submissions are ungradable
        course.autograde(ASSIGNMENT)
    assert "\x1b]0;OWNED" not in str(failed.value)
    recorded = ungradable.read(course.root, ASSIGNMENT)
    assert set(recorded) == {"b-many-cells", "c-oversized", "d-escapes", "e-overflow"}, recorded
    assert "more than the 500 a submission may hold" in recorded["b-many-cells"]
    assert "larger than the 2 MiB" in recorded["c-oversized"]
    assert all("not a time nbgrader can read" in recorded[s] for s in ("d-escapes", "e-overflow"))
    assert points_by_function(course.grades(ASSIGNMENT, "a-honest"), ASSIGNMENT)["softmax"][:2] == (4, 4)

    # the instructor writes the time it was submitted; the next grading clears the record
    stamp = tmp_path / WORK / "submitted" / "d-escapes" / ASSIGNMENT / "timestamp.txt"
    stamp.write_text("2026-12-01 10:00:00.000000 UTC")
    course.autograde(ASSIGNMENT, "--student=d-escapes")
    assert "d-escapes" not in ungradable.read(course.root, ASSIGNMENT)
    assert points_by_function(course.grades(ASSIGNMENT, "d-escapes"), ASSIGNMENT)["softmax"][:2] == (4, 4)


def test_the_parallel_pool_reads_within_the_same_limits(tmp_path):
    """`python -m attncore.grading autograde --jobs N` grades ahead in a pool, which reads
    each notebook itself: one over the limits is left to nbgrader, which records it."""
    from attncore.grading.course.parallel import grade_ahead

    path = tmp_path / "n.ipynb"
    nbformat.write(_with_cells(submission(ASSIGNMENT), 300), path)
    target = tmp_path / "ahead.json"
    student, error = grade_ahead(("s", ASSIGNMENT, str(path), str(target), 1, "", {}, None,
                                  (1 << 20, 200)))
    assert student == "s" and error.startswith("TooLarge: n.ipynb holds") and not target.exists()
