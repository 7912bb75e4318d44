"""What no submission's metadata or text can do to a grading run, checked without one: the
repair of nbgrader metadata (course.normalise), the record of ungradable submissions
(course.ungradable) and the escaping of what reaches the instructor's terminal
(course.printable). Through a real `nbgrader autograde`: tests/test_red_team.py."""
import copy
import io
import logging

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.corpus.words import generate_corpus_id
from nbgrader.nbgraderformat import MetadataValidator

from attncore.grading.course import ungradable
from attncore.grading.course.normalise import SCHEMA_VERSION, Known, normalise
from attncore.grading.course.printable import PrintableRecords, printable

from .gradekit import release_notebook, submission

pytestmark = []  # the fast inner loop: no tier marker (tests/conftest.py)
ASSIGNMENT = "02-simplex"
ESCAPES = "\x1b]0;OWNED-TITLE\x07\x1b[1A\x1b[2K\x9b8m\u202e"


def known_of(notebook):
    """{grade id: Known} as the gradebook holds it, read from the released notebook."""
    known = {}
    for cell in notebook.cells:
        meta = cell.metadata["nbgrader"]
        known[meta["grade_id"]] = Known(
            cell.cell_type, meta["grade"], meta["solution"], meta["locked"],
            points=meta.get("points"), source=cell.source if meta["locked"] else None,
            checksum=meta["checksum"])
    return known


KNOWN = known_of(nbformat.read(release_notebook(ASSIGNMENT), as_version=4))


def graded(notebook):
    """[(grade id, cell type, metadata)] of the cells that keep grading metadata."""
    return [(c.metadata["nbgrader"]["grade_id"], c.cell_type, dict(c.metadata["nbgrader"]))
            for c in notebook.cells if "nbgrader" in c.metadata]


def index_of(notebook, grade_id):
    return next(k for k, c in enumerate(notebook.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_an_honest_notebook_is_left_as_it_is():
    notebook = submission(ASSIGNMENT)
    before = copy.deepcopy(notebook)
    assert normalise(notebook.cells, KNOWN) == []
    assert notebook == before


def test_a_pasted_copy_costs_nothing_and_the_real_cell_is_graded():
    notebook = submission(ASSIGNMENT)
    for grade_id in ("worked-example-code", "softmax-basic"):
        at = index_of(notebook, grade_id)
        notebook.cells.insert(at, copy.deepcopy(notebook.cells[at]))  # a copy above it
        notebook.cells[at].id = generate_corpus_id()
    pasted = index_of(notebook, "softmax-basic")  # the copy, above the real test cell
    notebook.cells[pasted].source = "# my notes, pasted into a copy of the test cell"
    repairs = normalise(notebook.cells, KNOWN)
    assert graded(notebook) == graded(submission(ASSIGNMENT))
    # of the test cell's copies, the one holding the instructor's source is the one graded
    assert notebook.cells[index_of(notebook, "softmax-basic")].source == KNOWN["softmax-basic"].source
    assert "nbgrader" not in notebook.cells[pasted].metadata
    assert len(repairs) == 2 and all("appears 2 times" in r for r in repairs), repairs


@pytest.mark.parametrize("version", [0, 1, 99, "3", None])
def test_any_schema_version_is_read_as_the_current_one(version):
    notebook = submission(ASSIGNMENT)
    notebook.cells[0].metadata["nbgrader"]["schema_version"] = version
    repairs = normalise(notebook.cells, KNOWN)
    assert graded(notebook) == graded(submission(ASSIGNMENT))
    assert [f"schema version {version!r}" in r for r in repairs] == [True]


def test_forged_cells_points_and_flags_earn_nothing():
    notebook = submission(ASSIGNMENT)
    notebook.cells.append(nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade_id": "softmax-extreme2", "grade": True, "points": 50, "solution": False,
        "locked": True, "schema_version": 3}}))
    notebook.cells.append(nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": {
        "grade_id": ["a", "list"], "grade": True, "points": 5}}))
    notebook.cells.append(nbformat.v4.new_code_cell("z = 3", metadata={"nbgrader": "not a record"}))
    test = notebook.cells[index_of(notebook, "softmax-basic")].metadata["nbgrader"]
    test.update(points=100, solution=True)
    answer = notebook.cells[index_of(notebook, "softmax")].metadata["nbgrader"]
    answer.update(grade=True, points=5)
    repairs = normalise(notebook.cells, KNOWN)
    assert graded(notebook) == graded(submission(ASSIGNMENT))
    assert sum("earns nothing" in r for r in repairs) == 3, repairs
    assert [c.source for c in notebook.cells[-3:]] == ["x = 1", "y = 2", "z = 3"]  # still run


