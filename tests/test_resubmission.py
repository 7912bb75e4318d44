"""Tables of hidden cases earn nothing, through nbgrader autograde (the red team's attacks 27
and 28, /work/notes/redteam2.md), and an honest student's grade does not move.

One course of 02-simplex, graded, then a student resubmits and everyone is regraded:

- "resubmitted": a wrong softmax (the scores returned as they are); then, resubmitted, the
  same code plus a table of every case its first grading drew, built at home from the seed
  its feedback shows and the installed engine (the hidden tests are public). The draw is
  keyed by the submitted code, so the resubmission draws new cases: the table answers none,
  and the seed shown the first time did not predict the second;
- "table": a wrong is_row_stochastic that accepts NaN rows, plus a table of the answers of
  every written case of its hidden suites (the cases a learner's own check runs, which
  before every hidden case drew its inputs were what autograde ran for 40 of them); "wrong"
  is the same code without the table: both get the same points, in both gradings;
- "honest": the reference, full marks, the same grade, feedback and seed at the regrade;
- "ragged": a wrong softmax that returns a ragged list whenever its output is not finite
  (attack 29): an automatic 0 where it does, not a grader error left for manual grading.
"""
import copy
import re

import numpy as np
import pytest

from attncore.grading.course.layout import WORK
from attncore.grading.engine import SPECS
from attncore.grading.engine.probe import VISIBLE_SUITES, drawing, graded_cases

from .gradekit import Course, submission
from .test_catalogue import WRONG

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]
A = "02-simplex"
WRONG_SOFTMAX = "def softmax(scores):\n    return scores.copy()\n"
RAGGED_SOFTMAX = ("import numpy as np\ndef softmax(scores):\n    e = np.exp(scores)\n"
                  "    w = e / e.sum(axis=-1, keepdims=True)\n"
                  "    return w if np.isfinite(w).all() else [[1.0], [1.0, 2.0]]\n")
NAN_ACCEPTED = next(w.source for w in WRONG[A] if w.function == "is_row_stochastic"
                    and w.misconception == "NaN rows accepted")  # the catalogue's first


def key(*arrays):
    return repr([(np.shape(a), np.asarray(a).dtype.str, np.asarray(a).tobytes().hex())
                 for a in arrays])


def with_table(function, wrong, table, key_of):
    """The wrong function, answering from table where its key (key_of: source of a key
    expression over the function's arguments) is there."""
    parameters = "W, atol=None" if function == "is_row_stochastic" else "scores"
    return (f"import numpy as np\n{wrong.replace(f'def {function}(', 'def _mine(')}\n"
            f"_TABLE = {table!r}\n"
            f"def _key(*arrays):\n"
            f"    return repr([(np.shape(a), np.asarray(a).dtype.str, "
            f"np.asarray(a).tobytes().hex()) for a in arrays])\n"
            f"def {function}({parameters}):\n"
            f"    found = _TABLE.get({key_of})\n"
            f"    if found is None:\n"
            f"        return _mine({parameters.replace('=None', '')})\n"
            f"    return found if isinstance(found, bool) else np.frombuffer(\n"
            f"        bytes.fromhex(found[2]), dtype=found[1]).reshape(found[0]).copy()\n")


def table_of_written_cases():
    """{(W, atol) key: answer} of every written case of is_row_stochastic's hidden suites."""
    spec = SPECS["is_row_stochastic"]
    table = {}
    for suite in (suite for suite in spec.suites if suite not in VISIBLE_SUITES):
        for case, _ in graded_cases(spec, suite):
            arguments = case.make()
            atol = arguments.get("atol")
            table[key(arguments["W"]) + repr(atol)] = spec.reference(*copy.deepcopy(
                list(arguments.values())))
    return table


def table_of_a_draw(seed):
    """{scores key: (shape, dtype, hex)} of every case softmax's grading with seed runs."""
    spec = SPECS["softmax"]
    table = {}
    for suite in spec.suites:
        for case, draw in graded_cases(spec, suite, seed):
            with drawing(draw):
                scores = case.make()["scores"]
            answer = spec.reference(scores.copy())
            table[key(scores)] = (answer.shape, answer.dtype.str, answer.tobytes().hex())
    return table


def seed_shown(grades):
    (seed,) = {int(s) for g in grades for s in re.findall(r"drawn with seed (\d+)", g.output)}
    return seed


def points(grades, function):
    return {g.grade_id: g.score for g in grades if g.grade_id.startswith(f"{function}-")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("resubmission"), [A])
    course.generate(A)
    students = {"honest": submission(A),
                "resubmitted": submission(A, {"softmax": WRONG_SOFTMAX}),
                "table": submission(A, {"is_row_stochastic": with_table(
                    "is_row_stochastic", NAN_ACCEPTED, table_of_written_cases(),
                    "_key(W) + repr(atol)")}),
                "wrong": submission(A, {"is_row_stochastic": NAN_ACCEPTED}),
                "ragged": submission(A, {"softmax": RAGGED_SOFTMAX})}
    for student, notebook in students.items():
        course.submit(A, student, notebook)
    course.autograde(A)
    first = {student: course.grades(A, student) for student in students}
    table = table_of_a_draw(seed_shown(first["resubmitted"]))
    course.submit(A, "resubmitted", submission(A, {"softmax": with_table(
        "softmax", WRONG_SOFTMAX, table, "_key(scores)")}))
    course.autograde(A)
    course.first, course.again = first, {student: course.grades(A, student) for student in students}
    course.table = table
    return course


def test_a_resubmission_with_a_table_of_its_first_draw_earns_nothing(graded):
    before, after = graded.first["resubmitted"], graded.again["resubmitted"]
    assert len(graded.table) >= 13  # every case of every suite of softmax, visible ones too
    assert seed_shown(after) != seed_shown(before)
    assert set(points(before, "softmax").values()) == {0.0}
    assert points(after, "softmax") == points(before, "softmax")
    assert points(after, "is_row_stochastic") == points(before, "is_row_stochastic")


def test_a_table_of_the_written_cases_earns_no_hidden_cell(graded):
    for grading in (graded.first, graded.again):
        wrong = points(grading["wrong"], "is_row_stochastic")
        assert wrong["is_row_stochastic-edge"] == 0.0
        assert points(grading["table"], "is_row_stochastic") == wrong


def test_the_honest_student_keeps_full_marks_the_same_feedback_and_the_same_draw(graded):
    before, after = graded.first["honest"], graded.again["honest"]
    assert after == before
    assert all(g.score == g.max_score for g in before if not g.manual)
    assert seed_shown(before) not in {seed_shown(graded.first[s]) for s in ("table", "wrong")}


def test_a_ragged_result_is_an_automatic_zero_not_a_grader_error(graded):
    from nbgrader.api import Gradebook

    from attncore.grading.engine.probe import NOT_AN_ARRAY

    scores = points(graded.first["ragged"], "softmax")
    assert scores["softmax-basic"] == 1.0 and scores["softmax-extreme"] == 0.0, scores
    extreme = next(g for g in graded.first["ragged"] if g.grade_id == "softmax-extreme")
    assert extreme.message.startswith(f"softmax: {NOT_AN_ARRAY}")
    with Gradebook(f"sqlite:///{graded.root / WORK / 'gradebook.db'}") as gradebook:
        grade = gradebook.find_grade("softmax-extreme", A, A, "ragged")
        assert grade.auto_score == 0.0 and not grade.needs_manual_grade
