"""Submissions that could not be graded, and why (standard library only).

When nothing of a submission can be graded (a file that is not a notebook, metadata no
repair makes sense of, a grader that failed), the autograde run records it here and goes
on to the next student; a later successful grade of that student removes the record. One
JSON file per student: <course>/.nbgrader/ungradable/<assignment>/<student>.json, holding
the reason as one sentence an instructor can act on.
"""
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from .layout import WORK
from .printable import printable

FOLDER = "ungradable"


def record(course_root: str | os.PathLike, assignment: str, student: str, reason: str) -> None:
    """Record that `student`'s submission of `assignment` could not be graded, and why."""
    path = _path(course_root, assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"assignment": assignment, "student": student, "reason": printable(reason),
             "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(entry, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)  # whole or not at all: a reader never sees half a record


def clear(course_root: str | os.PathLike, assignment: str, student: str) -> None:
    """Forget that record (the submission has now been graded); nothing when there is none."""
    _path(course_root, assignment, student).unlink(missing_ok=True)


def read(course_root: str | os.PathLike, assignment: str) -> dict[str, str]:
    """{student: reason} of every ungradable submission of `assignment`, by student."""
    folder = Path(course_root) / WORK / FOLDER / _name(assignment, "assignment")
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            found[path.stem] = printable(json.loads(path.read_text(encoding="utf-8"))["reason"])
        except (OSError, ValueError, KeyError, TypeError):
            found[path.stem] = f"{path.name} holds no readable record (edited by hand?)"
    return found


def _path(course_root, assignment, student):
    return (Path(course_root) / WORK / FOLDER / _name(assignment, "assignment")
            / f"{_name(student, 'student')}.json")


def _name(name, what):
    """name, when it is one plain file name (nbgrader's ids are folder names); else ValueError."""
    if not isinstance(name, str) or not name or name in (".", "..") \
            or Path(name).name != name or "\\" in name or "\0" in name:
        raise ValueError(f"{what} must be a plain folder name, got {printable(repr(name))}")
    return name
