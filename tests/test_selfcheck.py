"""`attncore-check NOTEBOOK`: the learner's one command, run as a learner runs it."""
import copy
import importlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from nbformat.corpus.words import generate_corpus_id

from attncore.grading.course.sandbox import available as sandbox_unavailable

from .gradekit import ROOT, release_notebook, submission

pytestmark = pytest.mark.xdist_group("selfcheck")


def run_check(*args, cwd=ROOT, **env):
    """The self-check's result, its table as wide as a 120-column terminal's (env: more
    of the environment)."""
    return subprocess.run([sys.executable, "-m", "attncore.grading", "check", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "120", **env})


def test_reference_solution_gets_full_marks_and_exit_zero(tmp_path):
    notebook = tmp_path / "03-masking.ipynb"
    nbformat.write(submission("03-masking"), notebook)
    result = run_check(notebook.name, cwd=tmp_path)  # in the notebook's folder, no repository
    assert result.returncode == 0, result.stdout + result.stderr
    assert "03-masking: 13 / 13 automatic points, from every test the course has" in result.stdout
    for function in ("causal_mask", "key_padding_mask", "sliding_window_mask", "masked_softmax"):
        assert any(line.startswith(function) and line.rstrip().endswith("ok")
                   for line in result.stdout.splitlines()), function


def test_named_mistake_is_printed_with_its_fix_and_exit_one(tmp_path):
    wrong = "def attention_scores(Q, K):\n    return K @ Q.T / np.sqrt(Q.shape[-1])\n"
    notebook = tmp_path / "01-convention.ipynb"
    nbformat.write(submission("01-convention", {"attention_scores": wrong}), notebook)
    result = run_check(notebook)
    assert result.returncode == 1
    assert "attention_scores               0 / 3  attention_scores: transposed score matrix (K Q^T)" \
        in result.stdout
    assert "How to fix: rows are queries and columns are keys" in result.stdout
    assert "Traceback" not in result.stdout


def test_json_gives_points_passed_and_misconception_per_function_and_suite(tmp_path):
    """`--json`: one JSON object on stdout, nothing else, for CI and LMS import."""
    wrong = "def attention_scores(Q, K):\n    return K @ Q.T / np.sqrt(Q.shape[-1])\n"
    for name, replaced, status in [("right", {}, 0), ("wrong", {"attention_scores": wrong}, 1)]:
        notebook = tmp_path / name / "01-convention.ipynb"
        notebook.parent.mkdir()
        nbformat.write(submission("01-convention", replaced), notebook)
        result = run_check("--json", "--seed", 7, notebook)
        assert result.returncode == status, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert (report["assignment"], report["seed"]) == ("01-convention", 7)
        assert "hidden cases drawn with seed 7" in report["graded"]
        functions = {f["function"]: f for f in report["functions"]}
        assert list(functions) == ["attention_scores", "attention_weights", "attention"]
        for function, entry in functions.items():
            lost = name == "wrong" and function == "attention_scores"
            assert entry["passed"] is not lost and entry["max_points"] == 3
            assert entry["points"] == (0 if lost else 3)
            assert entry["misconception"] == ("transposed score matrix (K Q^T)" if lost else None)
            assert entry["points"] == sum(s["points"] for s in entry["suites"])
            for suite in entry["suites"]:
                assert suite["grade_id"] == f"{function}-{suite['suite']}"
                assert suite["passed"] is not lost and suite["misconception"] == entry["misconception"]
                callee = {"attention_weights": ["attention_scores"],
                          "attention": ["attention_weights"]}.get(function, [])
                assert suite["graded_with_reference"] == (callee if name == "wrong" else [])
        assert report["points"] == (6 if name == "wrong" else 9) and report["max_points"] == 9
        assert report["full_marks"] is (name == "right")
        assert report["written_answers"] == [{"grade_id": "axis_answer", "points": None,
                                              "max_points": 2.0}]


def test_json_of_a_path_that_is_no_notebook_says_the_error(tmp_path):
    result = run_check("--json", tmp_path / "missing.ipynb")
    assert result.returncode == 2 and "no such file" in json.loads(result.stdout)["error"]


def test_hidden_tests_run_without_solutions_and_count_when_they_fail(tmp_path):
    """A learner's copy of the release has hidden cells with no code: the self-check runs
    the hidden suites from the installed package and counts their failures."""
    only_visible = ("def masked_softmax(scores, mask):\n"
                    "    s = np.where(mask, scores, -np.inf)\n"
                    "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
                    "    return e / e.sum(axis=-1, keepdims=True)\n")  # NaN on a fully masked row
    notebook = tmp_path / "03-masking.ipynb"
    nbformat.write(submission("03-masking", {"masked_softmax": only_visible}), notebook)
    result = run_check(notebook)
    assert result.returncode == 1
    line = next(l for l in result.stdout.splitlines() if l.startswith("masked_softmax"))
    assert "ok" not in line and " / 6" in line and not line.split()[1].startswith("6")
    assert "masked_softmax-empty" in result.stdout


