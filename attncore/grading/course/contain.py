"""One submission's failure stays that submission's: autograde records it and goes on.

nbgrader's autograde already moves on to the next student after most errors, but not
after a notebook whose metadata is of another schema version (it ends the whole run), and
it keeps no record an instructor can read later. ContainedExporter, the exporter autograde
uses (course.config), reads and converts each notebook; whatever goes wrong there (a file
that is not a notebook, one larger than a submission may be, metadata no repair makes
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


class Ungradable(Exception):
    """Nothing of one submission could be graded; the message says why."""


class ContainedExporter(NotebookExporter):
    """nbgrader's notebook exporter, with each notebook's failure contained and recorded
    (its parent is the Autograde converter, which knows the course folder and the phase)."""

    max_bytes = Int(20 << 20, help="The largest notebook file, in bytes, that autograde reads; "
                                   "a larger one is recorded as ungradable.").tag(config=True)
    max_cells = Int(2000, help="The most cells a notebook may hold for autograde to grade it; "
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


class TooLarge(Exception):
    """A notebook larger than a submission may be; the message says by how much."""


def read_within(filename: str, max_bytes: int, max_cells: int) -> nbformat.NotebookNode:
    """nbformat.read(filename) as version 4, within the limits of limited_text."""
    return nbformat.reads(limited_text(filename, max_bytes, max_cells), as_version=4)


def limited_text(filename: str, max_bytes: int, max_cells: int) -> str:
    """The text of a notebook file, refusing with TooLarge a file over max_bytes or a
    notebook of more than max_cells cells before nbformat converts and validates it (the
    time and memory those take, and nbgrader's after them, grow with both)."""
    name = printable(Path(filename).name)
    with open(filename, "rb") as file:
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(f"{name} is larger than the {max_bytes / 2**20:g} MiB a submission may be "
                       f"(ContainedExporter.max_bytes): nothing graded")
    text = data.decode("utf-8")
    cells = _cell_count(json.loads(text))
    if cells > max_cells:
        raise TooLarge(f"{name} holds {cells:,} cells, more than the {max_cells:,} a submission "
                       f"may hold (ContainedExporter.max_cells): nothing graded")
    return text


def read_limits(config: object = None) -> tuple[int, int]:
    """(max_bytes, max_cells) of ContainedExporter under config (a traitlets Config)."""
    exporter = ContainedExporter(config=config)
    return exporter.max_bytes, exporter.max_cells


def _cell_count(parsed):
    """Cells of a parsed notebook of any version (version 3 keeps them in worksheets)."""
    if not isinstance(parsed, dict):
        return 0  # not a notebook: nbformat says so
    sheets = parsed.get("worksheets") if isinstance(parsed.get("worksheets"), list) else [parsed]
    return sum(len(sheet["cells"]) for sheet in sheets
               if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list))


def reason_timestamp_unreadable(path: Path) -> str | None:
    """Why nbgrader cannot read a submission's timestamp.txt, as one sentence; None when it
    can or there is none. (nbgrader reads the whole file; a small one is all it can parse.)"""
    from nbgrader.utils import parse_utc

    try:
        with open(path, "rb") as file:
            written = file.read(_TIMESTAMP_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"its timestamp.txt could not be read ({type(error).__name__}): nothing graded"
    try:
        if len(written) > _TIMESTAMP_BYTES:
            raise ValueError("longer than any time")
        text = written.decode("utf-8").strip()
        if text:  # nbgrader takes an empty file for no time
            parse_utc(text)
    except (ValueError, OverflowError) as error:
        shown = printable(written[:60].decode("utf-8", "replace").strip())
        return (f"its timestamp.txt holds {shown!r}, which is not a time nbgrader can read "
                f"({_first_line(error)}), so nbgrader stops before grading it: nothing graded; "
                f"write the time it was submitted there (or delete the file) and grade it again")
    return None


_TIMESTAMP_BYTES = 200


def reason_unreadable(filename: str, error: Exception) -> str:
    """Why a file could not be read as a notebook, as one sentence."""
    name, kind = printable(Path(filename).name), type(error).__name__
    if isinstance(error, nbformat.NBFormatError):
        return f"{name} is a notebook of a format nbgrader cannot read ({printable(error)}): nothing graded"
    if isinstance(error, (ValueError, json.JSONDecodeError, AttributeError, TypeError, KeyError)):
        return f"{name} is not a Jupyter notebook ({kind}): nothing graded"
    return f"{name} could not be read ({kind}: {_first_line(error)}): nothing graded"


def reason_not_graded(filename: str, error: Exception) -> str:
    """Why a notebook that was read could not be graded, as one sentence."""
    name, kind = printable(Path(filename).name), type(error).__name__
    if isinstance(error, NotebookValidationError):
        return f"{name} is not a valid Jupyter notebook ({_first_line(error)}): nothing graded"
    if type(error).__module__.startswith(("jsonschema", "nbgrader.nbgraderformat")):
        return (f"{name} has grading metadata that could not be repaired ({kind}: "
                f"{_first_line(error)}): nothing graded")
    return (f"{name} could not be graded because the grader failed ({kind}: {_first_line(error)}): "
            f"nothing graded; the traceback is in autograde's log")


def _first_line(error, limit=200):
    text = (str(error).strip().splitlines() or [""])[0]
    return printable(text if len(text) <= limit else text[:limit - 3] + "...")
