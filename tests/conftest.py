"""Shared test configuration: the test tiers, Hypothesis profiles and common fixtures.

Test tiers (the markers are registered in pyproject.toml): every test file is mapped to
a tier in FILES below, and single tests that belong elsewhere in TESTS; this is the one
place that says which test runs where. A tier is the set of markers its tests get:

- no marker: the fast inner loop, `make check` (`pytest -m "not slow"`): the library,
  the in-process catalogue of misconceptions, the self-check, and one real nbgrader
  autograde of one notebook. No browser, no wheel, no built site.
- every other tier also gets `slow`, so `make check` leaves it out and `make test`
  (everything, no -m) runs it; one tier alone: `pytest -m pipeline`, `-m browser`, ...

A test file missing from FILES gets no marker, so it runs in `make check` as well as in
`make test` (it cannot escape the inner loop unnoticed), and the run warns about it: add
it to FILES.

Worker groups (`--dist loadgroup`, pytestmark in each file): tests that share a costly
fixture run on one worker. So do the files that compile the same attncore.jit kernels, in
two groups, "numba-flash" and "numba-decode": on a fresh clone the jit files took 436 s of
CPU spread over both workers (each compiled the same kernels), 356 s on one worker and
372 s in the two groups, which also keeps a cold `make check` at 162 s instead of 251 s.

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
# core the other worker holds (the drawn cases ran 25% slower beside one busy core). So one
# BLAS thread per worker unless the environment says otherwise; code that measures threads
# sets its own count (attncore.bench.blas_threads). OpenBLAS reads this when NumPy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

CHECK = ()  # the fast inner loop: no marker
SLOW = ("slow",)  # in process, but long (many seeds, cold Numba compiles, subprocesses)
PIPELINE = ("slow", "pipeline")  # grading through real processes: workers, nbgrader, sandbox
BROWSER = ("slow", "browser", "book")  # Chromium on the built site (_build/html)
WHEEL = ("slow", "wheel")  # builds the wheel and installs it into a fresh venv
MODEL = ("slow", "model")  # needs the model-test extra (PyTorch, transformers)
TIER_MARKERS = {"slow", "pipeline", "browser", "book", "wheel", "model"}

FILES = {
    "test_attention.py": CHECK,
    "test_bench_isolated.py": CHECK,
    "test_bench_peers.py": CHECK,
    "test_benchmarks.py": CHECK,
    "test_bfloat16.py": CHECK,
    "test_book_claims.py": CHECK,
    "test_book_claims_part2.py": CHECK,
    "test_catalogue.py": CHECK,
    "test_causal_linear_attention.py": CHECK,
    "test_ch7_glue.py": CHECK,
    "test_contract.py": CHECK,
    "test_diagnosis.py": CHECK,
    "test_doctests.py": CHECK,
    "test_errors.py": CHECK,
    "test_flash.py": CHECK,
    "test_grading_runner.py": CHECK,
    "test_grading_unit.py": CHECK,
    "test_invariants.py": CHECK,
    "test_jit.py": CHECK,
    "test_jit_amx.py": CHECK,
    "test_jit_bf16.py": CHECK,
    "test_jit_cache.py": CHECK,
    "test_jit_decode.py": CHECK,
    "test_lint.py": CHECK,
    "test_masks.py": CHECK,
    "test_normalise.py": CHECK,
    "test_notebooks.py": CHECK,
    "test_peers_page.py": CHECK,
    "test_selfcheck.py": CHECK,
    "test_softmax.py": CHECK,
    "test_stand_ins.py": CHECK,
    "test_suite_registry.py": CHECK,
    "test_type_hints.py": CHECK,
    "test_unseen.py": CHECK,
    "test_viz.py": CHECK,
    "test_viz_cell_values.py": CHECK,
    "test_wire_types.py": CHECK,
    "test_drawn_cases.py": SLOW,  # the whole catalogue again for several seeds
    "test_fairness.py": PIPELINE,
    "test_grading_pipeline.py": PIPELINE,
    "test_red_team.py": PIPELINE,
    "test_sandbox.py": PIPELINE,
    "test_tamper.py": PIPELINE,
    "test_zip_collect.py": PIPELINE,
    "test_site.py": BROWSER,
    "test_launch_notebooks.py": WHEEL,
    "test_wheel.py": WHEEL,
    "test_mask_conventions.py": MODEL,
    "test_real_model.py": MODEL,
}

# Single tests whose tier is not their file's: "file::test function" (all its parameters).
TESTS = {
    # the one real pipeline run of `make check`: nbgrader autograde of one notebook
    "test_sandbox.py::test_the_feedback_says_it_was_sandboxed_and_gives_the_seed": CHECK,
    # what needs no process in the pipeline files: static checks of notebooks and config
    "test_grading_pipeline.py::test_autograde_is_nbgraders_default_pipeline_with_execute_replaced": CHECK,
    "test_grading_pipeline.py::test_release_has_no_solutions_and_test_cells_import_no_bare_name": CHECK,
    "test_grading_pipeline.py::test_repository_config_is_the_course_config": CHECK,
    "test_fairness.py::test_every_assignment_has_its_correct_styles": CHECK,
    "test_fairness.py::test_every_function_has_enough_styles": CHECK,
    "test_fairness.py::test_solutions_of_one_round_do_not_redefine_each_others_helpers": CHECK,
    "test_zip_collect.py::test_the_page_gives_the_route_this_test_follows": CHECK,
    "test_zip_collect.py::test_the_student_id_is_read_from_the_file_name_alone": CHECK,
    # cold compiles in fresh processes, long sequences, many specialisations
    "test_jit.py::test_without_avx_the_portable_path_runs_instead_of_aborting": SLOW,
    "test_jit.py::test_cache_is_written_then_loaded": SLOW,
    "test_jit_cache.py::test_an_edit_of_another_file_of_the_package_recompiles_the_driver": SLOW,
    "test_jit.py::test_queries_past_the_last_full_panel_run_one_vector_wide_with_the_same_bits": SLOW,
    "test_jit.py::test_defaults_scale_and_long_sequences": SLOW,
    "test_jit.py::test_tile_product_and_kernel_info": SLOW,  # assembly listings, never cached
    "test_ch7_glue.py::test_loads_and_stores_of_the_compiled_kernels": SLOW,
    "test_benchmarks.py::test_smoke_run_writes_every_field": SLOW,  # the whole harness, small
    # the benchmark peers the machine has (PyTorch, JAX, ONNX Runtime, OpenVINO): imports
    # and compiles of other libraries; the harness's logic stays, with fakes
    "test_bench_peers.py::test_peer_agrees_with_float64": SLOW,
    "test_bench_peers.py::test_peer_decodes_grouped_query_heads": SLOW,
    "test_bench_peers.py::test_jit_bf16_peers_are_timed_against_the_float32_path_with_their_own_bound": SLOW,
    # whole notebooks through the runner's worker
    "test_stand_ins.py::test_a_wrong_upstream_costs_its_own_points_only": PIPELINE,
    "test_stand_ins.py::test_a_downstream_mistake_of_its_own_is_named_with_the_reference_upstream": PIPELINE,
    "test_stand_ins.py::test_a_right_downstream_that_calls_nothing_wrong_is_not_graded_again": PIPELINE,
    "test_stand_ins.py::test_a_kept_stand_in_earns_its_function_nothing": PIPELINE,
    "test_stand_ins.py::test_stand_ins_work_in_the_sandbox": PIPELINE,
    "test_grading_unit.py::test_a_shape_set_in_place_is_caught_through_the_worker": PIPELINE,
}


def tier(path, function=None):
    """The markers of a test (file name, test function) or of a whole file (function None);
    None for a file FILES does not know."""
    name = Path(path).name
    if function is not None and f"{name}::{function}" in TESTS:
        return TESTS[f"{name}::{function}"]
    return FILES.get(name)


def _selected(config, markers):
    """Could -m select a test with exactly these tier markers? True when -m names anything
    but tier markers (then only pytest can tell)."""
    expression = config.getoption("markexpr", "")
    if not expression:
        return True
    names = set(re.findall(r"[A-Za-z_][\w.]*", expression)) - {"and", "or", "not"}
    if not names <= TIER_MARKERS:
        return True
    from _pytest.mark.expression import Expression

    return Expression.compile(expression).evaluate(lambda name, **_: name in markers)


def pytest_ignore_collect(collection_path, config):
    """Do not even import a test file whose every tier -m leaves out (test_real_model.py
    fails to import without the model-test extra, which `make check` does not install)."""
    name = collection_path.name
    if not (name.startswith("test_") and name.endswith(".py")) or name not in FILES:
        return None
    tiers = [FILES[name]] + [t for key, t in TESTS.items() if key.startswith(f"{name}::")]
    return True if not any(_selected(config, t) for t in tiers) else None


def pytest_collection_modifyitems(config, items):
    """Give every test the markers of its tier; warn of test files FILES does not know
    and of TESTS entries that name no test of their file (renamed: the file's tier would
    apply unnoticed)."""
    unknown, seen, files = {}, set(), {}
    for item in items:
        function = getattr(item, "originalname", None) or item.name.partition("[")[0]
        seen.add(f"{item.path.name}::{function}")
        files.setdefault(item.path.name, item)
        markers = tier(item.path, function)
        if markers is None:
            unknown.setdefault(item.path.name, item)
            continue
        for marker in markers:
            item.add_marker(marker)
    for name, item in unknown.items():
        item.warn(pytest.PytestWarning(
            f"{name} has no test tier: it runs in `make check` too. Add it to FILES in "
            f"tests/conftest.py (and slow single tests to TESTS)."))
    whole = not config.getoption("keyword") and not any("::" in arg for arg in config.args)
    for key in TESTS if whole else ():  # files collected whole only: no -k, no node ids
        name = key.partition("::")[0]
        if name in files and key not in seen:
            files[name].warn(pytest.PytestWarning(
                f"TESTS in tests/conftest.py names {key}, which {name} does not have."))


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
