"""Identical code, identical grade: hidden cases are drawn at grading time, and every graded
property has a witness in every draw.

The grade that counts (nbgrader autograde, the self-check) draws the random inputs of
every hidden suite, and of a drawn twin of every visible case, from a seed it picks, so
that no table of fixed cases can answer them (probe.graded_cases). A solution's points
must not depend on that seed. Checked here in process, each notebook's code loaded once
and its suites run for many draws (run_suite(diagnose=False): points only):

- every correct style of tests/right/ gets full marks in each of 20 draws (the memory
  suite in 2: its one case has a fixed size and tiles, only its values are drawn, and its
  pure-Python style takes seconds a call);
- every test cell of every wrong solution of tests/wrong/ and tests/unseen/ passes in all
  of WRONG_DRAWS draws or in none (the memory suite aside: a wrong flash_attention takes
  seconds a call there, under tracemalloc), and is still caught and named (tests/wrong/)
  for a few of them;
- the red team's table of the fixed cases (tests/test_sandbox.py's attempt, visible cases
  added) earns none of masked_softmax's points in any draw;
- every hidden case draws its inputs (sizes, values, places) when graded, and a table of
  the written inputs of every hidden case (what a learner's own check runs, and all the
  red team's second attempt needed for 40 of them) earns no hidden cell of any function in
  any draw. Through nbgrader: tests/test_resubmission.py.
"""
import copy
import dataclasses
import importlib

import numpy as np
import pytest

from attncore.grading.course.layout import function_of, parse_grade_id
from attncore.grading.engine import SPECS, Outcome, run_suite
from attncore.grading.engine.probe import VISIBLE_SUITES, drawing, graded_cases
from attncore.grading.observe import observe

from .gradekit import SUITE_MODULE, in_process_verdicts, loaded, submission
from .test_catalogue import WRONG, only_tests_of
from .test_fairness import RIGHT, rounds, sources

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::RuntimeWarning")]
SEEDS = (1, 20261201, 2 ** 31 - 1)  # a few draws, for what needs the whole feedback
RIGHT_DRAWS = range(1, 21)
WRONG_DRAWS = range(1, 6)
MEMORY_DRAWS = range(1, 3)
UNSEEN = {a: importlib.import_module(f"tests.unseen.{m}").UNSEEN for a, m in SUITE_MODULE.items()}


def _ids(notebook):
    """(the namespace of a submission's code, loaded once; the grade ids of its test cells)."""
    namespace, tests = loaded(notebook)
    return namespace, [grade_id for grade_id, _ in tests]


def _passed(namespace, grade_id, seed):
    function, suite = parse_grade_id(grade_id)
    spec = SPECS[function]
    return run_suite(spec, suite, lambda arguments, measure_memory: Outcome(
        **observe(namespace[function], arguments, spec.forbidden, measure_memory)),
        seed, diagnose=False).passed


def _cases(function, suite, seed):
    """The arguments of every case run_suite runs for this draw (the fixed ones, the drawn
    twins, the hidden ones)."""
    made = []
    for case, draw in graded_cases(SPECS[function], suite, seed):
        with drawing(draw):
            made.append(case.make())
    return made


def _same(a, b):
    """Two cases' arguments are equal (arrays by value)."""
    return a.keys() == b.keys() and all(
        np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") if isinstance(x, np.ndarray)
        else repr(x) == repr(y)
        for x, y in zip(a.values(), b.values()))


SUITES = [(spec.name, suite) for spec in SPECS.values() for suite in spec.suites]


@pytest.mark.parametrize("function,suite", SUITES, ids=[f"{f}-{s}" for f, s in SUITES])
def test_every_suite_draws_a_case_no_table_of_fixed_cases_holds(function, suite):
    fixed = _cases(function, suite, None)
    for seed in SEEDS:
        drawn = _cases(function, suite, seed)
        assert all(_same(a, b) for a, b in zip(drawn, _cases(function, suite, seed))), \
            "a seed must replay its draw"
        assert any(not any(_same(case, other) for other in fixed) for case in drawn), \
            f"with seed {seed} every case of this suite is a fixed one: a table could answer it"
        if suite in VISIBLE_SUITES:  # as written first: what the learner's own check runs
            assert all(_same(a, b) for a, b in zip(fixed, drawn[:len(fixed)]))


@pytest.mark.parametrize("assignment", list(RIGHT))
def test_every_correct_style_keeps_full_marks_in_every_draw(assignment):
    failed, graded = [], set()
    for chosen in rounds(assignment):
        namespace, grade_ids = _ids(submission(assignment, sources(chosen)))
        for grade_id in grade_ids:
            style = (function_of(grade_id), chosen[function_of(grade_id)].style)
            if (grade_id, style) in graded:  # a round repeats the styles of short lists
                continue
            graded.add((grade_id, style))
            draws = MEMORY_DRAWS if grade_id.endswith("-memory") else RIGHT_DRAWS
            failed += [(grade_id, chosen[function_of(grade_id)].style, seed) for seed in draws
                       if not _passed(namespace, grade_id, seed)]
    assert not failed, failed


