"""Shared test configuration: Hypothesis profiles and common fixtures.

Hypothesis profiles (select with the HYPOTHESIS_PROFILE environment variable):

- "ci" (default): derandomized, so every run of the suite (a laptop, CI on a fresh
  clone) tests the same examples and a failure reproduces exactly; no deadline,
  because timings of NumPy code on shared CI machines are noisy; no example
  database, since derandomized runs replay nothing from it (Hypothesis may still
  cache constants under .hypothesis/, which .gitignore covers).
- "dev": randomized with more examples, for hunting bugs locally:
  HYPOTHESIS_PROFILE=dev python -m pytest tests
"""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# tests/reference.py is imported as `reference` by the test modules; make that
# independent of pytest's import mode.
sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=500,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    """A seeded generator: every test that uses it sees the same numbers on every run."""
    return np.random.default_rng(20240521)


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request):
    """Both floating dtypes the library promises to preserve."""
    return request.param


_OUTCOMES = {}  # assignment -> [wrong solutions, caught, named], from test_catalogue.py


def pytest_runtest_logreport(report):
    """Collect the outcomes the wrong-solution tests record (works across xdist workers)."""
    if report.when == "call":
        for key, value in report.user_properties:
            if key == "misconception_outcome":
                assignment, caught, named = value
                counts = _OUTCOMES.setdefault(assignment, [0, 0, 0])
                counts[0] += 1
                counts[1] += bool(caught)
                counts[2] += bool(named)


def pytest_terminal_summary(terminalreporter):
    """Print how many wrong solutions the grader caught and named, per assignment."""
    if not _OUTCOMES:
        return
    terminalreporter.section("wrong solutions caught and named by the grader")
    for assignment, (total, caught, named) in sorted(_OUTCOMES.items()):
        terminalreporter.line(f"{assignment}: {total} wrong solutions, {caught} lost points, "
                              f"{named} named their misconception")
