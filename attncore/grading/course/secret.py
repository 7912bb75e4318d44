"""The course secret and each student's hidden draw (standard library only).

A student's hidden cases are drawn from replay_seed(secret, assignment, student), an HMAC
of the assignment and the student keyed by a secret only the instructor holds: a regrade
draws the same cases, two students draw different ones, and nobody without the secret
can compute a draw. The secret is made the first time grading needs it, in a file of
the course's .nbgrader/ folder (which git ignores) that only its owner can read.
"""
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from .layout import WORK

SECRET_FILE = "course_secret"  # in the course's .nbgrader/ folder
SEED_RANGE = 2 ** 31  # the seeds the self-check's --seed takes


def replay_seed(secret: str, assignment: str, student: str) -> int:
    """The seed of the hidden cases of `student`'s `assignment`: HMAC-SHA256 of
    "assignment NUL student" keyed by `secret`, mod 2**31 (a NUL is in no file name, so
    no two pairs share a message)."""
    if not secret:
        raise ValueError("the course secret is empty: no draw can be keyed by it")
    message = f"{assignment}\0{student}".encode()
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


def student_seed(root: str | os.PathLike, assignment: str, student: str, secret: str = "") -> int:
    """The replay seed of `student`'s `assignment` in the course at `root`, keyed by
    `secret` (nbgrader_config.py's GradeOutOfProcess.secret) or, when that is empty, by the
    course's secret file, made the first time."""
    return replay_seed(secret or course_secret(Path(root) / WORK / SECRET_FILE), assignment,
                       student)
