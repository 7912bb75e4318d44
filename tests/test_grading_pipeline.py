"""The instructor's nbgrader workflow, end to end, on real notebooks in a temporary course.

generate_assignment -> submissions -> autograde -> generate_feedback, with the
repository's nbgrader_config.py, no Jupyter server and no network. Autograde runs
nbgrader's default pipeline with Execute replaced by the out-of-process grader.
"""
import html
import json
import os
import re

import nbformat
import pytest

from attncore.grading.course.config import course_config
from attncore.grading.course.layout import parse_grade_id
from attncore.grading.engine import ASSIGNMENTS, SPECS
from attncore.grading.engine.probe import VISIBLE_SUITES

from .gradekit import (
    ROOT, Course, auto_points, points_by_function, reference_sources, release_notebook,
    source_notebook, submission,
)
from .test_tamper import last_wrong

ALL = list(ASSIGNMENTS)
# Tests that share the module's course fixture run on one xdist worker.
pipeline = pytest.mark.xdist_group("pipeline")
CRASHED = ("01-convention", "attention_weights")  # graded with its cell raising at load
# A wrong function that others call: (function, source, the functions that call it).
WRONG_CALLEE = {
    "01-convention": ("attention_scores", "def attention_scores(Q, K):\n    return K @ Q.T\n",
                      ["attention_weights", "attention"]),
    "04-heads": ("kv_head_for", "def kv_head_for(q_head, n_q_heads, n_kv_heads):\n"
                                "    return q_head % n_kv_heads\n", ["grouped_query_attention"]),
    "07-real-model": ("split_heads", "def split_heads(x, n_heads):\n    B, T, D = x.shape\n"
                                     "    return x.reshape(B, n_heads, T, D // n_heads)\n",
                      ["layer_attention"]),
}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """All assignments generated from solutions/, with reference and blank submissions graded."""
    course = Course(tmp_path_factory.mktemp("course"), ALL)
    course.autograde_logs = {}
    for assignment in ALL:
        course.generate(assignment)
        course.submit(assignment, "reference", submission(assignment))
        course.submit(assignment, "untouched", release_notebook(assignment))
        course.submit(assignment, "wrong", submission(assignment, {
            last_wrong(assignment).function: last_wrong(assignment).source}))
        if assignment in WRONG_CALLEE:
            function, source, _ = WRONG_CALLEE[assignment]
            course.submit(assignment, "wrong-callee", submission(assignment, {function: source}))
        if assignment == CRASHED[0]:  # a solution cell that raises before its def
            course.submit(assignment, "crashed", submission(assignment, {
                CRASHED[1]: "scale = 1 / 0\n" + reference_sources(assignment)[CRASHED[1]]}))
        course.autograde_logs[assignment] = course.autograde(assignment).stderr
        course.generate_feedback(assignment)
    return course


def test_autograde_is_nbgraders_default_pipeline_with_execute_replaced(tmp_path):
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute, SaveAutoGrades

    from attncore.grading.course.preprocessors import GradeOutOfProcess, LeaveGraderErrorsToTheInstructor

    default = Autograde.class_traits()["autograde_preprocessors"].default()
    ours = course_config(tmp_path).Autograde.autograde_preprocessors
    assert Execute in default and Execute not in ours
    after_saving = default.index(SaveAutoGrades) + 1
    assert [GradeOutOfProcess if step is Execute else step for step in default] == \
        ours[:after_saving] + ours[after_saving + 1:]
    assert ours[after_saving] is LeaveGraderErrorsToTheInstructor


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_committed_release_is_generated_from_solutions(course, assignment):
    generated = course.root / "exercises" / assignment / f"{assignment}.ipynb"
    committed = release_notebook(assignment)
    assert json.loads(generated.read_text()) == json.loads(committed.read_text()), (
        f"exercises/{assignment} is out of date with solutions/{assignment}: run `make exercises`")


@pytest.mark.parametrize("assignment", ALL)
def test_release_has_no_solutions_and_test_cells_import_no_bare_name(assignment):
    text = release_notebook(assignment).read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS"):
        assert marker not in text
    release = nbformat.read(release_notebook(assignment), as_version=4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in release.cells}
    for cell in nbformat.read(source_notebook(assignment), as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("solution"):
            continue
        hidden = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S)
        body = [line.strip() for block in hidden for line in block.splitlines()
                if line.strip() and not line.strip().startswith("#")]
        leaked = [line for line in body if line in cells[meta["grade_id"]]]
        assert body and not leaked, f"{meta['grade_id']}: reference lines in the release: {leaked}"
        assert "raise NotImplementedError()" in cells[meta["grade_id"]]
    for cell in release.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            assert "from attncore" not in cell.source and "import check" not in cell.source


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_autograde_warns_of_no_changed_cell(course, assignment):
    """Hidden cells hold the same comment in source and release: no checksum changes."""
    log = course.autograde_logs[assignment]
    assert "Autograding" in log and "has changed" not in log and "WARNING" not in log


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_reference_scores_full_marks(course, assignment):
    grades = course.grades(assignment, "reference")
    failed = [(g.grade_id, g.message[:300]) for g in grades if not g.manual and g.score < g.max_score]
    assert not failed
    got, total = auto_points(grades)
    assert got == total > 0
    for g in grades:  # one line that says how many cases passed, visible or hidden
        if not g.manual:
            function, suite = parse_grade_id(g.grade_id)
            n, kind = len(SPECS[function].suites[suite]), kinds(suite)
            assert g.output.splitlines()[0] == (
                f"passed: {n} {kind} case{'s' if n != 1 else ''} (suite {suite})")


