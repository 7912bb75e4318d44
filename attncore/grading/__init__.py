"""Grading that names the learner's mistake.

Test cells of the assignments call

    from attncore.grading import check
    check("softmax", softmax, "basic")

which runs the named suite of probes for that function on the learner's
implementation. On a mistake it raises an AssertionError whose message names the
misconception, shows the smallest input where it shows, what came back, what was
expected, and how to fix it. `python -m attncore.grading check NOTEBOOK` grades a
whole notebook through nbgrader for self-study.
"""
from . import guard
from .catalog import ASSIGNMENTS, SPECS, assignment_of
from .feedback import FeedbackError, install_ipython_handler
from .probe import Case, FunctionSpec, Misconception
from .probe import check as _check


def check(function_name, function, suite="basic"):
    """Probe the learner's `function` with suite `suite` of the spec named function_name."""
    if function_name not in SPECS:
        raise ValueError(f"no graded function named {function_name!r}; known: {sorted(SPECS)}")
    spec = SPECS[function_name]
    if suite not in spec.suites:
        raise ValueError(f"{function_name} has suites {sorted(spec.suites)}, not {suite!r}")
    _check(spec, function, suite)


install_ipython_handler()
guard.record_originals()

__all__ = ["ASSIGNMENTS", "Case", "FeedbackError", "FunctionSpec", "Misconception", "SPECS",
           "assignment_of", "check"]
