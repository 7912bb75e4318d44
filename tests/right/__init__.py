"""Correct solutions in the many styles learners write, one module per assignment.

Each module lists RIGHT: Right(function, style, source, note) entries. The fairness
tests (tests/test_fairness.py) drop each source into a submission in place of the
reference solution and require full marks through the out-of-process runner, the real
nbgrader autograde and the self-check: a correct solution gets every point whatever its
style, and warnings, prints, logging and helper functions never cost one.

note, when not empty, is a word the feedback's notes must contain (for example
"RuntimeWarning" or "stderr"): what the style printed or warned is reported to the
learner, as something that costs nothing.

A module's k-th solution of each function go into one submission together (style k of
every function), so helpers defined at the top level of a solution cell must not reuse
a name that another solution of the same rank defines differently (the tests check).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Right:
    function: str  # the graded function (its solution cell's grade_id)
    style: str  # how it is written, in a few words
    source: str  # the whole solution cell, as a learner would write it
    note: str = ""  # a word the notes of the feedback must contain ("" when it prints nothing)