@pytest.mark.parametrize("new_type", ["raw", "markdown"])
def test_a_test_cell_whose_type_changed_is_graded_as_the_code_cell_it_is(new_type):
    notebook = submission(ASSIGNMENT)
    cell = notebook.cells[index_of(notebook, "softmax-basic")]
    cell.cell_type = new_type
    del cell["outputs"], cell["execution_count"]
    repairs = normalise(notebook.cells, KNOWN)
    assert cell.cell_type == "code" and cell.outputs == [] and cell.execution_count is None
    assert graded(notebook) == graded(submission(ASSIGNMENT))
    assert "was turned into a" in repairs[0]
    nbformat.validate(notebook)


MUTATIONS = st.lists(st.tuples(
    st.sampled_from(["paste", "schema", "type", "forge", "drop", "empty", "not a record"]),
    st.integers(0, 40), st.sampled_from([0, 2, 99, "x", None])), max_size=8)


@settings(max_examples=60)
@given(MUTATIONS)
def test_after_repair_nbgraders_checks_pass_and_only_the_instructors_cells_are_graded(mutations):
    """Whatever is done to the metadata, nbgrader's validator accepts the result, every
    grade id left is the instructor's and appears once, with the instructor's flags."""
    notebook = submission(ASSIGNMENT)
    for kind, at, value in mutations:
        cell = notebook.cells[at % len(notebook.cells)]
        meta = cell.metadata.get("nbgrader")
        if kind == "paste":
            notebook.cells.insert(at % len(notebook.cells), copy.deepcopy(cell))
        elif kind == "schema" and isinstance(meta, dict):
            meta["schema_version"] = value
        elif kind == "type":
            cell.cell_type = "raw" if cell.cell_type == "code" else "code"
            cell.pop("outputs", None), cell.pop("execution_count", None)
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        elif kind == "forge":
            cell.metadata["nbgrader"] = {"grade_id": f"forged{value}", "grade": True, "points": 9}
        elif kind == "drop":
            cell.metadata.pop("nbgrader", None)
        else:
            cell.metadata["nbgrader"] = {} if kind == "empty" else str(value)
    normalise(notebook.cells, KNOWN)
    MetadataValidator().validate_nb(nbformat.from_dict(notebook))
    ids = [grade_id for grade_id, _, _ in graded(notebook)]
    assert len(ids) == len(set(ids)) and set(ids) <= set(KNOWN)
    for grade_id, cell_type, meta in graded(notebook):
        want = KNOWN[grade_id]
        assert (cell_type, meta["grade"], meta["solution"], meta["locked"]) == \
            (want.cell_type, want.grade, want.solution, want.locked)
        assert meta.get("points") == want.points and meta["schema_version"] == SCHEMA_VERSION


# ---------------------------------------------------------------- ungradable submissions

def test_ungradable_records_are_written_read_and_cleared(tmp_path):
    assert ungradable.read(tmp_path, ASSIGNMENT) == {}
    ungradable.record(tmp_path, ASSIGNMENT, "bob", "02-simplex.ipynb is not a Jupyter notebook "
                                                   "(JSONDecodeError): nothing graded")
    ungradable.record(tmp_path, ASSIGNMENT, "amy", f"a reason with {ESCAPES} in it")
    ungradable.record(tmp_path, "03-masking", "bob", "another assignment")
    found = ungradable.read(tmp_path, ASSIGNMENT)
    assert list(found) == ["amy", "bob"]
    assert found["bob"] == "02-simplex.ipynb is not a Jupyter notebook (JSONDecodeError): nothing graded"
    assert found["amy"] == f"a reason with {printable(ESCAPES)} in it"
    assert not any(ord(char) < 32 or 0x7f <= ord(char) < 0xa0 for char in found["amy"])
    ungradable.clear(tmp_path, ASSIGNMENT, "bob")
    ungradable.clear(tmp_path, ASSIGNMENT, "nobody")  # nothing to clear: no error
    assert list(ungradable.read(tmp_path, ASSIGNMENT)) == ["amy"]
    assert list(ungradable.read(tmp_path, "03-masking")) == ["bob"]


