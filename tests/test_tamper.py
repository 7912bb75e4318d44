"""No code a learner writes can buy points: tampering, at import time and at call time.

Each attempt sits in the solution cell of an assignment's last graded function (which no
other function calls), around a wrong solution of it from tests/wrong/, so that it could
gain points only by defeating the grader. Through the self-check's runner (each attempt
once, or in every assignment where it depends on the assignment's function: see CASES),
and through nbgrader autograde, for one assignment, every attempt scores zero for that
function, the other functions keep full marks, and the feedback says what happened. The
learner's code runs in a worker that never holds an expected value, so what these
attempts replace is not the grader.
"""
import functools

import pytest

from attncore.grading.course.layout import function_of
from attncore.grading.engine import ASSIGNMENTS

from .gradekit import Course, in_process_verdicts, points_by_function, submission, verdicts
from .test_catalogue import WRONG

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

TIME_LIMIT = 3.0
NAMED = "{misconception}"  # the feedback names the wrong solution's misconception

# At import time: code that runs before the wrong function is defined.
AT_IMPORT = {
    "setattr over sys.modules": ("""
import sys
for module in list(sys.modules.values()):
    for name in ("same", "allclose", "check", "run_suite"):
        if hasattr(module, name):
            try:
                setattr(module, name, lambda *a, **k: True)
            except Exception:
                pass
""", NAMED),
    "importlib replaces the checker": ("""
import importlib
importlib.import_module("attncore.grading").check = lambda *a, **k: None
""", NAMED),
    "vars() of numpy": ("""
import numpy
vars(numpy)["allclose"] = lambda *a, **k: True
vars(numpy)["array_equal"] = lambda *a, **k: True
""", NAMED),
    "sys.modules of the engine": ("""
import sys
sys.modules["attncore.grading.engine.probe"].same = lambda *a, **k: True
""", "not defined"),
    "builtins": ("""
import builtins
builtins.isinstance = lambda *a: True
builtins.len = lambda x: 0
""", "process running your code ended"),
    "numpy.testing": ("""
import numpy.testing
numpy.testing.assert_allclose = lambda *a, **k: None
numpy.testing.assert_array_equal = lambda *a, **k: None
""", NAMED),
    "set_custom_exc": ("""
get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)
""", NAMED),
    "showtraceback": ("""
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.showtraceback = lambda *a, **k: None
InteractiveShell._showtraceback = lambda *a, **k: None
""", NAMED),
    "sys.exit at import": ("import sys\nsys.exit(0)\n", "not defined"),
    "os._exit at import": ("import os\nos._exit(0)\n", "process running your code ended"),
    "an endless loop at import": ("while True:\n    pass\n", "did not finish"),
}

# At call time: a wrapper around the wrong function, named like it.
AT_CALL = {
    "frame inspection for the expected value": ("""
frame = sys._getframe(1)
while frame is not None:
    for name in ("expected", "reference", "want"):
        if name in frame.f_locals:
            return frame.f_locals[name]
    frame = frame.f_back
""", NAMED),
    "inspect.stack for the expected value": ("""
for info in inspect.stack():
    for name, value in info.frame.f_locals.items():
        if name in ("expected", "reference", "want"):
            return value
""", NAMED),
    "a return value that equals anything": ("""
out = wrong(*args)
return out.view(Anything) if isinstance(out, np.ndarray) else out
""", "{function}"),
    "sys.exit at call": ("sys.exit(0)\n", "raised SystemExit"),
    "os._exit at call": ("os._exit(0)\n", "process running your code ended"),
    "an endless loop at call": ("while True:\n    pass\n", "no answer within"),
    "a huge allocation": ("waste = np.ones((1 << 40,), dtype=np.uint8)\n", "MemoryError"),
    "garbage on every pipe": ("""
for fd in range(3, 64):
    try:
        os.write(fd, b"\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x05{}{}{")
    except OSError:
        pass
""", "did not finish"),
}

WRAPPER = """
import inspect, os, sys
import numpy as np

class Anything(np.ndarray):
    def __eq__(self, other):
        return True

{wrong_source}
wrong = {function}

def {function}(*args):
{trick}
    return wrong(*args)
"""


@functools.cache
def last_wrong(assignment):
    """A wrong solution of the assignment's last function (which no other function calls)
    that fails every suite of it: with it, a tamper attempt could only buy points."""
    function = ASSIGNMENTS[assignment][-1]
    for wrong in WRONG[assignment]:
        if wrong.function == function:
            graded = in_process_verdicts(submission(assignment, {function: wrong.source}))
            if not any(v.passed for g, v in graded.items() if function_of(g) == function):
                return wrong
    raise LookupError(f"no wrong {function} in tests/wrong fails every suite")