def test_untouched_exercise_scores_zero_without_crashing():
    result = run_check(release_notebook("02-simplex"))
    assert result.returncode == 1
    assert "02-simplex: 0 / 7 automatic points" in result.stdout
    assert "not written yet" in result.stdout
    assert "written answer, graded by hand" in result.stdout


def test_warnings_and_prints_cost_nothing_and_are_noted(tmp_path):
    noisy = ("import sys, warnings\n"
             "def attention_scores(Q, K):\n"
             "    print('computing scores', file=sys.stderr)\n"
             "    warnings.warn('just saying')\n"
             "    return Q @ K.T / np.sqrt(Q.shape[-1])\n")
    notebook = tmp_path / "01-convention.ipynb"
    nbformat.write(submission("01-convention", {"attention_scores": noisy}), notebook)
    result = run_check(notebook)
    assert result.returncode == 0, result.stdout
    assert "UserWarning: just saying (not a mistake in itself; it costs no points)" in result.stdout
    assert "printed to stderr: 'computing scores'" in result.stdout


def test_assignment_name_finds_the_notebook_from_the_exercises_folder(tmp_path):
    """JupyterLab's terminal starts in exercises/: the assignment's name is enough."""
    folder = tmp_path / "exercises" / "04-heads"
    folder.mkdir(parents=True)
    shutil.copy(release_notebook("04-heads"), folder / "04-heads.ipynb")
    for cwd in (tmp_path, tmp_path / "exercises", folder):
        result = run_check("04-heads", cwd=cwd)
        assert result.returncode == 1 and "04-heads: 0 / 8" in result.stdout, (cwd, result.stderr)


