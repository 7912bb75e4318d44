"""Shared test configuration: the test tiers, Hypothesis profiles and common fixtures.

Test tiers are pytest markers (registered in pyproject.toml) that each test file gives its
tests: `pytestmark = [pytest.mark.slow, pytest.mark.pipeline]` at the top of a file, or
`@pytest.mark.slow` on a single test. A tier is the set of markers its tests carry:

- no marker: the fast inner loop, `make check` (`pytest -m "not slow"`): the library,
  the in-process catalogue of misconceptions, the self-check, and one real nbgrader
  autograde of one notebook. No browser, no wheel, no built site.
- `slow` alone: in process, but long (many seeds, cold Numba compiles, subprocesses).
- `slow` with `pipeline` (grading through real processes: the worker, nbgrader, the
  sandbox), `browser` and `book` (Chromium on the built site), `wheel` (the wheel in a
  fresh venv) or `model` (the model-test extra: PyTorch, transformers). Every tier but the
  inner loop has `slow`, so `make check` leaves it out and `make test` (everything, no -m)
  runs it; one tier alone: `pytest -m pipeline`, `-m browser`, ...

A test that carries a tier marker without `slow` stops the run: it would run in the inner
loop by mistake.

Worker groups (`--dist loadgroup`, `pytest.mark.xdist_group` in a file's pytestmark): tests
that share a costly fixture run on one worker. So do the files that compile the same
attncore.jit kernels, in two groups, "numba-flash" and "numba-decode": each kernel is then
compiled by one worker, and the two groups keep both workers busy on a cold cache.

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

# Two workers share two cores: a NumPy product split over two BLAS threads waits for the
# core the other worker holds. So one BLAS thread per worker unless the environment says
# otherwise; code that measures threads sets its own count (attncore.bench.blas_threads).
# OpenBLAS reads this when NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib.util  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

TIER_MARKERS = ("pipeline", "browser", "book", "wheel", "model")  # each comes with slow

# Test files that import the model-test extra at the top (test_mask_conventions.py skips
# itself without PyTorch). `make test` installs the extra and `make check` does not: where
# it is missing they are not collected, except under CI, where `make test` installed it.
NEEDS_MODEL_TEST = {"test_mask_conventions.py": "torch"}


def _model_test_missing(name):
    module = NEEDS_MODEL_TEST.get(name)
    return module is not None and not os.environ.get("CI") and importlib.util.find_spec(module) is None


def pytest_ignore_collect(collection_path, config):
    """Leave out the files whose imports need the model-test extra, where it is missing."""
    return True if _model_test_missing(collection_path.name) else None


def pytest_report_header(config):
    left_out = sorted(name for name in NEEDS_MODEL_TEST if _model_test_missing(name))
    if left_out:
        return (f"not collected, no PyTorch (pip install -c constraints.txt -e '.[model-test]'): "
                f"{', '.join(left_out)}")
    return None


def pytest_collection_modifyitems(config, items):
    """Refuse a test with a tier marker but not `slow`: `make check` would run it."""
    stray = [item.nodeid for item in items
             if not item.get_closest_marker("slow") and any(item.get_closest_marker(m) for m in TIER_MARKERS)]
    if stray:
        raise pytest.UsageError(f"tests with a tier marker ({', '.join(TIER_MARKERS)}) must also be "
                                f"marked slow: {', '.join(stray[:5])}" + (" ..." if len(stray) > 5 else ""))


def pytest_configure(config):
    """Refuse `--dist loadgroup` where it silently does not group: pytest-xdist up to 3.8
    marks a grouped test by a suffix of its node id, which pytest 9.2 ignores (pytest-xdist
    issue 1386), so a group's tests would be spread over the workers and build their shared
    fixtures (a graded course, a model) once per worker."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    import xdist

    xdist_version = tuple(int(part) for part in xdist.__version__.split(".")[:2])
    if pytest.version_tuple[:2] >= (9, 2) and xdist_version <= (3, 8):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} with pytest-xdist {xdist.__version__} does not group "
            "--dist loadgroup (pytest-xdist issue 1386): install the pytest the dev extra of "
            "pyproject.toml names")


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