def attempt(assignment, name):
    """(the solution cell with the attempt, what the feedback must say)."""
    wrong = last_wrong(assignment)
    if name in AT_IMPORT:
        trick, says = AT_IMPORT[name]
        source = trick + wrong.source
    else:
        trick, says = AT_CALL[name]
        indented = "".join(f"    {line}\n" for line in trick.strip("\n").splitlines())
        source = WRAPPER.format(wrong_source=wrong.source, function=wrong.function,
                                trick=indented)
    return source, says.format(misconception=wrong.misconception, function=wrong.function)


def assert_only_the_last_lost(points, function, name):
    score, most, messages = points[function]
    assert score == 0 < most, f"{name}: {function} kept {score} / {most}"
    for other, (score, most, _) in points.items():
        if other != function:
            assert score == most, (name, other, score, most)
    return "\n".join(messages)


# Which attempts run in which assignments. What an attempt attacks is the worker process
# (its modules, its IPython shell, its pipes, its limits, its frames) and the runner that
# restarts it; every assignment's notebook runs in the same worker, so these attempts run
# once, in GENERIC_IN (the cheapest notebook). One attempt depends on the assignment's
# function: "a return value that equals anything" returns an ndarray subclass whose ==
# is always True, and whether the grader refuses it depends on what the last function
# returns (an array in most, a bool from is_row_stochastic, an int from kv_cache_bytes),
# which the grader validates and compares per function; it runs in every assignment.
GENERIC_IN = "01-convention"
PER_ASSIGNMENT = ["a return value that equals anything"]
assert set(PER_ASSIGNMENT) <= set(AT_IMPORT) | set(AT_CALL)
CASES = ([(GENERIC_IN, n) for n in [*AT_IMPORT, *AT_CALL] if n not in PER_ASSIGNMENT]
         + [(a, n) for a in ASSIGNMENTS for n in PER_ASSIGNMENT])


@pytest.mark.parametrize("assignment, name", CASES, ids=[f"{a}:{n}" for a, n in CASES])
def test_attempt_scores_zero_through_the_self_check_runner(assignment, name):
    source, says = attempt(assignment, name)
    function = ASSIGNMENTS[assignment][-1]
    graded = verdicts(submission(assignment, {function: source}), time_limit=TIME_LIMIT)
    points = {f: (sum(v.passed for g, v in graded.items() if function_of(g) == f),
                  sum(1 for g in graded if function_of(g) == f),
                  [v.message for g, v in graded.items() if function_of(g) == f and not v.passed])
              for f in ASSIGNMENTS[assignment]}
    feedback = assert_only_the_last_lost(points, function, name)
    assert says in feedback, f"{name}: feedback does not say {says!r}:\n{feedback}"


@pytest.mark.xdist_group("tamper")
def test_every_attempt_scores_zero_through_nbgrader(tmp_path):
    assignment = "01-convention"
    function = ASSIGNMENTS[assignment][-1]
    course = Course(tmp_path, [assignment])
    course.generate(assignment)
    students = {name: f"student{k}" for k, name in enumerate([*AT_IMPORT, *AT_CALL])}
    for name, student in students.items():
        course.submit(assignment, student,
                      submission(assignment, {function: attempt(assignment, name)[0]}))
    course.autograde(assignment, f"--GradeOutOfProcess.time_limit={TIME_LIMIT}")
    for name, student in students.items():
        feedback = assert_only_the_last_lost(
            points_by_function(course.grades(assignment, student), assignment), function, name)
        assert attempt(assignment, name)[1] in feedback, f"{name}:\n{feedback}"



# Through tracemalloc: a flash_attention that builds the whole score matrix, then tries
# to hide its peak from the memory suite: (imports at the top of the cell, the call).
HIDE_THE_PEAK = {
    "reset_peak": ("import tracemalloc\n", "tracemalloc.reset_peak()"),
    "clear_traces": ("import tracemalloc\n", "tracemalloc.clear_traces()"),
    "stop and start": ("import tracemalloc\n", "tracemalloc.stop(); tracemalloc.start()"),
    "the C module": ("import _tracemalloc\n", "_tracemalloc.reset_peak()"),
    "a name imported early": ("from tracemalloc import reset_peak\n", "reset_peak()"),
}
MATERIALISED = "the full (T_q, T_k) matrix materialised"


@pytest.mark.parametrize("name", HIDE_THE_PEAK)
def test_tracemalloc_calls_cannot_hide_the_peak(name):
    imports, call = HIDE_THE_PEAK[name]
    wrong = next(w for w in WRONG["05-flash"] if w.misconception == MATERIALISED)
    source = imports + WRAPPER.format(wrong_source=wrong.source, function=wrong.function,
                                      trick=f"    out = wrong(*args)\n    {call}\n    return out")
    graded = verdicts(submission("05-flash", {wrong.function: source}), time_limit=TIME_LIMIT)
    memory = [v for g, v in graded.items() if g.endswith("memory")]
    assert memory and not any(v.passed for v in memory), name
    assert all(MATERIALISED in v.message for v in memory), memory[0].message
