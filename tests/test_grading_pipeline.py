"""The instructor's nbgrader workflow, end to end, on real notebooks in a temporary course.

generate_assignment -> submissions -> autograde -> generate_feedback, with the
repository's nbgrader_config.py layout, no Jupyter server and no network.
"""
import json

import nbformat
import pytest

from attncore.grading import ASSIGNMENTS
from attncore.grading.course import CONFIG_FILE, Course

from .gradekit import ROOT, reference_sources, release_notebook, source_notebook, submission

ALL = list(ASSIGNMENTS)
# Tests that share the module's course fixture run on one xdist worker.
pipeline = pytest.mark.xdist_group("pipeline")


def auto_points(grades):
    auto = [g for g in grades if not g.manual]
    return sum(g.score for g in auto), sum(g.max_score for g in auto)


def test_repository_config_is_the_course_layout():
    assert (ROOT / "nbgrader_config.py").read_text() == CONFIG_FILE


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """All assignments generated from solutions/, with reference and blank submissions graded."""
    course = Course(tmp_path_factory.mktemp("course"), {a: source_notebook(a) for a in ALL})
    for assignment in ALL:
        course.generate(assignment)
        course.submit(assignment, "reference", submission(assignment))
        course.submit(assignment, "untouched", release_notebook(assignment))
        course.autograde(assignment)
        course.generate_feedback(assignment)
    return course


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_committed_release_is_generated_from_solutions(course, assignment):
    generated = course.root / "exercises" / assignment / f"{assignment}.ipynb"
    committed = release_notebook(assignment)
    assert json.loads(generated.read_text()) == json.loads(committed.read_text()), (
        f"exercises/{assignment} is out of date with solutions/{assignment}: run `make exercises`")


@pytest.mark.parametrize("assignment", ALL)
def test_release_has_no_solutions_and_no_hidden_tests(assignment):
    text = release_notebook(assignment).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    release = nbformat.read(release_notebook(assignment), as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in release.cells}
    for function, reference in reference_sources(assignment).items():
        body = [line.strip() for line in reference.splitlines()
                if line.strip() and not line.strip().startswith(("def ", '"""', "#"))]
        leaked = [line for line in body if line in cells[function]]
        assert not leaked, f"{function}: reference lines in the release: {leaked}"
        assert "raise NotImplementedError()" in cells[function]
    hidden = [c for c in nbformat.read(source_notebook(assignment), as_version=4).cells
              if "BEGIN HIDDEN TESTS" in c.source]
    assert hidden, f"{assignment} has no hidden tests"
    for cell in hidden:
        call = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
        assert call.strip() not in cells[cell.metadata.nbgrader.grade_id]


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_autograded_copy_has_the_hidden_tests_back(course, assignment):
    graded = nbformat.read(course.root / ".nbgrader" / "autograded" / "reference" / assignment
                           / f"{assignment}.ipynb", as_version=4)
    assert sum("BEGIN HIDDEN TESTS" in c.source for c in graded.cells) >= 1


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_reference_scores_full_marks(course, assignment):
    grades = course.grades(assignment, "reference")
    failed = [(g.grade_id, g.message[:300]) for g in grades if not g.manual and g.score < g.max_score]
    assert not failed
    got, total = auto_points(grades)
    assert got == total > 0


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_untouched_release_scores_zero_with_feedback(course, assignment):
    grades = course.grades(assignment, "untouched")
    assert auto_points(grades)[0] == 0
    for g in grades:
        if not g.manual:
            assert "not written yet" in g.message, (g.grade_id, g.message[:200])
    feedback = course.root / ".nbgrader" / "feedback"
    for student in ("reference", "untouched"):
        assert (feedback / student / assignment / f"{assignment}.html").is_file()


def test_raising_endless_and_noisy_submissions_are_all_graded(tmp_path):
    """One student's code raises, one never returns, one prints megabytes: all are graded,
    and a correct submission graded in the same run keeps full marks."""
    assignment = "01-convention"
    course = Course(tmp_path, {assignment: source_notebook(assignment)})
    course.generate(assignment)
    course.submit(assignment, "raises", submission(assignment, {
        "attention_scores": "def attention_scores(Q, K):\n    raise RuntimeError('oops')\n"}))
    course.submit(assignment, "endless", submission(assignment, {
        "attention": "def attention(Q, K, V):\n    while True:\n        pass\n"}))
    course.submit(assignment, "noisy", submission(assignment, {
        "attention_scores": "print('x' * 5_000_000)\n" + reference_sources(assignment)["attention_scores"]}))
    course.submit(assignment, "reference", submission(assignment))
    course.autograde(assignment, None, "--Execute.timeout=3")
    course.generate_feedback(assignment)

    raises = {g.grade_id: g for g in course.grades(assignment, "raises")}
    assert raises["attention_scores-basic"].score == 0
    assert "raised RuntimeError: oops" in raises["attention_scores-basic"].message
    graded = nbformat.read(tmp_path / ".nbgrader" / "autograded" / "raises" / assignment
                           / f"{assignment}.ipynb", as_version=4)
    errors = [o for c in graded.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors and all(len(o.traceback) == 1 for o in errors)  # the message, no grader frames
    endless = {g.grade_id: g for g in course.grades(assignment, "endless")}
    assert all(endless[f"attention-{s}"].score == 0 for s in ("basic", "hidden", "extreme"))
    assert endless["attention_scores-basic"].score == 1  # the other functions still graded
    noisy = course.grades(assignment, "noisy")
    assert auto_points(noisy)[0] == auto_points(noisy)[1]
    noisy_notebook = (tmp_path / ".nbgrader" / "autograded" / "noisy" / assignment
                      / f"{assignment}.ipynb")
    assert noisy_notebook.stat().st_size < 1_000_000  # LimitOutput trimmed the megabytes
    reference = course.grades(assignment, "reference")
    assert auto_points(reference)[0] == auto_points(reference)[1]
    for student in ("raises", "endless", "noisy", "reference"):
        assert (tmp_path / ".nbgrader" / "feedback" / student / assignment
                / f"{assignment}.html").is_file()


TAMPERING = {
    "replace the checker": "import attncore.grading\nattncore.grading.check = lambda *a, **k: None\n",
    "replace numpy's comparison": "import numpy\nnumpy.allclose = lambda *a, **k: True\n",
    "replace a builtin": "import builtins\nbuiltins.callable = lambda f: True\n",
    "patch a probe module": "from attncore.grading import probe as p\np.same = lambda *a, **k: True\n",
}


def test_tampering_gains_no_points_and_feedback_says_so(tmp_path):
    assignment = "01-convention"
    course = Course(tmp_path, {assignment: source_notebook(assignment)})
    course.generate(assignment)
    wrong = "def attention_scores(Q, K):\n    return K @ Q.T\n"
    for k, trick in enumerate(TAMPERING.values()):
        course.submit(assignment, f"tamper{k}", submission(assignment, {"attention_scores": trick + wrong}))
    course.autograde(assignment, None, "--Execute.timeout=30")
    for k, name in enumerate(TAMPERING):
        grades = course.grades(assignment, f"tamper{k}")
        assert auto_points(grades)[0] == 0, name
        assert all("tampering with the grader detected" in g.message
                   for g in grades if not g.manual), name
