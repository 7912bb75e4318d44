"""Wrong solutions, written as learners write them, one module per assignment.

Each module lists WRONG: Wrong(function, misconception, source) entries.
tests/test_catalogue.py drops each source into a submission in place of the
reference solution, grades it with the engine, and requires points off for that
function and feedback that names the misconception.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Wrong:
    function: str  # the graded function (its solution cell's grade_id)
    misconception: str  # the name the feedback must contain
    source: str  # the whole solution cell, as a learner would write it
