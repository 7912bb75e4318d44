"""Fairness: every correct solution gets full marks, whatever its style (issue 9).

tests/right/ holds at least four correct implementations of every graded function, each
written as a learner would write it: loops, einsum, float64 then cast, finite sentinels
where the text allows them, the additive-mask idiom with its RuntimeWarning, masked
arrays, 0/0 repaired afterwards, deprecated NumPy, warnings.warn, logging, prints to
stdout and stderr, helpers (one named `check`), reuse of the notebook's earlier
functions, recursion, callable objects. Each must score every point

- through the out-of-process runner, as the self-check grades (fast, below);
- through the real `nbgrader autograde`, one run per assignment;
- through the self-check command, `python -m attncore.grading check NOTEBOOK`.

What a style printed or warned is shown to the learner as a note that costs nothing.

Submission k of an assignment holds style k of every function of that assignment
(functions with fewer styles start again from their first), so an assignment needs only
as many worker starts, and nbgrader submissions, as its function with the most styles.
"""
import ast
import concurrent.futures
import importlib
import multiprocessing
import re
import subprocess
import sys
import time
import warnings

import nbformat
import numpy as np
import pytest

from attncore.grading.course.layout import function_of
from attncore.grading.engine import ASSIGNMENTS

from .gradekit import SUITE_MODULE, Course, auto_points, points_by_function, submission, verdicts

MODULES = SUITE_MODULE
RIGHT = {a: importlib.import_module(f"tests.right.{m}").RIGHT for a, m in MODULES.items()}
MINIMUM_STYLES = 4


