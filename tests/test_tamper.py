"""No code a learner writes can buy points: tampering, at import time and at call time.

Each attempt sits in the solution cell of `attention` (01-convention), the last graded
function, wrapped around a wrong implementation (or none), so that it would gain points
only by defeating the grader. Through the self-check's runner and through nbgrader
autograde, every attempt scores zero for `attention`, the other functions keep full
marks, and the feedback says what happened. The learner's code runs in a worker that
never holds an expected value, so what these attempts replace is not the grader.
"""
import pytest

from .gradekit import Course, points_by_function, submission, verdicts

ASSIGNMENT = "01-convention"
WRONG = "def attention(Q, K, V):\n    return attention_weights(Q, K).T @ V\n"
TIME_LIMIT = 3.0

# name -> (solution cell of `attention`, what its feedback must say)
ATTEMPTS = {
    "setattr over sys.modules": ("""
import sys
for module in list(sys.modules.values()):
    for name in ("same", "allclose", "check", "run_suite"):
        if hasattr(module, name):
            try:
                setattr(module, name, lambda *a, **k: True)
            except Exception:
                pass
""" + WRONG, "weights transposed in the output"),
    "importlib replaces the checker": ("""
import importlib
importlib.import_module("attncore.grading").check = lambda *a, **k: None
""" + WRONG, "weights transposed in the output"),
    "vars() of numpy": ("""
vars(np)["allclose"] = lambda *a, **k: True
vars(np)["array_equal"] = lambda *a, **k: True
""" + WRONG, "weights transposed in the output"),
    "sys.modules of the engine": ("""
import sys
sys.modules["attncore.grading.engine.probe"].same = lambda *a, **k: True
""" + WRONG, "not defined"),
    "builtins": ("""
import builtins
builtins.isinstance = lambda *a: True
builtins.len = lambda x: 0
""" + WRONG, "process running your code ended"),
    "numpy.testing": ("""
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_equal = lambda *a, **k: None
""" + WRONG, "weights transposed in the output"),
    "frame inspection for the expected value": ("""
import sys
def attention(Q, K, V):
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("expected", "reference", "want"):
            if name in frame.f_locals:
                return frame.f_locals[name]
        frame = frame.f_back
    return attention_weights(Q, K).T @ V
""", "attention: "),
    "inspect.stack for the expected value": ("""
import inspect
def attention(Q, K, V):
    for info in inspect.stack():
        for value in info.frame.f_locals.values():
            if isinstance(value, np.ndarray) and value.shape == (Q.shape[0], V.shape[1]):
                return value
    return attention_weights(Q, K).T @ V
""", "attention: "),
    "set_custom_exc": ("""
get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)
""" + WRONG, "weights transposed in the output"),
    "showtraceback": ("""
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.showtraceback = lambda *a, **k: None
InteractiveShell._showtraceback = lambda *a, **k: None
""" + WRONG, "weights transposed in the output"),
    "a return value that equals anything": ("""
class Anything(np.ndarray):
    def __eq__(self, other):
        return True
def attention(Q, K, V):
    return np.zeros((Q.shape[0], V.shape[1])).view(Anything)
""", "wrong values"),
    "sys.exit at import": ("import sys\nsys.exit(0)\n" + WRONG, "not defined"),
    "sys.exit at call": ("""
import sys
def attention(Q, K, V):
    sys.exit(0)
""", "raised SystemExit"),
    "os._exit at import": ("import os\nos._exit(0)\n" + WRONG, "process running your code ended"),
    "os._exit at call": ("""
import os
def attention(Q, K, V):
    os._exit(0)
""", "process running your code ended"),
    "an endless loop at import": ("while True:\n    pass\n" + WRONG, "did not finish"),
    "an endless loop at call": ("""
def attention(Q, K, V):
    while True:
        pass
""", "no answer within"),
    "a huge allocation": ("""
def attention(Q, K, V):
    waste = np.ones((1 << 40,), dtype=np.uint8)
    return attention_weights(Q, K) @ V
""", "MemoryError"),
    "garbage on every pipe": ("""
import os
def attention(Q, K, V):
    for fd in range(3, 64):
        try:
            os.write(fd, b"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05{}{}{")
        except OSError:
            pass
    return attention_weights(Q, K).T @ V
""", "did not finish"),
}


def assert_only_attention_lost(points, name):
    score, most, messages = points["attention"]
    assert score == 0 < most, f"{name}: attention kept {score} / {most}"
    for function in ("attention_scores", "attention_weights"):
        assert points[function][0] == points[function][1], (name, function, points[function])
    return "\n".join(messages)


@pytest.mark.parametrize("name", list(ATTEMPTS))
def test_attempt_scores_zero_through_the_self_check_runner(name):
    source, says = ATTEMPTS[name]
    graded = verdicts(submission(ASSIGNMENT, {"attention": source}), time_limit=TIME_LIMIT)
    points = {f: (sum(v.passed for g, v in graded.items() if g.startswith(f + "-")),
                  sum(1 for g in graded if g.startswith(f + "-")),
                  [v.message for g, v in graded.items() if g.startswith(f + "-") and not v.passed])
              for f in ("attention_scores", "attention_weights", "attention")}
    feedback = assert_only_attention_lost(points, name)
    assert says in feedback, f"{name}: feedback does not say {says!r}:\n{feedback}"


@pytest.mark.xdist_group("tamper")
def test_every_attempt_scores_zero_through_nbgrader(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    students = {name: f"student{k}" for k, name in enumerate(ATTEMPTS)}
    for name, student in students.items():
        course.submit(ASSIGNMENT, student, submission(ASSIGNMENT, {"attention": ATTEMPTS[name][0]}))
    course.autograde(ASSIGNMENT, f"--GradeOutOfProcess.time_limit={TIME_LIMIT}")
    for name, student in students.items():
        feedback = assert_only_attention_lost(
            points_by_function(course.grades(ASSIGNMENT, student), ASSIGNMENT), name)
        assert ATTEMPTS[name][1] in feedback, f"{name}:\n{feedback}"
