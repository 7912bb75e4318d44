"""Wrong solutions, written as learners write them, one module per assignment.

Each module lists WRONG: Wrong(function, misconception, source) entries. The
feedback tests drop each source into a submission in place of the reference
solution and require the real nbgrader autograde to take points off and to name
the misconception in the feedback.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    function: str  # the graded function (its solution cell's grade_id)
    misconception: str  # the name the feedback must contain
    source: str  # the whole solution cell, as a learner would write it
