"""nbgrader's configuration for this course: the layout, and autograding out of process.

nbgrader_config.py at the repository root merges course_config(root). Autograde runs
nbgrader's own default pipeline with three changes:
- its Execute preprocessor (which would run the learner's code in the process that
  grades it) is replaced by GradeOutOfProcess, so the scores and the feedback come from
  course.runner and nbgrader's SaveAutoGrades records them as usual (but for a cell the
  grader itself failed on, which LeaveGraderErrorsToTheInstructor leaves for manual
  grading);
- its sanitising steps start with NormaliseMetadata (course.normalise), so that no
  metadata a submission holds stops nbgrader's checks;
- its exporter is course.contain's, so that a submission that cannot be graded is
  recorded as such (course.ungradable) and the run goes on to the next.
Every log line escapes the control characters a submission's text may hold.
"""
import os
from pathlib import Path

from traitlets.config import Config

from .layout import RELEASE, SOURCE, WORK, parse_grade_id

COURSE_ID = "attention-matrix"
# A learner's file in an LMS download is "<student id>_<assignment>.ipynb" (the student id
# has no underscore). nbgrader's FileNameCollectorPlugin matches this from the start of the
# file's whole path (the extracted folder, the zip's own folder, then the name), so the
# pattern skips every folder and reads the ids from the file name alone.
ZIP_FILE_NAME = r"(?:.*[/\\])?(?P<student_id>[^_/\\]+)_(?P<file_id>[^/\\]+)$"


TEMPLATES = Path(__file__).parent / "templates"


def offline_mathjax(name):
    """The text of MathJax 3's file `name`, from the copy that the sphinx-mathjax-offline
    package ships (the book's MathJax too), for feedback pages that need no network."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        files = distribution("sphinx-mathjax-offline")
    except PackageNotFoundError:
        raise ImportError("feedback pages inline MathJax from sphinx-mathjax-offline: "
                          "pip install 'attncore[grading]'") from None
    path = files.locate_file(f"sphinx-mathjax-offline/static/mathjax/{name}")
    return Path(path).read_text(encoding="utf-8")


def name_test_cell(grade_id):
    """(function, "visible" or "hidden", suite) of a test cell's grade id, or None: how the
    feedback page names a test cell."""
    from ..engine.probe import VISIBLE_SUITES

    parsed = parse_grade_id(grade_id)
    if parsed is None:
        return None
    function, suite = parsed
    return function, "visible" if suite in VISIBLE_SUITES else "hidden", suite


def _nbgrader_templates():
    import nbgrader

    return str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates")


def course_config(root):
    """The nbgrader Config for a course rooted at `root` (creates root/.nbgrader)."""
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute, SaveAutoGrades

    from .contain import ContainedExporter
    from .pages import markdown2html
    from .preprocessors import GradeOutOfProcess, LeaveGraderErrorsToTheInstructor, NormaliseMetadata

    root = os.path.abspath(root)
    work = os.path.join(root, WORK)
    os.makedirs(work, exist_ok=True)
    c = Config()
    c.CourseDirectory.root = root
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = SOURCE
    c.CourseDirectory.release_directory = RELEASE
    for step in ("submitted", "autograded", "feedback", "solution"):
        setattr(c.CourseDirectory, f"{step}_directory", f"{WORK}/{step}")
    c.CourseDirectory.db_url = f"sqlite:///{os.path.join(work, 'gradebook.db')}"
    c.ExportPlugin.to = os.path.join(work, "grades.csv")
    # nbgrader joins the course root to this itself: an absolute path would get it twice.
    c.ZipCollectApp.downloaded_directory = f"{WORK}/downloaded"
    c.FileNameCollectorPlugin.named_regexp = ZIP_FILE_NAME
    # The feedback page's exporter only (formgrader's keeps its own grading page).
    c.GenerateFeedback.HTMLExporter.template_name = "attncore_feedback"
    c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [str(TEMPLATES), _nbgrader_templates()]
    # the page, which extends nbgrader's feedback page (index.html.j2) under its own name
    c.GenerateFeedback.HTMLExporter.template_file = "feedback.html.j2"
    # Every page nbgrader renders of a submission (feedback, formgrader's) shows what the
    # learner wrote as text: their Markdown (course.pages), raw cells and outputs are
    # sanitised, so no script of theirs runs in the instructor's browser.
    c.HTMLExporter.filters = {"offline_mathjax": offline_mathjax, "test_cell": name_test_cell,
                              "markdown2html": markdown2html}
    c.HTMLExporter.sanitize_html = True
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [
        replaced for step in default for replaced in
        ([GradeOutOfProcess] if step is Execute else
         [step, LeaveGraderErrorsToTheInstructor] if step is SaveAutoGrades else [step])]
    c.Autograde.sanitize_preprocessors = [
        NormaliseMetadata, *Autograde.class_traits()["sanitize_preprocessors"].default()]
    c.Autograde.exporter_class = ContainedExporter
    c.Application.logging_config = PRINTABLE_LOGS
    return c


# Added to the configuration of every nbgrader command's log (traitlets merges it into its
# own): each record's text is escaped before any handler writes it.
PRINTABLE_LOGS = {
    "filters": {"printable": {"()": "attncore.grading.course.printable.PrintableRecords"}},
    "handlers": {"console": {"filters": ["printable"]}},
}