def _wrong(assignment):
    return [*WRONG[assignment], *UNSEEN[assignment]]


@pytest.mark.parametrize("assignment", list(WRONG))
def test_every_wrong_solution_gets_the_same_points_in_every_draw(assignment):
    varies = []
    for wrong in _wrong(assignment):
        namespace, grade_ids = _ids(only_tests_of(
            submission(assignment, {wrong.function: wrong.source}), wrong.function))
        for grade_id in (g for g in grade_ids if function_of(g) == wrong.function
                         and not g.endswith("-memory")):
            passed = {seed: _passed(namespace, grade_id, seed) for seed in WRONG_DRAWS}
            if len(set(passed.values())) > 1:
                said = getattr(wrong, "misconception", None) or getattr(wrong, "behaviour", "")
                varies.append((grade_id, said, passed))
    assert not varies, varies


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


def test_a_table_of_every_fixed_case_earns_nothing_in_any_draw():
    """The red team's hard-coded table of the fixed cases (tests/test_sandbox.py), with the
    visible cases added, which the notebook shows: before the visible suites drew twins it
    earned masked_softmax-basic, 1 of the function's 6 points."""
    spec = SPECS["masked_softmax"]
    table = {}
    for suite in spec.suites:
        for case, _ in graded_cases(spec, suite):
            arguments = case.make()
            key = arguments["scores"].tobytes() + arguments["mask"].tobytes()
            table[key] = spec.reference(*arguments.values())

    def masked_softmax(scores, mask):
        found = table.get(scores.tobytes() + mask.tobytes())
        return found.copy() if found is not None else scores.copy()

    assert all(_passed({"masked_softmax": masked_softmax}, f"masked_softmax-{suite}", None)
               for suite in spec.suites), "the table must answer every fixed case"
    earned = {(suite, seed) for suite in spec.suites for seed in RIGHT_DRAWS
              if _passed({"masked_softmax": masked_softmax}, f"masked_softmax-{suite}", seed)}
    assert not earned, earned


HIDDEN = [(spec.name, suite) for spec in SPECS.values() for suite in spec.suites
          if suite not in VISIBLE_SUITES]


def _key(value):
    """A case's arguments as a key: arrays by dtype, shape and bytes, containers and weights
    (dataclasses) item by item, anything else (a feature map) by its repr."""
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, dict):
        return tuple((name, _key(item)) for name, item in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(map(_key, value))
    if dataclasses.is_dataclass(value):
        return type(value).__name__, _key([getattr(value, f.name) for f in dataclasses.fields(value)])
    return repr(value)


@pytest.mark.parametrize("function,suite", HIDDEN, ids=[f"{f}-{s}" for f, s in HIDDEN])
def test_no_hidden_case_makes_the_same_inputs_in_two_draws(function, suite):
    """Every case of every hidden suite, as graded (graded_cases) in each of RIGHT_DRAWS:
    the inputs of any two draws differ, but where the case's inputs are a few small
    integers (a single token: window 1 to 5), whose every value 20 draws cannot avoid
    meeting twice; there, no input comes up in more than a third of the draws. A case
    fixed in every draw, or in most, fails; so would one whose written inputs (a learner's
    own check, no seed) changed from call to call."""
    spec = SPECS[function]
    made = [[] for _ in spec.suites[suite]]
    for seed in RIGHT_DRAWS:
        for index, (case, draw) in enumerate(graded_cases(spec, suite, seed)):
            with drawing(draw):
                made[index].append(_key(case.make()))
    for case, keys in zip(spec.suites[suite], made):
        few_integers = all(_small_integers(value) for value in case.make().values())
        most = max(keys.count(key) for key in keys)
        assert most <= (len(keys) // 3 if few_integers else 1), \
            f"{case.description!r}: the same inputs in {most} of {len(keys)} draws"
        with drawing(None):
            assert _key(case.make()) == _key(case.make()), "the written inputs must not change"


def _small_integers(value):
    """An int, or an array of ints, below 100: a case made of these has few inputs."""
    values = np.asarray(value)
    return values.dtype.kind in "iub" and bool(np.all(np.abs(values) < 100))


def test_a_table_of_every_written_hidden_case_earns_no_hidden_cell_in_any_draw():
    """A function that answers each written input of the hidden suites from a table of the
    reference's answers (and None to anything else) passes them all as written, and none
    of them in any draw."""
    for spec in SPECS.values():
        table = {}
        for suite in (suite for function, suite in HIDDEN if function == spec.name):
            for case in spec.suites[suite]:
                values = tuple(case.make().values())
                table[_key(values)] = spec.reference(*copy.deepcopy(values))

        def from_table(*values, table=table):
            found = table.get(_key(values))
            return copy.deepcopy(found)

        namespace = {spec.name: from_table}
        hidden = [f"{spec.name}-{suite}" for function, suite in HIDDEN if function == spec.name]
        assert all(_passed(namespace, grade_id, None) for grade_id in hidden), spec.name
        earned = [(grade_id, seed) for grade_id in hidden for seed in RIGHT_DRAWS
                  if _passed(namespace, grade_id, seed)]
        assert not earned, earned