def _row_stack_warns():
    """np.row_stack is deprecated (a DeprecationWarning) from NumPy 2.0 on, not before."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.row_stack([np.zeros(1)])
    return any(issubclass(w.category, DeprecationWarning) for w in caught)


def expected_note(right):
    """The word the notes must contain, or "": a deprecation NumPy no longer or not yet
    warns, or logging, whose lines reach the notes only when the handler happens to be
    made during the same call (see test_logging_is_shown_as_a_note_in_every_function_that_logs)."""
    if right.note == "DeprecationWarning" and "row_stack" in right.source \
            and not _row_stack_warns():
        return ""
    if "logging" in right.source:
        return ""
    return right.note


def _styles(assignment, function):
    return [r for r in RIGHT[assignment] if r.function == function]


def rounds(assignment):
    """[{function: Right}]: round k holds the k-th style of every function."""
    styles = {f: _styles(assignment, f) for f in ASSIGNMENTS[assignment]}
    count = max(len(s) for s in styles.values())
    return [{f: s[k % len(s)] for f, s in styles.items()} for k in range(count)]


def top_level_names(source):
    """{name: the statement that binds it} for the top level of a solution cell."""
    names = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = ast.dump(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = ast.dump(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = ast.dump(node)
    return names


def sources(chosen):
    return {function: right.source for function, right in chosen.items()}


# ---------------------------------------------------------------- the catalogue itself

def test_every_assignment_has_its_correct_styles():
    assert set(MODULES) == set(ASSIGNMENTS)


@pytest.mark.parametrize("assignment", list(MODULES))
def test_every_function_has_enough_styles(assignment):
    for function in ASSIGNMENTS[assignment]:
        styles = [r.style for r in RIGHT[assignment] if r.function == function]
        assert len(styles) >= MINIMUM_STYLES, (function, styles)
        assert len(set(styles)) == len(styles), (function, styles)
    assert {r.function for r in RIGHT[assignment]} <= set(ASSIGNMENTS[assignment])


@pytest.mark.parametrize("assignment", list(MODULES))
def test_solutions_of_one_round_do_not_redefine_each_others_helpers(assignment):
    graded = set(ASSIGNMENTS[assignment])
    for k, chosen in enumerate(rounds(assignment)):
        bound = {}
        for function, right in chosen.items():
            names = top_level_names(right.source)
            assert function in names, (function, right.style, "does not define it")
            for name, statement in names.items():
                if name in graded:
                    assert name == function, (right.style, f"redefines {name}")
                    continue
                other = bound.setdefault(name, (statement, right.style))
                assert other[0] == statement, (
                    f"round {k}: {name} is defined by both {other[1]!r} and {right.style!r}")


@pytest.mark.slow
@pytest.mark.pipeline
def test_a_pure_python_flash_attention_is_among_the_styles():
    def pure(source):  # NumPy only to slice the tiles into lists and to return the array
        body = source.split("def flash_attention")[1]
        numpy = [line.strip() for line in body.splitlines() if "np." in line]
        return numpy == ["return np.array(out)"] and ".tolist()" in body and "@" not in body

    assert any(r.function == "flash_attention" and "pure Python" in r.style and pure(r.source)
               for r in RIGHT["05-flash"])


# ---------------------------------------------------------------- the out-of-process runner

# Processes, not threads: CPython 3.11 counts the depth of the syntax trees it builds per
# interpreter, not per thread (python/cpython#106905), so two graders in threads of one
# process could fail each other's ast.parse, and NumPy reads an .npy header with it: a
# returned array then arrived as "an array whose bytes do not match its header".
_POOL = concurrent.futures.ProcessPoolExecutor(
    max_workers=3, mp_context=multiprocessing.get_context("spawn"))
_RUNNER = {}  # (assignment, round) -> Future of {grade_id: CellVerdict}


def runner_verdicts(assignment, k):
    """{grade_id: CellVerdict} of round k, graded as the self-check grades. The first
    request for an assignment grades all its rounds, a few worker processes at a time."""
    if (assignment, k) not in _RUNNER:
        for j, chosen in enumerate(rounds(assignment)):
            _RUNNER[assignment, j] = _POOL.submit(
                verdicts, submission(assignment, sources(chosen)))
    return _RUNNER[assignment, k].result()


# style i of a function is graded in round i (later rounds repeat it to fill up)
RUNNER_CASES = [pytest.param(a, i, f, id=f"{a}:{f}:{right.style}",
                             marks=pytest.mark.xdist_group(a))
                for a in MODULES for f in ASSIGNMENTS[a]
                for i, right in enumerate(_styles(a, f))]


@pytest.mark.slow
@pytest.mark.pipeline
@pytest.mark.parametrize("assignment,k,function", RUNNER_CASES)
def test_correct_style_gets_full_marks_through_the_runner(assignment, k, function):
    right = rounds(assignment)[k][function]
    mine = {gid: v for gid, v in runner_verdicts(assignment, k).items()
            if function_of(gid) == function}
    assert mine, f"no test cell for {function}"
    failed = {gid: v.message for gid, v in mine.items() if not v.passed}
    assert not failed, f"{right.style} lost points:\n{right.source}\n" + "\n\n".join(
        f"{gid}: {message}" for gid, message in failed.items())
    notes = [note for v in mine.values() for note in v.notes]
    word = expected_note(right)
    if word:
        assert any(word in note for note in notes), (right.style, notes)
        assert all("no points" in note for note in notes if word in note), notes


# ---------------------------------------------------------------- nbgrader autograde

def _autograde(tmp_path, assignment):
    course = Course(tmp_path, [assignment])
    course.generate(assignment)
    plan = rounds(assignment)
    for k, chosen in enumerate(plan):
        course.submit(assignment, f"style{k}", submission(assignment, sources(chosen)))
    started = time.perf_counter()
    course.autograde(assignment)
    return course, plan, time.perf_counter() - started


@pytest.mark.parametrize("assignment", [
    pytest.param(a, marks=pytest.mark.xdist_group(a)) for a in MODULES])
@pytest.mark.slow
@pytest.mark.pipeline
def test_every_style_gets_full_marks_through_nbgrader_autograde(tmp_path, assignment, request):
    course, plan, seconds = _autograde(tmp_path, assignment)
    request.node.user_properties.append(
        ("autograde_seconds", (assignment, len(plan), round(seconds, 1))))
    lost = []
    for k, chosen in enumerate(plan):
        grades = course.grades(assignment, f"style{k}")
        got, total = auto_points(grades)
        assert total > 0
        for function, (score, most, messages) in points_by_function(grades, assignment).items():
            if score < most:
                lost.append(f"{function} ({chosen[function].style}): {score} / {most}\n"
                            + "\n".join(m[:600] for m in messages))
        for function, right in chosen.items():
            word = expected_note(right)
            outputs = "\n".join(g.output for g in grades if g.grade_id.startswith(function + "-"))
            if word:
                assert re.search(rf"Note: .*{word}", outputs), (function, right.style, outputs)
    assert not lost, "\n\n".join(lost)


# ---------------------------------------------------------------- the self-check command

def _noisiest_round(assignment):
    """The round with the most styles that print or warn."""
    plan = rounds(assignment)
    return max(range(len(plan)), key=lambda k: sum(bool(expected_note(r)) for r in plan[k].values()))


@pytest.mark.parametrize("assignment", [
    pytest.param(a, marks=pytest.mark.xdist_group(a)) for a in MODULES])
@pytest.mark.slow
@pytest.mark.pipeline
def test_self_check_gives_full_marks_and_exit_zero(tmp_path, assignment):
    k = _noisiest_round(assignment)
    chosen = rounds(assignment)[k]
    notebook = tmp_path / f"{assignment}.ipynb"
    nbformat.write(submission(assignment, sources(chosen)), notebook)
    result = subprocess.run([sys.executable, "-m", "attncore.grading", "check", str(notebook)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    score = re.search(rf"{assignment}: (\S+) / (\S+) automatic points", result.stdout)
    assert score and score[1] == score[2] and float(score[2]) > 0, result.stdout
    for function, right in chosen.items():
        assert re.search(rf"^{function} .* ok$", result.stdout, re.M), (function, result.stdout)
        if expected_note(right):
            assert re.search(rf"Note: .*{expected_note(right)}", result.stdout), result.stdout


# ---------------------------------------------------------------- false positives found
# Correct solutions that once lost points: IPython syntax and display() (the worker now
# runs cells in an IPython shell's namespace when IPython is installed) and a pure-Python
# flash_attention on list copies of its inputs (the 05 memory case is now 96 x 1024 with
# tiles of 64), and log lines lost as notes (the worker's stdout and stderr now route to
# the capture of the call that runs, whenever a handler took hold of them).

@pytest.mark.slow
@pytest.mark.pipeline
def test_ipython_magics_in_a_solution_cell_cost_nothing():
    chosen = {
        "attention_scores": "%%time\ndef attention_scores(Q, K):\n"
                            "    return Q @ K.T / np.sqrt(Q.shape[-1])\n",
        "attention_weights": "def attention_weights(Q, K):\n"
                             "    return softmax(attention_scores(Q, K), axis=-1)\n\n"
                             "%timeit attention_weights(Q_example, K_example)\n",
    }
    failed = [gid for gid, v in verdicts(submission("01-convention", chosen)).items()
              if not v.passed]
    assert not failed


@pytest.mark.slow
@pytest.mark.pipeline
def test_display_inside_a_function_costs_nothing():
    chosen = {"attention_weights": "def attention_weights(Q, K):\n"
                                   "    A = softmax(attention_scores(Q, K), axis=-1)\n"
                                   "    display(A.round(3))\n"
                                   "    return A\n"}
    failed = [gid for gid, v in verdicts(submission("01-convention", chosen)).items()
              if not v.passed]
    assert not failed


PYTHON_LISTS_FLASH = '''
import math

def flash_attention(Q, K, V, block_size):
    Q, K, V = Q.tolist(), K.tolist(), V.tolist()      # plain Python from here on
    scale = 1 / math.sqrt(len(Q[0]))
    out = []
    for q0 in range(0, len(Q), block_size):
        for q in Q[q0:q0 + block_size]:
            m, l, acc = -math.inf, 0.0, [0.0] * len(V[0])
            for k0 in range(0, len(K), block_size):
                s = [scale * sum(a * b for a, b in zip(q, k)) for k in K[k0:k0 + block_size]]
                m_new = max(m, max(s))
                alpha = math.exp(m - m_new)
                p = [math.exp(x - m_new) for x in s]
                l = alpha * l + sum(p)
                acc = [alpha * a + sum(pj * v[c] for pj, v in zip(p, V[k0:k0 + block_size]))
                       for c, a in enumerate(acc)]
                m = m_new
            out.append([a / l for a in acc])
    return np.array(out)
'''


@pytest.mark.slow
@pytest.mark.pipeline
def test_pure_python_flash_attention_on_lists_of_the_inputs_keeps_the_memory_point():
    result = verdicts(submission("05-flash", {"flash_attention": PYTHON_LISTS_FLASH}))
    assert result["flash_attention-memory"].passed, result["flash_attention-memory"].message


@pytest.mark.slow
@pytest.mark.pipeline
def test_logging_is_shown_as_a_note_in_every_function_that_logs():
    chosen = {
        "attention_scores": "import logging\nlogging.basicConfig(level=logging.INFO)\n\n"
                            "def attention_scores(Q, K):\n"
                            "    logging.info('scores for %d queries', len(Q))\n"
                            "    return Q @ K.T / np.sqrt(Q.shape[-1])\n",
        "attention": "import logging\n\ndef attention(Q, K, V):\n"
                     "    logging.getLogger('mine').warning('attention for %d queries', len(Q))\n"
                     "    return attention_weights(Q, K) @ V\n",
    }
    result = verdicts(submission("01-convention", chosen))
    assert all(v.passed for v in result.values())
    for function in chosen:
        notes = [n for gid, v in result.items() if gid.startswith(function + "-") for n in v.notes]
        assert any("queries" in note for note in notes), (function, notes)
