"""The red team's attempts of 6 Dec 2026 (a01-a17), each through the instructor's real route
(`nbgrader generate_assignment`, submissions, `nbgrader autograde`), with honest students
graded in the same run: no notebook stops the class, earns points for code the exercise
forbids, or reaches the instructor's terminal. The earlier red team's attempts are in
tests/test_tamper.py and tests/test_sandbox.py.
"""
import copy
import dataclasses
import json
import os
import shutil

import nbformat
import numpy as np
import pytest
from nbformat.corpus.words import generate_corpus_id

from attncore.grading.course import sandbox, ungradable
from attncore.grading.course.layout import WORK

from .gradekit import Course, points_by_function, reference_sources, submission
from .test_tamper import last_wrong

pytestmark = [pytest.mark.slow, pytest.mark.pipeline,
              pytest.mark.skipif(sandbox.available() is not None and not os.environ.get("CI"),
                                 reason=f"no sandbox here: {sandbox.available()}")]
ESCAPES = "\x1b]0;OWNED-TITLE\x07\x1b[1A\x1b[2K\x1b[8m"


def pasted(notebook, *grade_ids):
    """The notebook with a copy of each named cell pasted above it, as Jupyter pastes one
    (the copy keeps the cell's metadata)."""
    for grade_id in grade_ids:
        at = next(k for k, c in enumerate(notebook.cells)
                  if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        notebook.cells.insert(at, copy.deepcopy(notebook.cells[at]))
        notebook.cells[at].id = generate_corpus_id()  # Jupyter gives a paste its own id
    return notebook


def edited(notebook, change):
    change(notebook)
    return notebook


def automatic(course, assignment, student):
    """(score, max) of a student's automatically graded cells, from the gradebook (cells a
    submission deleted count too)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / WORK / 'gradebook.db'}") as gradebook:
        grades = [grade for grade in gradebook.find_submission_notebook(
            assignment, assignment, student).grades if grade.cell_type == "code"]
        return sum(grade.score for grade in grades), sum(grade.max_score for grade in grades)


def with_source(notebook, index, source):
    """The notebook's JSON text with one cell's source replaced by any JSON value."""
    data = json.loads(nbformat.writes(notebook))
    data["cells"][index]["source"] = source
    return json.dumps(data)


# ---------------------------------------------------------------- a05, a07, a08, a11

ASSIGNMENT = "02-simplex"


def metadata_attempts():
    """{student: (the submission, what its automatic points must be)}: the honest ones
    keep full marks, the forged ones earn nothing for the function they forge, and the
    files that are no notebook are recorded as ungradable (points None)."""
    wrong = last_wrong(ASSIGNMENT)
    forged_cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade_id": "softmax-extreme2", "grade": True, "points": 50, "solution": False,
        "locked": True, "schema_version": 3}})
    escape_cell = nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": {
        "grade_id": ESCAPES, "grade": True, "points": 1, "solution": False, "locked": True,
        "schema_version": 3}})

    def raw_tests(notebook):
        for cell in notebook.cells:
            if cell.metadata["nbgrader"].get("grade_id", "").startswith(wrong.function + "-"):
                cell.cell_type = "raw"
                del cell["outputs"], cell["execution_count"]

    def points_100(notebook):
        for cell in notebook.cells:
            if cell.metadata["nbgrader"].get("grade"):
                cell.metadata["nbgrader"]["points"] = 100

    def its_tests(change):
        def changed(notebook):
            for cell in list(notebook.cells):
                if cell.metadata["nbgrader"].get("grade_id", "").startswith(wrong.function + "-"):
                    change(notebook, cell)
        return changed

    def prefilled(notebook, cell):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="passed\n")]

    def solution_graded(notebook):
        cell = next(c for c in notebook.cells if c.metadata["nbgrader"].get("grade_id") == wrong.function)
        cell.metadata["nbgrader"].update(grade=True, points=5)

    full, lost = 7, 7 - 3  # is_row_stochastic's three test cells are worth 3
    return {
        "a-pasted-cells": (pasted(submission(ASSIGNMENT), "worked-example-code",
                                  "softmax-basic", "softmax"), full),
        "b-schema-99": (edited(submission(ASSIGNMENT), lambda nb: nb.cells[6].metadata[
            "nbgrader"].update(schema_version=99)), full),
        "c-schema-0": (edited(submission(ASSIGNMENT), lambda nb: nb.cells[3].metadata.update(
            nbgrader={})), full),
        "d-escape-grade-id": (edited(submission(ASSIGNMENT),
                                     lambda nb: nb.cells.append(escape_cell)), full),
        "e-forged-cell": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                 lambda nb: nb.cells.append(forged_cell)), lost),
        "f-points-100": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                points_100), lost),
        "g-raw-tests": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                               raw_tests), lost),
        "h-not-json": ("{not json" + ESCAPES, None),
        "i-nbformat-99": ('{"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}', None),
        "j-source-a-number": (with_source(submission(ASSIGNMENT), 5, 12), None),
        "k-tests-marked-solution": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                           its_tests(lambda nb, c: c.metadata["nbgrader"].update(
                                               solution=True))), lost),
        "l-solution-marked-graded": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                            solution_graded), lost),
        "m-tests-deleted": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                   its_tests(lambda nb, c: nb.cells.remove(c))), lost),
        "n-outputs-prefilled": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                       its_tests(prefilled)), lost),
        "o-grade-flag-off": (edited(submission(ASSIGNMENT, {wrong.function: wrong.source}),
                                    its_tests(lambda nb, c: c.metadata["nbgrader"].update(grade=False))),
                             lost),
        "zzz-honest": (submission(ASSIGNMENT), full),
    }


REASONS = {"h-not-json": "02-simplex.ipynb is not a Jupyter notebook (NotJSONError): nothing graded",
           "i-nbformat-99": "02-simplex.ipynb is a notebook of a format nbgrader cannot read",
           "j-source-a-number": "02-simplex.ipynb is not a valid Jupyter notebook"}


@pytest.mark.xdist_group("red-team-metadata")
def test_no_metadata_stops_the_class_and_what_cannot_be_graded_is_recorded(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    attempts = metadata_attempts()
    for student, (notebook, _) in attempts.items():
        if isinstance(notebook, str):
            folder = course.root / WORK / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            (folder / f"{ASSIGNMENT}.ipynb").write_text(notebook)
        else:
            course.submit(ASSIGNMENT, student, notebook)

    with pytest.raises(RuntimeError) as failed:  # exit 1: some submissions are ungradable
        course.autograde(ASSIGNMENT)
    log = str(failed.value)

    assert "\x1b" not in log and "\x07" not in log, "a submission's escapes reached the terminal"
    recorded = ungradable.read(course.root, ASSIGNMENT)
    assert set(recorded) == set(REASONS), recorded
    for student, reason in REASONS.items():
        assert recorded[student].startswith(reason), recorded[student]
        assert f"There was an error processing assignment '{ASSIGNMENT}' for student '{student}'" in log
    for student, (_, points) in attempts.items():
        if points is not None:
            assert automatic(course, ASSIGNMENT, student) == (points, 7), student
    assert "cell 'softmax-basic' appears 2 times" in log  # what was repaired is logged

    # The instructor asks for the file again; a successful grade clears the record.
    course.submit(ASSIGNMENT, "h-not-json", submission(ASSIGNMENT))
    course.autograde(ASSIGNMENT, "--student=h-not-json")
    assert set(ungradable.read(course.root, ASSIGNMENT)) == set(REASONS) - {"h-not-json"}
    assert points_by_function(course.grades(ASSIGNMENT, "h-not-json"), ASSIGNMENT)["softmax"][:2] == (4, 4)


# ---------------------------------------------------------------- a01, a02, a08: the class finishes

# Scaled down so that the test stays short: seconds per cell or call, seconds per notebook,
# restarts per notebook (the defaults are 30, 600 and 5).
SCALED = {"time_limit": 3, "notebook_time_limit": 12, "restarts": 1}


def class_attempts():
    """{student: (submission, full marks or not)}: a notebook that hangs the grader (a01),
    one that aborted the run (a08), one that multiplies its own grading time (a02), one
    that floods the grader with replies (a12)."""
    sources = reference_sources(ASSIGNMENT)
    hang = submission(ASSIGNMENT, {
        "softmax": "import time, attncore.grading.course.wire as w\n"
                   "w.receive = lambda s: time.sleep(1e7)\n" + sources["softmax"],
        "is_row_stochastic": "#" * (1 << 20) + "\n" + sources["is_row_stochastic"]})
    amplify = submission(ASSIGNMENT, {"softmax": "import os\ndef softmax(scores):\n    os._exit(0)\n",
                                      "is_row_stochastic": "def is_row_stochastic(W, atol=None):\n"
                                                           "    os._exit(0)\n"})
    slow = f"import time\ntime.sleep({SCALED['time_limit'] - 0.5})"  # just under the limit
    amplify.cells[2:2] = [nbformat.v4.new_code_cell(slow) for _ in range(3)]
    abort = edited(pasted(submission(ASSIGNMENT), "worked-example-code"),
                   lambda nb: nb.cells[-1].metadata["nbgrader"].update(schema_version=99))
    flood = submission(ASSIGNMENT, {"softmax": FLOOD + sources["softmax"]})
    return {"a-honest": (submission(ASSIGNMENT), True), "b-hangs-the-grader": (hang, False),
            "c-aborted-the-run": (abort, True), "d-multiplies-its-time": (amplify, False),
            "e-floods-the-replies": (flood, None), "z-honest": (submission(ASSIGNMENT), True)}


# Red team a12 (scaled down): frames written straight to the worker's reply descriptor.
FLOOD = """
import json, os, struct, sys
body = json.dumps({"flood": "x" * (4 << 20)}).encode()
for _ in range(8):
    os.write(int(sys.argv[2]), struct.pack(">Q", len(body)) + body)
"""


@pytest.mark.xdist_group("red-team-class")
def test_a_class_with_a_hanging_an_aborting_and_an_amplifying_notebook_finishes(tmp_path):
    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    attempts = class_attempts()
    for student, (notebook, _) in attempts.items():
        course.submit(ASSIGNMENT, student, notebook)
    course.autograde(ASSIGNMENT, *(f"--GradeOutOfProcess.{name}={value}" for name, value in SCALED.items()))

    for student, (_, full) in attempts.items():  # full None: whatever it gets, it is graded
        score, most = automatic(course, ASSIGNMENT, student)
        assert most == 7 and (full is None or (score == most) is full), (student, score)
    said = {student: "\n".join(o.get("evalue", o.get("text", "")) for c in nbformat.read(
                course.autograded(ASSIGNMENT, student), as_version=4).cells for o in c.get("outputs", []))
            for student in attempts}
    assert "it stopped reading what the grader sent it" in said["b-hangs-the-grader"]
    assert "not started again more than once" in said["d-multiplies-its-time"] \
        or "used its whole grading time of 12 s" in said["d-multiplies-its-time"]
    assert ungradable.read(course.root, ASSIGNMENT) == {}


# ---------------------------------------------------------------- a03, a14, a06: forbidden work

FLASH = "05-flash"
MATERIALISE = """
def materialise(Q, K, V):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
"""
FORKED = MATERIALISE + """
import os
import shutil
def flash_attention(Q, K, V, block_size):
    try:
        pid = os.fork()
    except OSError:  # a sealed worker starts no process: it does the work itself
        return materialise(Q, K, V)
    read, write = os.pipe()
    if pid == 0:
        os.write(write, materialise(Q, K, V).tobytes())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 20):
        data += chunk
    os.waitpid(pid, 0)
    return np.frombuffer(data, dtype=Q.dtype).reshape(Q.shape[0], V.shape[1]).copy()
