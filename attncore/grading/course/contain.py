"""One submission's failure stays that submission's: autograde records it and goes on.

nbgrader's autograde already moves on to the next student after most errors, but not
after a notebook whose metadata is of another schema version (it ends the whole run), and
it keeps no record an instructor can read later. ContainedExporter, the exporter autograde
uses (course.config), reads and converts each notebook; whatever goes wrong there (a file
that is not a notebook, one larger than course.reading allows, metadata no repair makes
sense of, a failure of the grader itself) is recorded in course.ungradable with one
sentence of reason, logged with its traceback, and raised as Ungradable, which nbgrader
treats as that student's failure: the run goes on, and `nbgrader autograde` exits 1 at the
end, naming each ungradable submission. A submission's timestamp.txt that nbgrader cannot
read fails that student before any notebook is read; those are recorded when the exporter
is made, before the first student.
"""
import json
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbformat.validator import NotebookValidationError
from traitlets import Int

from . import ungradable
from .printable import printable
from .reading import MAX_BYTES, MAX_CELLS, TooLarge, first_line, limited_text, reason_timestamp_unreadable


class Ungradable(Exception):
    """Nothing of one submission could be graded; the message says why."""


class ContainedExporter(NotebookExporter):
    """nbgrader's notebook exporter, with each notebook's failure contained and recorded
    (its parent is the Autograde converter, which knows the course folder and the phase)."""

    max_bytes = Int(MAX_BYTES, help="The largest notebook file, in bytes, that autograde reads; "
                                   "a larger one is recorded as ungradable.").tag(config=True)
    max_cells = Int(MAX_CELLS, help="The most cells a notebook may hold for autograde to grade it; "
                               "one with more is recorded as ungradable.").tag(config=True)

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)
        coursedir = getattr(self.parent, "coursedir", None)
        for folder in getattr(self.parent, "assignments", {}):  # submitted/<student>/<assignment>
            reason = reason_timestamp_unreadable(Path(folder) / "timestamp.txt")
            if reason is not None:
                student, assignment = Path(folder).parent.name, Path(folder).name
                ungradable.record(coursedir.root, assignment, student, reason)
                self.log.error("ungradable: student %s, assignment %s: %s", student, assignment, reason)

    def from_filename(self, filename: str, resources: dict | None = None,
                      **kw: object) -> tuple[str, dict]:
        info = resources["nbgrader"]
        root = self.parent.coursedir.root
        try:
            notebook = read_within(filename, self.max_bytes, self.max_cells)
        except TooLarge as error:
            return self._contain(root, info, str(error))
        except Exception as error:  # whatever the file holds: not ours to crash on
            return self._contain(root, info, reason_unreadable(filename, error))
        try:
            result = self.from_notebook_node(notebook, resources, **kw)
        except Exception as error:
            return self._contain(root, info, reason_not_graded(filename, error))
        if not getattr(self.parent, "_sanitizing", True):  # graded: no longer ungradable
            ungradable.clear(root, info["assignment"], info["student"])
        return result

    def _contain(self, root, info, reason):
        ungradable.record(root, info["assignment"], info["student"], reason)
        self.log.error("ungradable: student %s, assignment %s: %s", info["student"],
                       info["assignment"], reason, exc_info=True)
        raise Ungradable(reason) from None  # the traceback is logged above, once


def read_within(filename: str, max_bytes: int, max_cells: int) -> nbformat.NotebookNode:
    """nbformat.read(filename) as version 4, within the limits of limited_text."""
    return nbformat.reads(limited_text(filename, max_bytes, max_cells), as_version=4)


def read_limits(config: object = None) -> tuple[int, int]:
    """(max_bytes, max_cells) of ContainedExporter under config (a traitlets Config)."""
    exporter = ContainedExporter(config=config)
    return exporter.max_bytes, exporter.max_cells


def reason_unreadable(filename: str, error: Exception) -> str:
    """Why a file could not be read as a notebook, as one sentence."""
    name, kind = printable(Path(filename).name), type(error).__name__
    if isinstance(error, nbformat.NBFormatError):
        return f"{name} is a notebook of a format nbgrader cannot read ({printable(error)}): nothing graded"
    if isinstance(error, (ValueError, json.JSONDecodeError, AttributeError, TypeError, KeyError)):
        return f"{name} is not a Jupyter notebook ({kind}): nothing graded"
    return f"{name} could not be read ({kind}: {first_line(error)}): nothing graded"


def reason_not_graded(filename: str, error: Exception) -> str:
    """Why a notebook that was read could not be graded, as one sentence."""
    name, kind = printable(Path(filename).name), type(error).__name__
    if isinstance(error, NotebookValidationError):
        return f"{name} is not a valid Jupyter notebook ({first_line(error)}): nothing graded"
    if type(error).__module__.startswith(("jsonschema", "nbgrader.nbgraderformat")):
        return (f"{name} has grading metadata that could not be repaired ({kind}: "
                f"{first_line(error)}): nothing graded")
    return (f"{name} could not be graded because the grader failed ({kind}: {first_line(error)}): "
            f"nothing graded; the traceback is in autograde's log")
