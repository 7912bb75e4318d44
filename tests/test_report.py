"""The class report's parts, without a course: which misconceptions a notebook's verdicts
name, how they are counted, the book section each one points to, and the page. The
report of a real class, in Chromium: tests/test_instructor_week.py."""
import json
import re
from collections import Counter

import pytest

from attncore.grading.course import report_page
from attncore.grading.course.layout import VERDICT_KEY
from attncore.grading.course.report import Student, counts, named_in
from attncore.grading.course.report_page import book_sections, histogram, render, section_of
from attncore.grading.engine import ASSIGNMENTS, SPECS

from .gradekit import ROOT

pytestmark = []  # the fast tier (tests/conftest.py)
A = "01-convention"
SECTIONS = book_sections(ROOT / "book")


def test_every_misconception_points_to_a_section_the_book_has():
    labels = {*report_page.SECTION_OF_ASSIGNMENT.values(), *report_page.SECTION_OF_FUNCTION.values(),
              *(label for _, label in report_page.SECTION_OF_WORDS)}
    assert labels <= set(SECTIONS), labels - set(SECTIONS)
    assert set(report_page.SECTION_OF_ASSIGNMENT) == set(ASSIGNMENTS)
    for assignment, functions in ASSIGNMENTS.items():
        for function in functions:
            for misconception in SPECS[function].misconceptions:
                assert section_of(assignment, function, misconception.name) in SECTIONS
    assert section_of("03-masking", "masked_softmax", "finite sentinel too weak for the scores") \
        == "ch3-sentinels"
    assert SECTIONS["ch3-sentinels"] == ("03-masking", "Finite sentinels: when they work and when they break")


def notebook_with(tmp_path, verdicts):
    """An autograded notebook whose test cells carry these verdicts' metadata."""
    cells = [{"cell_type": "code", "source": "", "outputs": [], "metadata": {
        "nbgrader": {"grade_id": f"{v['function']}-{k}"}, VERDICT_KEY: v}} for k, v in enumerate(verdicts)]
    path = tmp_path / f"{A}.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_notebook_names_each_catalogued_misconception_once_and_nothing_else(tmp_path):
    def verdict(function, passed, misconception):
        return {"function": function, "suite": "hidden", "passed": passed,
                "misconception": misconception, "seed": 1}

    path = notebook_with(tmp_path, [
        verdict("attention", False, "softmax over the wrong axis"),
        verdict("attention", False, "softmax over the wrong axis"),  # a second suite: once
        verdict("attention_scores", False, "your function raised ValueError: no"),  # no name
        verdict("attention_scores", False, "not written yet"),  # not a misconception
        verdict("attention_weights", True, ""),
        verdict("attention_weights", False, "NaN or inf in the output"),  # a generic one
        verdict("not_a_function", False, "softmax over the wrong axis"),
    ])
    assert named_in(path) == [("attention", "softmax over the wrong axis"),
                              ("attention_weights", "NaN or inf in the output")]


def test_counts_are_students_per_function_in_the_assignments_order():
    rows = [Student("a", "graded", 3, 11, [("attention", "x"), ("attention_scores", "y")]),
            Student("b", "graded", 5, 11, [("attention", "x")]),
            Student("c", "ungradable", None, 11, [], "not a notebook")]
    tally = counts(rows, A)
    assert list(tally) == ASSIGNMENTS[A]
    assert tally == {"attention_scores": Counter(y=1), "attention_weights": Counter(),
                     "attention": Counter(x=2)}


@pytest.mark.parametrize("scores, most", [([0, 6, 9, 9, 9], 11), ([12.5, 40, 40, 3], 40), ([], 13)])
def test_the_histogram_has_a_bar_per_score_and_says_so_in_words(scores, most):
    svg = histogram(scores, most)
    if not scores:
        assert "No graded submission" in svg
        return
    heights = [float(h) for h in re.findall(r'height="([\d.]+)" fill', svg)]
    bins = min(20, round(most) + 1)
    width = most / (bins - 1)
    expected = Counter(min(bins - 1, round(score / width)) for score in scores)
    assert len(heights) == bins
    assert [k for k, h in enumerate(heights) if h > 0] == sorted(expected)
    top = max(expected.values())
    assert all(heights[k] == pytest.approx(heights[max(expected, key=expected.get)] * n / top, abs=0.2)
               for k, n in expected.items())
    label = re.search(r'aria-label="Scores: ([^"]*)"', svg)[1]
    assert label.count(" at ") == len(expected)


def test_the_page_escapes_what_students_named_their_files(tmp_path):
    rows = [Student("<script>alert(1)</script>", "ungradable", None, 11, [], "<img src=x onerror=1>"),
            Student("b", "graded", 9, 11, [("attention", "softmax over the wrong axis")])]
    page = render(A, rows, counts(rows, A), tmp_path)
    assert "<script>alert" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Chapter 1, Common mistakes: swapping the axes" in page  # the clone's book
    assert "<script" not in page.lower() and "http" not in page.lower()  # nothing to fetch
