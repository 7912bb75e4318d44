"""Hidden cases drawn at grading time stay fair and keep naming mistakes, for any draw.

The grade that counts (nbgrader autograde, the self-check) draws the random inputs of
every hidden suite from a seed it picks, so that no table of fixed cases can answer
them. Whatever the seed, every correct style must still get full marks and every
catalogued wrong solution must still lose points and be named; checked here in process
(tests.gradekit.in_process_verdicts) for a few seeds. Visible suites never change.
"""
import copy

import numpy as np
import pytest

from attncore.grading.course.layout import function_of
from attncore.grading.engine import SPECS, Outcome, run_suite
from attncore.grading.engine.probe import VISIBLE_SUITES

from .gradekit import in_process_verdicts, submission
from .test_catalogue import WRONG, only_tests_of
from .test_fairness import RIGHT, rounds, sources

SEEDS = (1, 20261201, 2 ** 31 - 1)
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::RuntimeWarning")]


def _arguments(function, suite, seed):
    """The arguments run_suite passes for every case of a suite, drawn with seed (the
    reference answers each, so every case is run)."""
    spec = SPECS[function]
    calls = []
    run_suite(spec, suite, lambda arguments, _: calls.append(arguments) or Outcome(
        returned=spec.reference(*copy.deepcopy(arguments).values()),
        arguments_after=arguments), seed)
    assert len(calls) == len(spec.suites[suite]), "the reference must pass every case"
    return calls


def _same(a, b):
    """Two cases' arguments are equal (arrays by value)."""
    return a.keys() == b.keys() and all(
        np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") if isinstance(x, np.ndarray)
        else repr(x) == repr(y)
        for x, y in zip(a.values(), b.values()))


SUITES = [(spec.name, suite) for spec in SPECS.values() for suite in spec.suites]


@pytest.mark.parametrize("function,suite", SUITES, ids=[f"{f}-{s}" for f, s in SUITES])
def test_every_hidden_suite_draws_a_case_and_every_visible_one_is_fixed(function, suite):
    first, second, replay, fixed = (_arguments(function, suite, seed)
                                    for seed in (SEEDS[0], SEEDS[1], SEEDS[0], None))
    assert all(_same(a, b) for a, b in zip(first, replay)), "a seed must replay its draw"
    if suite in VISIBLE_SUITES:
        assert all(_same(a, b) for a, b in zip(first, fixed))
    else:
        assert any(not _same(a, b) for a, b in zip(first, second)), \
            "no case of this hidden suite changes with the draw: a lookup table could answer it"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("assignment", list(RIGHT))
def test_every_correct_style_keeps_full_marks_for_any_draw(assignment, seed):
    for k, chosen in enumerate(rounds(assignment)):
        result = in_process_verdicts(submission(assignment, sources(chosen)), seed=seed)
        failed = {gid: v.message for gid, v in result.items() if not v.passed}
        assert not failed, (k, failed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("assignment", list(WRONG))
def test_every_wrong_solution_is_still_caught_and_named_for_any_draw(assignment, seed):
    missed = []
    for wrong in WRONG[assignment]:
        notebook = only_tests_of(submission(assignment, {wrong.function: wrong.source}),
                                 wrong.function)
        failed = [v.message for gid, v in in_process_verdicts(notebook, seed=seed).items()
                  if function_of(gid) == wrong.function and not v.passed]
        if not failed or wrong.misconception not in "\n".join(failed):
            missed.append((wrong.function, wrong.misconception, bool(failed)))
    assert not missed, missed

