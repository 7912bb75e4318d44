"""A witness: one case of a suite as it ran, the evidence every diagnosis reads; what a
diagnosis finds; and the guard that keeps a diagnosis's own error from reaching a learner."""
import contextlib
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Witness:
    """One case, run: what went in (as made, before the call), what was expected, what the
    learner's function did (an engine.Outcome), and whether the grader found it right."""

    description: str
    arguments: dict
    expected: object
    outcome: object
    passed: bool
    costly: bool = False  # a case that measures memory: too large to run again and again

    @property
    def got(self):
        return self.outcome.returned

    @property
    def raised(self):
        return self.outcome.raised


@dataclass(frozen=True)
class Finding:
    """What a diagnosis found: a short stable headline (what the feedback's first line
    names), the sentence that says it with this input's numbers, and how to fix it."""

    headline: str
    detail: str
    fix: str = ""


STRICT_DETECTORS = "ATTNCORE_STRICT_DETECTORS"  # set to 1: a detector's error is raised


def guarded():
    """Where a detector, an on_error or a diagnosis runs: its exception is no verdict on the
    learner, so it is suppressed (what was found before it speaks instead), unless the
    environment sets ATTNCORE_STRICT_DETECTORS=1, as the catalogue tests do, so that a
    broken detector fails a test instead of going unseen."""
    if os.environ.get(STRICT_DETECTORS) == "1":
        return contextlib.nullcontext()
    return contextlib.suppress(Exception)
