"""The course secret and each submission's hidden draw (standard library only).

The hidden cases of a graded submission are drawn from replay_seed(secret, assignment,
student, submission), an HMAC keyed by a secret only the instructor holds of the
assignment, the student and the digest of the code the grader runs
(course.runner.submission_digest): a regrade of the same file draws the same cases, a
changed file (a resubmission) draws new ones, two students draw different ones, and nobody
without the secret can compute a draw. So the seed a learner's feedback shows replays that
grading of that code and predicts nothing about the next. The secret is made the first
time grading needs it, in a file of the course's .nbgrader/ folder (which git ignores)
that only its owner can read.
"""
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from .layout import WORK

SECRET_FILE = "course_secret"  # in the course's .nbgrader/ folder
SEED_RANGE = 2 ** 31  # the seeds the self-check's --seed takes


def replay_seed(secret: str, assignment: str, student: str, submission: str) -> int:
    """The seed of the hidden cases of `student`'s `assignment` as submitted (`submission`:
    the digest of its graded code): HMAC-SHA256 of "assignment NUL student NUL submission"
    keyed by `secret`, mod 2**31 (a NUL is in no file name and no hex digest, so no two
    triples share a message)."""
    if not secret:
        raise ValueError("the course secret is empty: no draw can be keyed by it")
    message = f"{assignment}\0{student}\0{submission}".encode()
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % SEED_RANGE


def course_secret(path: str | os.PathLike) -> str:
    """The secret kept in the file `path`; made there (64 hex digits, mode 0600) when the
    file does not exist. Raises ValueError for a file that holds no secret."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secrets.token_hex(32) + "\n")
        try:  # a link appears whole or not at all: of two graders, the first one's stays
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
        text = path.read_text(encoding="utf-8").strip()
    if not text:
        raise ValueError(f"{path} holds no course secret: delete it to have a new one made, "
                         f"which changes every student's hidden draw")
    return text


def keyed_secret(root: str | os.PathLike, secret: str = "") -> str:
    """The secret that keys the draws of the course at `root`: `secret` (nbgrader_config.py's
    GradeOutOfProcess.secret) or, when that is empty, the course's secret file, made the
    first time."""
    return secret or course_secret(Path(root) / WORK / SECRET_FILE)
