"""Each submission's hidden draw (course.secret): keyed by a course secret, of the assignment,
the student and the code the grader runs, so a regrade of the same file draws the same
cases and a changed file (a resubmission) new ones. Through a real autograde:
tests/test_instructor_week.py (regrades) and tests/test_resubmission.py (resubmissions)."""
import copy
import hashlib
import os
import stat

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncore.grading.course.runner import graded_code, submission_digest
from attncore.grading.course.secret import SEED_RANGE, course_secret, keyed_secret, replay_seed

from .gradekit import submission

pytestmark = []  # the fast tier (tests/conftest.py)
DIGEST = submission_digest(submission("02-simplex").cells)


def hmac_by_hand(key, message):
    """HMAC-SHA256 as RFC 2104 writes it: H((K ^ opad) || H((K ^ ipad) || m))."""
    key = key.ljust(64, b"\0")  # SHA-256's block: 64 bytes (a key this short needs no hash)
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + message).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).digest()


@given(st.text(min_size=1, max_size=40), st.text(max_size=20), st.text(max_size=20),
       st.text("0123456789abcdef", max_size=64))
def test_the_seed_is_the_hmac_of_assignment_student_and_submission_under_the_secret(
        secret, assignment, student, digest):
    mac = hmac_by_hand(secret.encode()[:64], f"{assignment}\0{student}\0{digest}".encode())
    if len(secret.encode()) <= 64:
        assert replay_seed(secret, assignment, student, digest) == \
            int.from_bytes(mac[:8], "big") % SEED_RANGE
    assert 0 <= replay_seed(secret, assignment, student, digest) < SEED_RANGE


def test_students_assignments_submissions_and_secrets_each_change_the_draw():
    seeds = {replay_seed(secret, assignment, student, digest) for secret in ("s1", "s2")
             for assignment in ("01-convention", "03-masking") for student in map(str, range(30))
             for digest in (DIGEST, "0" * 64)}
    assert len(seeds) == 2 * 2 * 30 * 2
    # the NULs between the parts: no triple can pose as another
    assert replay_seed("s", "a", "bc", "d") != replay_seed("s", "ab", "c", "d")
    assert replay_seed("s", "a", "b", "cd") != replay_seed("s", "a", "bc", "d")
    with pytest.raises(ValueError, match="empty"):
        replay_seed("", "a", "b", DIGEST)


def _changed(edit):
    """The digest of the reference submission of 02-simplex after edit(cells)."""
    cells = copy.deepcopy(submission("02-simplex").cells)
    edit(cells)
    return submission_digest(cells)


def _cell(cells, grade_id):
    return next(c for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_the_digest_is_what_the_grader_runs_and_nothing_else():
    """A regrade of the same file keeps the draw whatever nbgrader writes into the notebook
    (outputs, counts, metadata); any change to the code the worker runs, a comment or a
    cell's name (its place) included, draws anew: the replay seed in a learner's feedback
    says nothing about the draw of a changed file."""
    def output(cells):
        _cell(cells, "setup").outputs = [nbformat.v4.new_output("stream", text="hi\n")]
        _cell(cells, "setup").execution_count = 7

    def metadata(cells):
        _cell(cells, "softmax").metadata["collapsed"] = True

    def markdown(cells):
        _cell(cells, "intro").source += "\nMy notes."

    def test_source(cells):  # the grader runs a test cell's suite, never its source
        _cell(cells, "softmax-hidden").source += "\n# changed"

    def comment(cells):
        _cell(cells, "softmax").source += "\n# a comment"

    def setup(cells):
        _cell(cells, "setup").source += "\nx = 1"

    def own_cell(cells):
        cells.append(nbformat.v4.new_code_cell("y = 2"))

    def own_cell_moved(cells):  # its name is its place: a cell's code can read its name
        cells.extend([nbformat.v4.new_markdown_cell("Notes"), nbformat.v4.new_code_cell("y = 2")])

    def test_cell_removed(cells):
        cells.remove(_cell(cells, "softmax-extreme"))

    assert {_changed(edit) for edit in (output, metadata, markdown, test_source)} == {DIGEST}
    changed = [_changed(edit) for edit in (comment, setup, own_cell, own_cell_moved,
                                           test_cell_removed)]
    assert DIGEST not in changed and len(set(changed)) == len(changed)
    code, tests = graded_code(submission("02-simplex").cells)
    assert "softmax-extreme" in tests and ("setup", _cell(
        submission("02-simplex").cells, "setup").source) in code


def test_the_secret_is_made_once_readable_by_its_owner_only_and_then_kept(tmp_path):
    path = tmp_path / ".nbgrader" / "course_secret"
    secret = course_secret(path)
    assert len(secret) == 64 and int(secret, 16) >= 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert course_secret(path) == secret and list(path.parent.iterdir()) == [path]
    assert keyed_secret(tmp_path) == secret and keyed_secret(tmp_path, "mine") == "mine"
    path.write_text("\n")
    with pytest.raises(ValueError, match="holds no course secret"):
        course_secret(path)
