"""Each student's hidden draw (course.secret): keyed by a course secret, the same at every
regrade, different between students. Through a real autograde: tests/test_instructor_week.py."""
import hashlib
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncore.grading.course.secret import SEED_RANGE, course_secret, replay_seed, student_seed

pytestmark = []  # the fast tier (tests/conftest.py)


def hmac_by_hand(key, message):
    """HMAC-SHA256 as RFC 2104 writes it: H((K ^ opad) || H((K ^ ipad) || m))."""
    key = key.ljust(64, b"\0")  # SHA-256's block: 64 bytes (a key this short needs no hash)
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + message).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).digest()


@given(st.text(min_size=1, max_size=40), st.text(max_size=20), st.text(max_size=20))
def test_the_seed_is_the_hmac_of_assignment_and_student_under_the_secret(secret, assignment, student):
    digest = hmac_by_hand(secret.encode()[:64], f"{assignment}\0{student}".encode())
    if len(secret.encode()) <= 64:
        assert replay_seed(secret, assignment, student) == int.from_bytes(digest[:8], "big") % SEED_RANGE
    assert 0 <= replay_seed(secret, assignment, student) < SEED_RANGE


def test_students_assignments_and_secrets_each_change_the_draw():
    seeds = {replay_seed(secret, assignment, student) for secret in ("s1", "s2")
             for assignment in ("01-convention", "03-masking") for student in map(str, range(50))}
    assert len(seeds) == 2 * 2 * 50
    # the NUL between the two names: no assignment and student can pose as another pair
    assert replay_seed("s", "a", "bc") != replay_seed("s", "ab", "c")
    with pytest.raises(ValueError, match="empty"):
        replay_seed("", "a", "b")


def test_the_secret_is_made_once_readable_by_its_owner_only_and_then_kept(tmp_path):
    path = tmp_path / ".nbgrader" / "course_secret"
    secret = course_secret(path)
    assert len(secret) == 64 and int(secret, 16) >= 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert course_secret(path) == secret and list(path.parent.iterdir()) == [path]
    assert student_seed(tmp_path, "a", "s") == replay_seed(secret, "a", "s")
    assert student_seed(tmp_path, "a", "s", secret="mine") == replay_seed("mine", "a", "s")
    path.write_text("\n")
    with pytest.raises(ValueError, match="holds no course secret"):
        course_secret(path)
