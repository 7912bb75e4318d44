"""Every catalogued misconception, written as learners write it, is caught and named.

Each wrong solution in tests/wrong/ replaces the reference in a submission; the
submissions go through the real `nbgrader autograde`. A wrong solution must lose
points for its function, and the feedback of that function must name its
misconception. Several wrong solutions share a submission when they are for
different functions (each function is graded on its own), so each assignment
needs only a few autograde runs.
"""
import importlib
import re

import pytest

from attncore.grading import ASSIGNMENTS, SPECS
from attncore.grading.course import Course
from attncore.grading.probe import GENERIC

from .gradekit import points_by_function, reference_sources, source_notebook, submission

MODULES = {"01-convention": "convention", "02-simplex": "simplex", "03-masking": "masking",
           "04-heads": "heads", "05-flash": "flash", "06-variants": "variants"}
WRONG = {a: importlib.import_module(f"tests.wrong.{m}").WRONG for a, m in MODULES.items()}

# The misconceptions the course promises to recognise (issue 6), by assignment.
REQUIRED = {
    "01-convention": ["softmax over the wrong axis", "transposed score matrix (K Q^T)",
                      "missing or wrong scale"],
    "02-simplex": ["softmax over the wrong axis", "unstable softmax (overflow)",
                   "a global instead of per-row maximum", "input modified in place",
                   "wrong output shape or dtype", "NaN or inf in the output"],
    "03-masking": ["mask applied after softmax", "masking with 0 or multiplying by the mask",
                   "inverted mask polarity", "causal mask off by one",
                   "top-left instead of bottom-right causal alignment",
                   "padding mask on queries instead of keys",
                   "fully masked row giving NaN or a uniform row",
                   "finite sentinel too weak for the scores"],
    "04-heads": ["GQA head mapping by tile instead of repeat",
                 "KV cache size missing the factor for keys and values"],
    "05-flash": ["online softmax without rescaling", "last partial tile dropped",
                 "the full (T_q, T_k) matrix materialised",
                 "log-sum-exp row recovery without the scale"],
    "06-variants": ["softmax-1 stabilised wrongly", "sparsemax threshold wrong",
                    "linear attention without its normaliser"],
}


def calls(function, source, references):
    """The other graded functions that source calls, directly or through their references."""
    found, todo = set(), [source]
    while todo:
        text = todo.pop()
        for other, reference in references.items():
            if other not in found and other != function and re.search(rf"\b{other}\(", text):
                found.add(other)
                todo.append(reference)
    return found


def rounds(wrongs, references):
    """Group wrong solutions into submissions: at most one per function, and never one
    beside a wrong version of a function it calls (directly or through a reference)."""
    needs = [calls(w.function, w.source, references) for w in wrongs]
    plan = []
    for index, wrong in enumerate(wrongs):
        for chosen in plan:
            if wrong.function in chosen or needs[index] & chosen.keys() or any(
                    wrong.function in needs[i] for i in chosen.values()):
                continue
            chosen[wrong.function] = index
            break
        else:
            plan.append({wrong.function: index})
    return plan


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """assignment -> [(caught, named, feedback)] per wrong solution, graded lazily."""
    cache = {}

    def grade(assignment):
        if assignment not in cache:
            wrongs = WRONG[assignment]
            course = Course(tmp_path_factory.mktemp(assignment), {assignment: source_notebook(assignment)})
            course.generate(assignment)
            plan = rounds(wrongs, reference_sources(assignment))
            for k, chosen in enumerate(plan):
                replaced = {f: wrongs[i].source for f, i in chosen.items()}
                course.submit(assignment, f"round{k}", submission(assignment, replaced))
            course.autograde(assignment)
            results = [None] * len(wrongs)
            for k, chosen in enumerate(plan):
                points = points_by_function(course.grades(assignment, f"round{k}"), assignment)
                for function, i in chosen.items():
                    score, most, messages = points[function]
                    feedback = "\n".join(messages)
                    results[i] = (score < most, wrongs[i].misconception in feedback, feedback)
            cache[assignment] = results
        return cache[assignment]

    return grade


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


# One xdist group per assignment: its submissions are autograded once, by one worker.
CASES = [pytest.param(a, i, marks=pytest.mark.xdist_group(a),
                      id=f"{a}:{WRONG[a][i].function}:{WRONG[a][i].misconception}:{i}")
         for a in MODULES for i in range(len(WRONG[a]))]


@pytest.mark.parametrize("assignment,index", CASES)
def test_wrong_solution_loses_points_and_is_named(outcomes, assignment, index, record_property):
    caught, named, feedback = outcomes(assignment)[index]
    record_property("misconception_outcome", (assignment, caught, named))  # summed by conftest
    wrong = WRONG[assignment][index]
    assert caught, f"{wrong.function} kept full marks with:\n{wrong.source}"
    assert named, (f"feedback for {wrong.function} does not name "
                   f"'{wrong.misconception}':\n{feedback}")