def test_assignment_name_prefers_the_learners_copy_at_the_repository_root(tmp_path):
    """From the repository root the name grades my-exercises/ (where learners work), not
    the untouched exercises/, and the report says which file it graded."""
    for folder, notebook in (("exercises", nbformat.read(release_notebook("04-heads"), 4)),
                             ("my-exercises", submission("04-heads"))):  # solved
        (tmp_path / folder / "04-heads").mkdir(parents=True)
        nbformat.write(notebook, tmp_path / folder / "04-heads" / "04-heads.ipynb")
    result = run_check("04-heads", cwd=tmp_path)
    graded = Path("my-exercises", "04-heads", "04-heads.ipynb")
    assert result.stdout.startswith(f"checked {graded} (found for '04-heads'"), result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_declared_entry_point_is_the_self_check(capsys):
    """pyproject.toml's [project.scripts] names the function behind `attncore-check`; that it
    is installed as a script is the wheel's test (tests/test_wheel.py)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["attncore-check"].partition(":")
    main = getattr(importlib.import_module(module), name)
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    shown = capsys.readouterr().out
    assert stopped.value.code == 0 and "notebook" in shown and "--json" in shown


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.ipynb", "no such file"),
    (lambda d: (d / "notes.ipynb").write_text("not json") and d / "notes.ipynb",
     "is not a Jupyter notebook"),
    (lambda d: ROOT / "book" / "intro.ipynb", "is a notebook, but not one of the course's assignments"),
])
def test_wrong_paths_get_a_clear_error(tmp_path, make, message):
    result = run_check(make(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- what autograde would repair or refuse

def test_a_pasted_cell_and_a_schema_version_are_repaired_as_autograde_repairs_them(tmp_path):
    """Red team a13 (with a08): the notebook that aborted the instructor's run gets full
    marks here as there, and the report says what was repaired; --json lists it too."""
    notebook = submission("02-simplex")
    at = next(k for k, c in enumerate(notebook.cells)
              if c.metadata["nbgrader"]["grade_id"] == "worked-example-code")
    notebook.cells.insert(at, copy.deepcopy(notebook.cells[at]))
    notebook.cells[at].id = generate_corpus_id()
    notebook.cells[-1].metadata["nbgrader"]["schema_version"] = 99
    notebook.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade_id": "softmax-extreme2", "grade": True, "points": 50, "locked": True,
        "solution": False, "schema_version": 3}}))
    path = tmp_path / "02-simplex.ipynb"
    nbformat.write(notebook, path)
    result = run_check(path, "--seed", 3)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "02-simplex: 7 / 7 automatic points" in result.stdout
    assert "The grader repaired your notebook's grading metadata" in result.stdout
    for said in ("cell 'worked-example-code' appears 2 times", "schema version 99",
                 "cell 'softmax-extreme2' the assignment does not have"):
        assert said in result.stdout, said
    report = json.loads(run_check(path, "--json", "--seed", 3).stdout)
    assert report["full_marks"] and len(report["repaired"]) == 3


@pytest.mark.parametrize("text, reason", [
    ("{not json", "is not a Jupyter notebook (JSONDecodeError): nothing graded"),
    ('{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "cells": []}',
     "is a notebook of a format nbgrader cannot read (nbformat 3): nothing graded"),
])
def test_a_file_autograde_cannot_grade_is_refused_with_the_same_reason(tmp_path, text, reason):
    path = tmp_path / "02-simplex.ipynb"
    path.write_text(text)
    result = run_check(path)
    assert result.returncode == 2 and reason in result.stderr and "Traceback" not in result.stderr


def test_a_cell_that_is_no_cell_is_refused_not_graded(tmp_path):
    data = json.loads(nbformat.writes(submission("02-simplex")))
    data["cells"][5]["source"] = 12
    path = tmp_path / "02-simplex.ipynb"
    path.write_text(json.dumps(data))
    result = run_check(path)
    assert result.returncode == 2 and "is not a valid Jupyter notebook (cell 6" in result.stderr


def test_a_reader_that_stops_early_ends_the_output_quietly():
    """`attncore-check NB | head`: the reader closes the pipe; no BrokenPipeError traceback."""
    writer = subprocess.Popen([sys.executable, "-c", "from attncore.grading.course.selfcheck "
                               "import _print; _print('x' * (1 << 20)); _print('more')"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    writer.stdout.read(10)
    writer.stdout.close()
    assert writer.wait(timeout=60) == 0
    assert writer.stderr.read() == b""


def test_the_feedback_column_wraps_at_words_to_the_terminal(monkeypatch):
    from attncore.grading.course.runner import CellVerdict
    from attncore.grading.course.selfcheck import report

    long = ("attention_scores: transposed score matrix (K Q^T), which gives the weights of "
            "each key over the queries instead of each query over the keys")
    grades = [("attention_scores-basic", 1.0, CellVerdict(False, long + "\nmore")),
              ("attention_weights-basic", 1.0, CellVerdict(True, ""))]
    monkeypatch.setenv("COLUMNS", "80")
    text, _ = report("01-convention", grades)
    table = text.split("-" * 72)[1].split("\n\n")[0].splitlines()[1:]
    assert all(len(line) <= 80 for line in table), table
    assert " ".join(line[38:] for line in table[:-2]).split() == long.split()


def test_the_self_check_measures_memory_as_autograde_does(tmp_path):
    """Red team a13 (with a03): the matrix built in a forked child got full marks from the
    self-check; now, as in autograde, no process starts during a graded call, and the
    memory case fails as for the same code in plain sight."""
    from .test_red_team import FORKED

    path = tmp_path / "05-flash.ipynb"
    nbformat.write(submission("05-flash", {"flash_attention": FORKED}), path)
    result = run_check("--json", path)
    assert result.returncode == 1, result.stdout + result.stderr
    suites = {s["suite"]: s["passed"] for f in json.loads(result.stdout)["functions"]
              if f["function"] == "flash_attention" for s in f["suites"]}
    assert suites == {"basic": True, "hidden": True, "extreme": True, "memory": False}, suites


# the second red team's attacks (#16-#19, #7): assignment, function, source in test_red_team
GRADER_FAILS = {"a fake seal": ("06-variants", "sparsemax", "SPARSEMAX_FAKE_SEAL"),
                "library code taken with gc": ("06-variants", "sparsemax", "SPARSEMAX_GC"),
                "a Numba kernel of the library": ("02-simplex", "softmax", "SOFTMAX_JIT"),
                "a child forked at load serves the library": ("06-variants", "sparsemax",
                                                              "SPARSEMAX_ORACLE"),
                "a buffer filled at load": ("05-flash", "flash_attention", "FLASH_PREALLOCATED")}


@pytest.mark.skipif(bool(sandbox_unavailable()), reason="the grader's route needs a sandbox")
@pytest.mark.parametrize("attack", GRADER_FAILS)
def test_what_the_grader_fails_the_self_check_fails_with_or_without_a_sandbox(tmp_path, attack):
    """Second red team #30: attncore-check gave full marks to attacks that beat the grader.
    The self-check runs the grader's own worker (course.runner), and without a sandbox
    the worker gets the sandbox's library (its modules not allowed left out), so the same
    notebook fails the same tests on all three routes."""
    from attncore.grading.course.runner import grade_notebook

    from . import test_red_team

    assignment, function, name = GRADER_FAILS[attack]
    notebook = tmp_path / f"{assignment}.ipynb"
    source = "import numpy as np\n" + getattr(test_red_team, name)
    nbformat.write(submission(assignment, {function: source}), notebook)
    graded = grade_notebook(nbformat.read(notebook, as_version=4).cells, cwd=tmp_path,
                            sandbox="bubblewrap", seed=5)
    failed = {grade_id for grade_id, verdict in graded.items() if not verdict.passed}
    assert failed and all(grade_id.startswith(f"{function}-") for grade_id in failed), failed
    for route in ({}, {"ATTNCORE_BWRAP": str(tmp_path / "no-bwrap-here")}):
        result = run_check("--json", "--seed", 5, notebook.name, cwd=tmp_path, **route)
        assert result.returncode == 1, (route, result.stdout + result.stderr)
        checked = json.loads(result.stdout)
        assert ("not sandboxed" in checked["graded"]) == bool(route), checked["graded"]
        assert {s["grade_id"] for f in checked["functions"] for s in f["suites"]
                if not s["passed"]} == failed, (route, checked)
