"""Every catalogued misconception, written as learners write it, is caught and named.

Each wrong solution in tests/wrong/ replaces the reference in a submission, whose test
cells are graded in this process (tests.gradekit.in_process_verdicts: the same engine
and suites as nbgrader autograde and the self-check, without the worker). A wrong
solution must lose points for its function (some suite of it not passed), and the
feedback of that function must name its misconception. The grade that counts runs the
same engine with the learner's code in a worker (course/runner.py); this file checks
the catalogue itself, in seconds.
"""
import importlib

import nbformat
import pytest

from attncore.grading.course import runner
from attncore.grading.course.hidden_cells import hidden_cells
from attncore.grading.course.layout import function_of, parse_grade_id
from attncore.grading.engine import ASSIGNMENTS, SPECS
from attncore.grading.engine.probe import GENERIC, STRICT_DETECTORS

from .gradekit import SUITE_MODULE, in_process_verdicts, release_notebook, source_notebook, submission

MODULES = SUITE_MODULE
# Wrong solutions overflow and divide by zero on purpose; what they warn is no finding here.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(autouse=True)
def strict_detectors(monkeypatch):
    """A detector that raises fails the test here (learners' grading suppresses it)."""
    monkeypatch.setenv(STRICT_DETECTORS, "1")

WRONG = {a: importlib.import_module(f"tests.wrong.{m}").WRONG for a, m in MODULES.items()}

# The misconceptions the course promises to recognise (issues 6 and 9), by assignment.
REQUIRED = {
    "01-convention": ["softmax over the wrong axis", "transposed score matrix (K Q^T)",
                      "missing or wrong scale", "weights transposed in the output (A^T V)"],
    "02-simplex": ["softmax over the wrong axis", "unstable softmax (overflow)",
                   "a global instead of per-row maximum", "input modified in place",
                   "wrong output shape or dtype", "NaN or inf in the output",
                   "your code assumes 2-D input", "minimum subtracted instead of the maximum"],
    "03-masking": ["mask applied after softmax", "masking with 0 or multiplying by the mask",
                   "inverted mask polarity", "causal mask off by one",
                   "top-left instead of bottom-right causal alignment",
                   "padding mask on queries instead of keys",
                   "fully masked row giving NaN or a uniform row",
                   "finite sentinel too weak for the scores",
                   "masked softmax over the wrong axis", "padding on the wrong side",
                   "upper instead of lower triangle (triu instead of tril)"],
    "04-heads": ["GQA head mapping by tile instead of repeat",
                 "KV cache size missing the factor for keys and values",
                 "missing or wrong scale", "group size computed as n_kv_heads // n_q_heads",
                 "weights transposed in the output (A^T V)"],
    "05-flash": ["online softmax without rescaling", "last partial tile dropped",
                 "the full (T_q, T_k) matrix materialised",
                 "log-sum-exp row recovery without the scale", "missing or wrong scale",
                 "no maximum subtracted in the tiles", "rescale factor upside down",
                 "normalised per tile instead of once at the end", "exp2 instead of exp"],
    "06-variants": ["softmax-1 stabilised wrongly", "sparsemax threshold wrong",
                    "linear attention without its normaliser",
                    "n instead of 1 in the softmax-1 denominator",
                    "sparsemax with k counted from 0", "sparsemax threshold from the whole row",
                    "feature_map argument ignored",
                    "feature map applied to the scores instead of to Q and K"],
    "07-real-model": ["reshape without transpose (heads leak into each other)",
                      "HF mask polarity read as True = blocked",
                      "the mask applied to queries instead of keys",
                      "scale by the hidden size instead of the head size",
                      "output projection forgotten", "softmax over the wrong axis",
                      "input modified in place"],
}


def only_tests_of(notebook, function):
    """The notebook without the test cells of the other functions (they cost time only)."""
    others = {id(cell) for grade_id, cell in runner.test_cells(notebook.cells)
              if function_of(grade_id) != function}
    notebook.cells = [cell for cell in notebook.cells if id(cell) not in others]
    return notebook


def grade(assignment, wrong):
    """(caught, named, feedback) of one wrong solution, graded in this process."""
    notebook = submission(assignment, {wrong.function: wrong.source})
    verdicts = in_process_verdicts(only_tests_of(notebook, wrong.function))
    failed = [verdict.message for grade_id, verdict in verdicts.items()
              if function_of(grade_id) == wrong.function and not verdict.passed]
    feedback = "\n".join(failed)
    return bool(failed), wrong.misconception in feedback, feedback


@pytest.mark.parametrize("assignment", list(MODULES))
def test_every_required_misconception_has_two_wrong_solutions(assignment):
    named = [w.misconception for w in WRONG[assignment]]
    missing = {m: named.count(m) for m in REQUIRED[assignment] if named.count(m) < 2}
    assert not missing, f"fewer than two wrong solutions for {missing}"


@pytest.mark.parametrize("assignment", list(MODULES))
def test_wrong_solutions_name_catalogued_misconceptions(assignment):
    for wrong in WRONG[assignment]:
        assert wrong.function in ASSIGNMENTS[assignment], wrong
        known = [m.name for m in SPECS[wrong.function].misconceptions] + list(GENERIC)
        assert wrong.misconception in known, (wrong.function, wrong.misconception, known)


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_every_suite_is_run_by_exactly_one_test_cell(assignment):
    notebook = nbformat.read(source_notebook(assignment), as_version=4)
    run = [parse_grade_id(grade_id) for grade_id, _ in runner.test_cells(notebook.cells)]
    declared = {(function, suite) for function in ASSIGNMENTS[assignment]
                for suite in SPECS[function].suites}
    assert declared <= set(run), f"suites no test cell runs: {sorted(declared - set(run))}"
    assert set(run) <= declared, f"test cells naming no suite: {sorted(set(run) - declared)}"
    assert len(run) == len(set(run)), f"suites run by two cells: {sorted(run)}"


@pytest.mark.parametrize("notebook", [source_notebook, release_notebook],
                         ids=["solutions", "exercises"])
@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_hidden_cells_list_their_suites_cases(assignment, notebook):
    """The comment of a hidden test cell is made from its suite's Case descriptions."""
    cells = nbformat.read(notebook(assignment), as_version=4).cells
    stale = [cell.metadata["nbgrader"]["grade_id"] for cell, text in hidden_cells(cells)
             if cell.source != text]
    assert not stale, (f"hidden cells that do not list their suite's cases: {stale}; run "
                       f"`python -m attncore.grading.course.hidden_cells`, then "
                       f"`make exercises FORCE=1`")


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_reference_solutions_pass(assignment):
    failed = {grade_id: verdict.message
              for grade_id, verdict in in_process_verdicts(submission(assignment)).items()
              if not verdict.passed}
    assert not failed, failed


CASES = [pytest.param(a, i, id=f"{a}:{WRONG[a][i].function}:{WRONG[a][i].misconception}:{i}")
         for a in MODULES for i in range(len(WRONG[a]))]


@pytest.mark.parametrize("assignment,index", CASES)
def test_wrong_solution_loses_points_and_is_named(assignment, index, record_property):
    wrong = WRONG[assignment][index]
    caught, named, feedback = grade(assignment, wrong)
    record_property("misconception_outcome", (assignment, caught, named))  # summed by conftest
    assert caught, f"{wrong.function} kept full marks with:\n{wrong.source}"
    assert named, (f"feedback for {wrong.function} does not name "
                   f"'{wrong.misconception}':\n{feedback}")