@pytest.mark.parametrize("student", ["../x", "a/b", "..", "", "a\\b", 3])
def test_ungradable_refuses_a_name_that_is_not_a_plain_folder_name(tmp_path, student):
    with pytest.raises(ValueError, match="student must be a plain folder name"):
        ungradable.record(tmp_path, ASSIGNMENT, student, "reason")
    assert not any(tmp_path.rglob("*.json"))


def test_a_record_edited_into_nonsense_is_reported_not_raised(tmp_path):
    ungradable.record(tmp_path, ASSIGNMENT, "bob", "reason")
    next(tmp_path.rglob("bob.json")).write_text("{not json")
    assert "no readable record" in ungradable.read(tmp_path, ASSIGNMENT)["bob"]


# ---------------------------------------------------------------- what reaches a terminal

def test_printable_escapes_every_control_character_and_keeps_the_rest():
    assert printable(ESCAPES) == "\\x1b]0;OWNED-TITLE\\x07\\x1b[1A\\x1b[2K\\x9b8m\\u202e"
    assert printable("line\nnext\ttab", keep="\n\t") == "line\nnext\ttab"
    assert printable("line\nnext") == "line\\nnext"
    assert printable("softmax ∑ é 注意") == "softmax ∑ é 注意"


def test_every_log_record_reaches_the_handler_escaped():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(PrintableRecords())
    log = logging.getLogger("attncore-test-printable")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("Cell '%s' does not exist in the database", ESCAPES)
        log.warning(f"an f-string with {ESCAPES}\nand a second line")
        log.warning("%(id)s by name, %(n)d points", {"id": ESCAPES, "n": 5})
        try:
            raise ValueError(ESCAPES)
        except ValueError:
            log.exception("with a traceback")
    finally:
        log.removeHandler(handler)
    text = stream.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\u202e" not in text
    assert text.count(printable(ESCAPES)) == 4 and "5 points" in text
    assert "\nand a second line" in text and "Traceback (most recent call last):\n" in text


def test_autograde_repairs_first_contains_each_submission_and_escapes_its_log(tmp_path):
    """The course's nbgrader configuration puts these in autograde's way."""
    from nbgrader.converters import Autograde

    from attncore.grading.course.config import course_config
    from attncore.grading.course.contain import ContainedExporter
    from attncore.grading.course.preprocessors import NormaliseMetadata

    config = course_config(tmp_path)
    default = Autograde.class_traits()["sanitize_preprocessors"].default()
    assert config.Autograde.sanitize_preprocessors == [NormaliseMetadata, *default]
    assert config.Autograde.exporter_class is ContainedExporter
    filters = config.Application.logging_config["handlers"]["console"]["filters"]
    assert [config.Application.logging_config["filters"][name]["()"] for name in filters] == \
        [f"{PrintableRecords.__module__}.{PrintableRecords.__name__}"]


GRADING_MODULES = ["attncore.grading.observe", *(f"attncore.grading.course.{name}" for name in (
    "arena", "cgroups", "contain", "memory", "normalise", "pages", "printable", "process",
    "reading", "runner", "sandbox", "seccomp", "selfcheck", "ungradable", "verdict", "wire", "worker"))]


@pytest.mark.parametrize("name", GRADING_MODULES)
def test_the_graders_public_functions_are_annotated(name):
    """The rule of tests/test_type_hints.py, for the modules that run and contain the grading."""
    from .test_type_hints import test_public_functions_are_annotated

    test_public_functions_are_annotated(name)
