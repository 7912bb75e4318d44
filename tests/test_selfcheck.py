"""`python -m attncore.grading check`: the learner's one command, run as a learner runs it."""
import subprocess
import sys
from pathlib import Path

import pytest

from attncore.grading.course import CellGrade
from attncore.grading.selfcheck import report

from .gradekit import ROOT, release_notebook, submission

pytestmark = pytest.mark.xdist_group("selfcheck")


def run_check(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "attncore.grading", "check", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_reference_solution_gets_full_marks_and_exit_zero(tmp_path):
    notebook = tmp_path / "03-masking.ipynb"
    import nbformat
    nbformat.write(submission("03-masking"), notebook)
    result = run_check(notebook, cwd=tmp_path)  # from anywhere, not only the repository
    assert result.returncode == 0, result.stdout + result.stderr
    assert "03-masking: 13 / 13 automatic points (visible and hidden tests)" in result.stdout
    for function in ("causal_mask", "key_padding_mask", "sliding_window_mask", "masked_softmax"):
        assert any(line.startswith(function) and line.rstrip().endswith("ok")
                   for line in result.stdout.splitlines()), function


def test_named_mistake_is_printed_with_its_fix_and_exit_one(tmp_path):
    import nbformat
    wrong = "def attention_scores(Q, K):\n    return K @ Q.T / np.sqrt(Q.shape[-1])\n"
    notebook = tmp_path / "01-convention.ipynb"
    nbformat.write(submission("01-convention", {"attention_scores": wrong}), notebook)
    result = run_check(notebook)
    assert result.returncode == 1
    assert "attention_scores               0 / 3  attention_scores: transposed score matrix (K Q^T)" \
        in result.stdout
    assert "How to fix: rows are queries and columns are keys" in result.stdout
    assert "Traceback" not in result.stdout


def test_untouched_exercise_scores_zero_without_crashing():
    result = run_check(release_notebook("02-simplex"))
    assert result.returncode == 1
    assert "02-simplex: 0 / 7 automatic points" in result.stdout
    assert "not written yet" in result.stdout
    assert "written answer, graded by hand" in result.stdout


def test_console_entry_point_is_installed():
    script = Path(sys.executable).parent / "attncore-check"
    assert script.is_file()
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "check" in result.stdout


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.ipynb", "no such file"),
    (lambda d: (d / "notes.ipynb").write_text("not json") and d / "notes.ipynb",
     "is not a Jupyter notebook"),
    (lambda d: ROOT / "book" / "intro.ipynb", "is a notebook, but not one of the course's assignments"),
])
def test_wrong_paths_get_a_clear_error(tmp_path, make, message):
    result = run_check(make(tmp_path))
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_report_says_when_hidden_tests_were_not_available():
    grades = [CellGrade("softmax-basic", 1, 1, False, ""),
              CellGrade("is_row_stochastic-basic", 0, 1, False, "is_row_stochastic: not written yet."),
              CellGrade("simplex_proof", 0, 3, True, "")]
    text, full = report("02-simplex", False, grades)
    assert not full
    assert "(visible tests only: solutions/ with the hidden tests was not found)" in text
    assert "== is_row_stochastic-basic (0 / 1)\nis_row_stochastic: not written yet." in text
