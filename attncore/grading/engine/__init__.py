"""The grading engine, NumPy only: specs of the graded functions, probes, feedback.

It never runs a learner's function itself: run_suite is given a `call` that runs the
function somewhere (in the learner's kernel for quick feedback, or in a worker process
for the grade that counts) and reports what happened as an Outcome.
"""
from .feedback import FeedbackError
from .probe import Case, FunctionSpec, Misconception, Outcome, Verdict, run_suite
from .suites import ASSIGNMENTS, SPECS

__all__ = ["ASSIGNMENTS", "Case", "FeedbackError", "FunctionSpec", "Misconception", "Outcome",
           "SPECS", "Verdict", "run_suite"]