"""


@pytest.mark.xdist_group("red-team-forbidden")
def test_the_memory_suite_measures_the_sandbox_whatever_the_worker_does(tmp_path):
    """Red team a03 (the matrix built in a forked child) and a14 (a thread takes over the
    worker, reports a peak of 0 and the main thread exits): both lose the memory point,
    exactly as the same code that builds the matrix in plain sight."""
    from .test_grading_runner import TAKEOVER

    course = Course(tmp_path, [FLASH])
    course.generate(FLASH)
    plain = MATERIALISE + "def flash_attention(Q, K, V, block_size):\n    return materialise(Q, K, V)\n"
    students = {"a-tiled": None, "b-materialised": plain, "c-forked": FORKED,
                "d-takeover": plain + TAKEOVER}  # the takeover ends the cell: last
    for student, source in students.items():
        course.submit(FLASH, student, submission(FLASH, source and {"flash_attention": source}))
    course.autograde(FLASH)
    lost = {student: {g.grade_id for g in course.grades(FLASH, student) if g.score < g.max_score}
            for student in students}
    assert lost == {"a-tiled": set(), **{s: {"flash_attention-memory"} for s in list(students)[1:]}}, lost


VARIANTS = "06-variants"
CHILD_INTERPRETER = """
import json, subprocess, sys
def sparsemax(x):
    code = ("import sys, json, numpy as np, attncore; x = np.array(json.loads(sys.stdin.read()));"
            "print(json.dumps(attncore.sparsemax(x).tolist()))")
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(x.tolist()),
                         capture_output=True, text=True).stdout
    return np.array(json.loads(out), dtype=x.dtype).reshape(x.shape)
