"""What autograde reads of a submission before any time limit runs, within limits.

nbformat's reading and nbgrader's steps after it take time and memory that grow with a
notebook's bytes and cells, outside every budget of the grader: limited_text refuses a file
over MAX_BYTES or a notebook of more than MAX_CELLS cells (the largest exercise has 22)
before nbformat sees it. nbgrader also reads a submission's timestamp.txt before any
notebook, and fails that student when it cannot parse it; reason_timestamp_unreadable says
why beforehand, so the failure can be recorded. Standard library only, nbgrader's parser
aside: the instructors' page reads the limits from here.
"""
import json
from pathlib import Path

from .printable import printable

MAX_BYTES = 20 << 20
MAX_CELLS = 2000
_TIMESTAMP_BYTES = 200  # nbgrader reads the whole file; a time is a few dozen bytes


class TooLarge(Exception):
    """A notebook larger than a submission may be; the message says by how much."""


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
    try:
        parsed = json.loads(text)
    except ValueError:
        return text  # not JSON: nbformat says so, in its own words
    cells = _cell_count(parsed)
    if cells > max_cells:
        raise TooLarge(f"{name} holds {cells:,} cells, more than the {max_cells:,} a submission "
                       f"may hold (ContainedExporter.max_cells): nothing graded")
    return text


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
                f"({first_line(error)}), so nbgrader stops before grading it: nothing graded; "
                f"write the time it was submitted there (or delete the file) and grade it again")
    return None


def first_line(error: BaseException, limit: int = 200) -> str:
    """The first line of an error's message, printable and at most limit characters."""
    text = (str(error).strip().splitlines() or [""])[0]
    return printable(text if len(text) <= limit else text[:limit - 3] + "...")