def kinds(suite):
    return "visible" if suite in VISIBLE_SUITES else "hidden"


def feedback_page(course, student, assignment):
    return (course.root / ".nbgrader" / "feedback" / student / assignment
            / f"{assignment}.html").read_text()


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_feedback_names_each_test_cell_by_function_and_suite(course, assignment):
    page = feedback_page(course, "wrong", assignment)
    assert ">Test cell<" not in page and "Grade cell:" not in page
    notebook = nbformat.read(source_notebook(assignment), as_version=4)
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            function, suite = parse_grade_id(meta["grade_id"])
            name = f"<code>{function}</code>, {kinds(suite)} suite <code>{suite}</code>"
            assert f'<a href="#{meta["grade_id"]}">{name}</a>' in page  # table of contents
            assert f"Test of {name}</span>" in page  # the cell's own heading


@pipeline
def test_feedback_wraps_long_lines(course):
    """The feedback of a test cell is a <pre>: it wraps instead of running off the screen."""
    page = feedback_page(course, "wrong", ALL[0])
    style = " ".join(re.findall(r"<style[^>]*>(.*?)</style>", page, re.S)[-1].split())
    assert "div.output_area pre, div.output_subarea pre { white-space: pre-wrap;" in style
    assert re.search(r'class="output_subarea output_text output_error">\s*<pre>', page)
    assert "How to fix" in html.unescape(page)


@pipeline
def test_a_cell_that_raised_when_loaded_says_so_in_the_feedback(course):
    assignment, function = CRASHED
    page = html.unescape(feedback_page(course, "crashed", assignment))
    raised = "raised ZeroDivisionError (line 1): division by zero.\n  line 1: scale = 1 / 0"
    # under the student's cell itself, with the line that raised
    assert f"When the grader ran this cell, it {raised}\nThe cell stopped there" in page
    # and in each of its test cells, which give no points
    points = points_by_function(course.grades(assignment, "crashed"), assignment)
    score, _, messages = points[function]
    assert score == 0 and messages
    assert all("not defined" in m and f"Its cell {raised}" in m for m in messages), messages


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


@pipeline
@pytest.mark.parametrize("assignment", ALL)
def test_a_wrong_solution_loses_points_and_is_named_in_the_gradebook(course, assignment):
    wrong = last_wrong(assignment)
    points = points_by_function(course.grades(assignment, "wrong"), assignment)
    score, most, messages = points[wrong.function]
    assert score < most and wrong.misconception in "\n".join(messages)
    assert all(s == m for f, (s, m, _) in points.items() if f != wrong.function)
    page = (course.root / ".nbgrader" / "feedback" / "wrong" / assignment
            / f"{assignment}.html").read_text()
    assert wrong.misconception in html.unescape(page)


@pipeline
@pytest.mark.parametrize("assignment", list(WRONG_CALLEE))
def test_a_wrong_callee_costs_its_own_points_only(course, assignment):
    """Its callers get their points, and their cells say why they were graded again."""
    wrong, _, callers = WRONG_CALLEE[assignment]
    points = points_by_function(course.grades(assignment, "wrong-callee"), assignment)
    assert points[wrong][0] == 0
    assert all(s == m for f, (s, m, _) in points.items() if f != wrong)
    outputs = "\n".join(g.output for g in course.grades(assignment, "wrong-callee"))
    for caller in callers:
        assert f"Your {caller} is right: it failed only because your {wrong} is wrong" in outputs


@pipeline
def test_feedback_html_needs_no_network(course):
    html = (course.root / ".nbgrader" / "feedback" / "untouched" / "01-convention"
            / "01-convention.html").read_text()
    assert "not written yet" in html
    assert not re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"https?://", html)
    assert "window.MathJax" in html  # MathJax 3, inline


def test_student_data_stays_under_the_work_folder(tmp_path):
    config = course_config(tmp_path)
    work = str(tmp_path / ".nbgrader")
    assert config.ExportPlugin.to.startswith(work)
    # nbgrader joins the root to the downloads folder itself (an absolute one got it twice)
    downloaded = config.ZipCollectApp.downloaded_directory
    assert not os.path.isabs(downloaded)
    assert os.path.join(str(tmp_path), downloaded).startswith(work)
    assert config.CourseDirectory.db_url.endswith(".nbgrader/gradebook.db")


def test_repository_config_is_the_course_config():
    """nbgrader_config.py, loaded the way nbgrader loads it, is course_config and nothing else."""
    from traitlets.config.loader import PyFileConfigLoader

    loaded = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert loaded == course_config(str(ROOT))