"""


@pytest.mark.xdist_group("red-team-forbidden")
def test_a_forbidden_function_in_a_child_interpreter_earns_nothing(tmp_path):
    """Red team a06: attncore.sparsemax, which 06-variants forbids, run in a fresh Python
    started inside the sandbox, where no tripwire was; now no process starts during a
    graded call. In this process the route gives the right answer: the attack is real."""
    from attncore.grading.engine import SPECS

    namespace = {"np": np}
    exec(CHILD_INTERPRETER, namespace)
    arguments = SPECS["sparsemax"].suites["basic"][0].make()
    np.testing.assert_allclose(namespace["sparsemax"](*arguments.values()),
                               SPECS["sparsemax"].reference(*arguments.values()))
    course = Course(tmp_path, [VARIANTS])
    course.generate(VARIANTS)
    direct = "import attncore\ndef sparsemax(x):\n    return attncore.sparsemax(x)\n"
    students = {"a-honest": None, "b-direct": direct, "c-child-interpreter": CHILD_INTERPRETER}
    for student, source in students.items():
        course.submit(VARIANTS, student, submission(VARIANTS, source and {"sparsemax": source}))
    course.autograde(VARIANTS)
    points = {student: points_by_function(course.grades(VARIANTS, student), VARIANTS)["sparsemax"][:2]
              for student in students}
    assert points["a-honest"][0] == points["a-honest"][1] > 0
    assert points["b-direct"][0] == points["c-child-interpreter"][0] == 0, points


# ---------------------------------------------------------------- a04: the instructor's pages

OWNED = "window.__owned"  # what the learner's script would set if it ran
ANSWER = (r"Each row sums to one: $\sum_j w_{ij} = 1$ (XSS-MD). "
          f"<script>{OWNED} = 'script'</script><img src=x onerror=\"{OWNED} = 'img'\">")
SCRIPTED = ("def is_row_stochastic(W, atol=None):\n"
            f"    print(\"<script>{OWNED} = 'print'</script>\")\n"
            f"    raise ValueError(\"<img src=x onerror=\\\"{OWNED} = 'exception'\\\">\")\n")


def formgrader_page(course, assignment, student):
    """The manual-grading page formgrader serves for a submission: its exporter, with the
    configuration formgrader loads (the course's), rendering the autograded notebook."""
    import contextlib

    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    app = FormgradeExtension()
    app.root_dir = str(course.root)
    with contextlib.chdir(course.root):
        app.initialize([])
    html, _ = HTMLExporter(config=app.config).from_filename(
        str(course.autograded(assignment, student)), resources={
            "assignment_id": assignment, "notebook_id": assignment, "submission_id": "1",
            "index": 0, "total": 1, "base_url": "", "student": student, "last_name": None,
            "first_name": None, "notebook_path": f"autograded/{student}/{assignment}"})
    return html


@pytest.mark.xdist_group("red-team-pages")
def test_the_instructors_pages_show_a_learners_script_as_text(tmp_path):
    """Red team a04: a <script> and an <img onerror> in a graded written answer, in printed
    output and in an exception message reach the feedback page and formgrader's grading
    page as text, and none of them runs in Chromium; the answer still reads, with its math
    typeset on the feedback page (which carries MathJax with it)."""
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip(f"Chromium not found at {chromium}")
    from playwright.sync_api import sync_playwright

    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    notebook = submission(ASSIGNMENT, {"is_row_stochastic": SCRIPTED})
    answer = next(c for c in notebook.cells if c.metadata["nbgrader"].get("grade_id") == "simplex_proof")
    answer.source = ANSWER
    notebook.cells.append(nbformat.v4.new_raw_cell(f"<script>{OWNED} = 'raw'</script>",
                                                   metadata={"format": "text/html"}))
    course.submit(ASSIGNMENT, "xss", notebook)
    course.autograde(ASSIGNMENT)
    feedback = course.generate_feedback(ASSIGNMENT) / "xss" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    grading = tmp_path / "formgrade.html"
    grading.write_text(formgrader_page(course, ASSIGNMENT, "xss"), encoding="utf-8")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        try:
            for page_file, typeset in ((feedback, True), (grading, False)):
                page = browser.new_page()
                page.route("http*://**", lambda route: route.abort())  # offline, as the test is
                page.goto(page_file.as_uri())
                page.wait_for_timeout(1500)  # what would run has run (an image error, MathJax)
                ran = page.evaluate(f"typeof {OWNED} === 'undefined' ? null : {OWNED}")
                assert ran is None, f"the learner's {ran} ran in {page_file.name}"
                text = page.inner_text("body")
                assert "XSS-MD" in text and "<script>" in text, page_file.name
                if typeset:  # by MathJax in the page, or as MathML written when it was made
                    assert page.locator("mjx-container, math").count() > 0, "the answer's math is not typeset"
                else:
                    assert r"\sum_j w_{ij} = 1" in text
                page.close()
        finally:
            browser.close()


# ---------------------------------------------------------------- code review N1, through nbgrader

@pytest.mark.xdist_group("red-team-metadata")
def test_a_grader_error_is_left_for_manual_grading_not_scored_zero(tmp_path, monkeypatch):
    """A reference that raises: autograde's own preprocessors (run here, in this process,
    where the reference can be broken) write the cell as a grader error that says so, and
    leave its grade to the instructor (no automatic score, needs manual grading)."""
    from nbgrader.api import Gradebook

    from attncore.grading.course.preprocessors import GradeOutOfProcess, LeaveGraderErrorsToTheInstructor
    from attncore.grading.engine import SPECS

    course = Course(tmp_path, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    course.submit(ASSIGNMENT, "student", submission(ASSIGNMENT))
    course.autograde(ASSIGNMENT)
    monkeypatch.setitem(SPECS, "softmax", dataclasses.replace(
        SPECS["softmax"], reference=lambda scores: {}["a bug of the grader's"]))
    monkeypatch.delenv("ATTNCORE_STRICT_DETECTORS", raising=False)
    db_url = f"sqlite:///{course.root / WORK / 'gradebook.db'}"
    resources = {"nbgrader": {"db_url": db_url, "notebook": ASSIGNMENT, "assignment": ASSIGNMENT,
                              "student": "student"}}
    notebook = nbformat.read(course.autograded(ASSIGNMENT, "student"), as_version=4)
    notebook, resources = GradeOutOfProcess(sandbox="none").preprocess(notebook, resources)
    LeaveGraderErrorsToTheInstructor().preprocess(notebook, resources)

    outputs = {c.metadata["nbgrader"]["grade_id"]: c.outputs for c in notebook.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    for grade_id, cell_outputs in outputs.items():
        failed = grade_id.startswith("softmax-")
        assert [o.get("ename") for o in cell_outputs] == (["GraderError"] if failed else [None])
        if failed:
            assert "grader error: tell your instructor" in cell_outputs[0].evalue
    with Gradebook(db_url) as gradebook:
        grades = {g.name: g for g in gradebook.find_submission_notebook(
            ASSIGNMENT, ASSIGNMENT, "student").grades}
        for grade_id in outputs:
            if grade_id.startswith("softmax-"):
                assert grades[grade_id].auto_score is None and grades[grade_id].needs_manual_grade
            else:
                assert grades[grade_id].auto_score == grades[grade_id].max_score


# ================================================================ the second red team (#1-#31)
# Its attempts, as it wrote them (/tmp/redteam/attacks.py), scaled where it says so.

# 16: the worker looked `seal` up in its globals: a cell replaces it before the grader asks
FAKE_SEAL = r'''
import sys
_f = sys._getframe()
while _f is not None and not (_f.f_code.co_name == "main" and "seal" in _f.f_globals):
    _f = _f.f_back
if _f is not None:
    _f.f_globals["seal"] = lambda allowed, forbidden: {"sealed": True, "tripped": 0}
del _f
'''
SPARSEMAX_FAKE_SEAL = FAKE_SEAL + "import attncore\ndef sparsemax(x):\n    return attncore.sparsemax(x)\n"

# 17: the library's code objects taken with gc.get_referents at load, put into functions of
# the learner's own (no audit hook watches either)
SPARSEMAX_GC = r'''
import gc, sys, types
import attncore, attncore.softmax
def _code(f):
    return next(r for r in gc.get_referents(f) if type(r) is types.CodeType)
_mods, _cl = {}, {}
def _modns(name):
    if name not in _mods:
        ns = dict(vars(sys.modules[name]))
        _mods[name] = ns
        for k, v in list(ns.items()):
            if isinstance(v, types.FunctionType) and str(v.__module__).startswith("attncore") \
                    and not str(v.__module__).startswith("attncore.grading") and v.__closure__ is None:
                ns[k] = _clone(v)
    return _mods[name]
def _clone(f):
    if id(f) not in _cl:
        ns = _modns(f.__module__)
        exec("def _g(): pass", ns)
        g = ns.pop("_g")
        _cl[id(f)] = g
        g.__code__ = _code(f)
        g.__defaults__, g.__kwdefaults__ = f.__defaults__, f.__kwdefaults__
    return _cl[id(f)]
_sparsemax = _modns("attncore.softmax")["sparsemax"]
def sparsemax(x):
    return _sparsemax(x)
'''

# 18: a compiled Numba kernel of the library, which no tripwire reaches
SOFTMAX_JIT = r'''
import numpy as np
import attncore.jit.tiled_softmax as _ts
_k = _ts._softmax
def softmax(scores):
    x = np.asarray(scores)
    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    out = np.empty_like(flat)
    if flat.size:
        _k(flat, 64, out)
    return out.reshape(x.shape)
'''

# 10, 11, 19: a child forked at load whose main thread exits (a zombie leader with a live
# thread), which serves the library's answers (an oracle) or builds the score matrix
ORACLE = r'''
import os, io, struct, threading, ctypes, time
import numpy as np
import attncore
_req_r, _req_w = os.pipe()
_rep_r, _rep_w = os.pipe()
def _readn(f, n):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            os._exit(0)
        data += chunk
    return data
_pid = os.fork()
if _pid == 0:
    def _serve():
        rd, wr = os.fdopen(_req_r, "rb", 0), os.fdopen(_rep_w, "wb", 0)
        while True:
            n = struct.unpack(">I", _readn(rd, 4))[0]
            z = np.load(io.BytesIO(_readn(rd, n)))
            buf = io.BytesIO(); np.save(buf, ANSWER(**z)); b = buf.getvalue()
            wr.write(struct.pack(">I", len(b)) + b)
    threading.Thread(target=_serve).start()
    ctypes.CDLL(None).pthread_exit(None)
os.close(_req_r); os.close(_rep_w)
time.sleep(1)  # the child ends its main thread before the cell returns
_rq, _rp = os.fdopen(_req_w, "wb", 0), os.fdopen(_rep_r, "rb", 0)
def _ask(**arrays):
    buf = io.BytesIO(); np.savez(buf, **arrays); b = buf.getvalue()
    _rq.write(struct.pack(">I", len(b)) + b)
    return np.load(io.BytesIO(_readn(_rp, struct.unpack(">I", _readn(_rp, 4))[0])))
'''
SPARSEMAX_ORACLE = ("ANSWER = lambda x: attncore.sparsemax(x)\n" + ORACLE
                    + "def sparsemax(x):\n    return _ask(x=x)\n")

FLASH_ORACLE = (MATERIALISE + "ANSWER = materialise\n" + ORACLE
                + "def flash_attention(Q, K, V, block_size):\n    return _ask(Q=Q, K=K, V=V)\n")

# 7: the whole score matrix computed into a buffer allocated (and touched) when the cell loaded
FLASH_PREALLOCATED = MATERIALISE + r'''
_S = np.ones(2 * 96 * 16384)
def flash_attention(Q, K, V, block_size):
    n = Q.shape[0] * K.shape[0]
    if Q.dtype != np.float64 or n > _S.size:
        return materialise(Q, K, V)
    S = _S[:n].reshape(Q.shape[0], K.shape[0])
    np.matmul(Q, K.T, out=S)
    S /= np.sqrt(Q.shape[1])
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    return S @ V
'''
# 8: 40 MB held since load, dropped when the call starts, taken again before it returns
FLASH_BALLAST = MATERIALISE + r'''
_ballast = [np.ones(5 << 20)]
def flash_attention(Q, K, V, block_size):
    _ballast.clear()
    out = materialise(Q, K, V)
    _ballast.append(np.ones(5 << 20))
    return out
'''
# 8, variant: the ballast dropped for good
FLASH_BALLAST_DROPPED = MATERIALISE + r'''
_ballast = [np.ones(5 << 20)]
def flash_attention(Q, K, V, block_size):
    if Q.size * K.shape[0] > 1 << 20:  # only the call large enough to be measured
        _ballast.clear()
    return materialise(Q, K, V)
'''
# 9: the same ballast as a file in /dev/shm, unlinked when the call starts
FLASH_SHM = MATERIALISE + r'''
import os
with open("/dev/shm/ballast", "wb") as f:
    f.write(b"\1" * (40 << 20))
def flash_attention(Q, K, V, block_size):
    if Q.size * K.shape[0] > 1 << 20 and os.path.exists("/dev/shm/ballast"):
        os.unlink("/dev/shm/ballast")
    return materialise(Q, K, V)
'''

# 29: a wrong softmax (no maximum subtracted) that, where it knows it is wrong, returns what
# makes the comparison raise, to be left for the instructor instead of scored 0
GRADER_ERROR_SOFTMAX = r'''
import numpy as np
def softmax(scores):
    with np.errstate(all="ignore"):
        e = np.exp(scores)
        out = e / e.sum(axis=-1, keepdims=True)
    if not np.all(np.isfinite(out)):
        return [np.zeros(1), np.zeros(2)]
    return out
'''
WRONG_SOFTMAX = GRADER_ERROR_SOFTMAX.replace("return [np.zeros(1), np.zeros(2)]", "return out")


def flood(frames, mib):
    """2 (scaled): the replaced receive writes well-formed frames of mib MiB to the reply
    pipe, then stops reading."""
    return rf'''
import os, sys, json, struct, time
import attncore.grading.course.wire as _w
_body = json.dumps({{"raised": None, "notes": [], "pad": "x" * ({mib} << 20)}}).encode()
_frame = struct.pack(">Q", len(_body)) + _body
def _flood_then_stop(stream):
    for _ in range({frames}):
        os.write(int(sys.argv[2]), _frame)
    time.sleep(1e7)
_w.receive = _flood_then_stop
'''
