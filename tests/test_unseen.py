"""A class of wrong solutions nobody catalogued is caught, and named by its behaviour.

tests/unseen/ was written without the catalogue of tests/wrong/: each solution
replaces the reference in a submission, whose test cells are graded in this process
(tests.gradekit.in_process_verdicts, the engine and suites of nbgrader autograde). Every
one must lose points for its function, and at least 95% must be named: a headline that is
not the generic one, and a detail that says what the code does (tests.unseen.names).
`python -m tests.unseen` measures the same through nbgrader autograde.
"""
import importlib

import pytest

from attncore.grading.course.layout import function_of

from .gradekit import SUITE_MODULE, in_process_verdicts, submission
from .test_catalogue import only_tests_of
from .unseen import names

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # the fast inner loop: no tier marker
UNSEEN = {a: importlib.import_module(f"tests.unseen.{m}").UNSEEN for a, m in SUITE_MODULE.items()}
ALL = [(a, u) for a, entries in UNSEEN.items() for u in entries]


def grade(assignment, unseen):
    """The failing cells' messages of unseen's function, graded in this process."""
    notebook = only_tests_of(submission(assignment, {unseen.function: unseen.source}),
                             unseen.function)
    return [v.message for gid, v in in_process_verdicts(notebook).items()
            if function_of(gid) == unseen.function and not v.passed]


def test_the_class_covers_every_function_with_a_hundred_solutions():
    from attncore.grading.engine import ASSIGNMENTS

    assert len(ALL) >= 100
    for assignment, functions in ASSIGNMENTS.items():
        assert {u.function for u in UNSEEN[assignment]} == set(functions), assignment


def test_every_unseen_solution_is_caught_and_95_percent_are_named():
    missed, unnamed = [], []
    for assignment, unseen in ALL:
        messages = grade(assignment, unseen)
        if not messages:
            missed.append((unseen.function, unseen.behaviour))
        elif not names(unseen, messages):
            unnamed.append((unseen.function, unseen.behaviour, messages[0][:400]))
    assert not missed, missed
    assert len(unnamed) <= 0.05 * len(ALL), unnamed
