"""Each submission is graded once, on one core or on several (the red team's attempt 5,
/work/notes/redteam2.md): `python -m attncore.grading autograde --jobs 2` grades every
submission in its pool, and nbgrader then takes every one of those verdicts instead of
grading the notebook again, also for a notebook with a pasted copy of a graded cell
(NormaliseMetadata repairs it before nbgrader grades: the pool keys the repaired cells) and
with the limits written as ints in nbgrader_config.py (time_limit = 2 is the 2.0 nbgrader
grades with: the pool keys the options as GradeOutOfProcess's traits read them). A key
that did not match would have nbgrader grade the notebook a second time, and the
learner's code would spend its time budget twice.
"""
import re

import pytest

from .gradekit import Course, pasted, submission

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]
A = "01-convention"
LIMITS_AS_INTS = "\nc.GradeOutOfProcess.time_limit = 30\nc.GradeOutOfProcess.notebook_time_limit = 300\n"


def graded_ahead(result):
    """How many notebooks nbgrader took from the pool, from its summary line."""
    summary = next(line for line in result.stderr.splitlines() if line.startswith("[attncore]"))
    found = re.search(r"\((\d+) graded ahead in parallel\)", summary)
    return int(found[1]) if found else 0


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("graded-once"), [A])
    with open(course.root / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write(LIMITS_AS_INTS)
    course.generate(A)
    course.submit(A, "plain", submission(A))
    course.submit(A, "pasted", pasted(submission(A)))
    course.parallel = course.run("attncore.grading", "autograde", A, "--jobs", "2", "--create")
    course.grades_parallel = {s: course.grades(A, s) for s in ("plain", "pasted")}
    course.serial = course.nbgrader("autograde", A, "--force")
    course.grades_serial = {s: course.grades(A, s) for s in ("plain", "pasted")}
    return course


def test_nbgrader_grades_no_notebook_the_pool_graded(course):
    assert course.parallel.returncode == 0, course.parallel.stderr
    assert graded_ahead(course.parallel) == 2, course.parallel.stderr


def test_both_routes_give_the_same_full_grades(course):
    assert graded_ahead(course.serial) == 0
    assert course.grades_parallel == course.grades_serial
    for grades in course.grades_serial.values():
        assert all(g.score == g.max_score for g in grades if not g.manual)
