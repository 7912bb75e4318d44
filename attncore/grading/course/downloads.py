"""What an LMS's "download all submissions" archive holds, read from its names (standard
library only; course.collect hands it to nbgrader's zip_collect).

Three layouts are read as they come, with the student id taken from the LMS:

- Canvas names each file `sortablename_userid_attachmentid_file.ipynb`, with `LATE_`
  before the user id for a late submission and `-N` before `.ipynb` when a student
  uploaded a file of that name again (the two numbers are Canvas's user id and the id of
  the uploaded file, which grows with time);
- Moodle gives a folder per student, `Full Name_participantid_assignsubmission_file`
  (with a trailing `_` before Moodle 4.1), or with "download as folders" off, files
  named `Full Name_participantid_assignsubmission_file_file.ipynb`;
- a plain `<student-id>_<file>.ipynb`, the name nbgrader's own documentation uses.

Of several notebooks of one student, the latest is kept: Canvas's larger attachment id and
resubmission number, else the archive downloaded last. Anything that is not a notebook,
macOS's `__MACOSX/` folders and hidden files are ignored; a notebook whose name matches
none of the layouts, or a student missing from the roster, is an error named by file.
"""
import csv
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

CANVAS = re.compile(r"(?P<name>[^_]+)_(?:(?P<late>LATE)_)?(?P<id>\d+)_(?P<attachment>\d+)_"
                    r"(?P<file>.+?)(?:-(?P<copy>\d+))?\.ipynb")
MOODLE_FOLDER = re.compile(r"(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_file_?")
MOODLE_FILE = re.compile(r"(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_file_(?P<file>.+\.ipynb)")
PLAIN = re.compile(r"(?P<id>[^_.][^_]*)_(?P<file>.+\.ipynb)")
ROSTER_COLUMNS = ("lms_id", "name", "student_id")


@dataclass(frozen=True)
class Download:
    """One notebook of a download, as its name says.

    lms_id: the LMS's id of the student (Canvas's user id, Moodle's participant id, or the
    plain name's id); notebook: the file name the student uploaded, without Canvas's -N;
    order: later uploads sort higher (Canvas's attachment id and -N, else 0).
    """

    path: str  # where it lies, relative to the extracted folder, "/" between folders
    lms: str  # "canvas", "moodle" or "plain"
    lms_id: str
    notebook: str
    name: str = ""  # the student's name as the LMS wrote it
    late: bool = False  # Canvas marked it late
    order: tuple = (0, 0)


def ignored(path: str) -> bool:
    """Is this extracted file none of the students' work (macOS's __MACOSX/ metadata, a
    hidden file or folder)?"""
    parts = PurePosixPath(path).parts
    return any(part == "__MACOSX" or part.startswith(".") for part in parts)


def parse(path: str) -> Download | None:
    """The Download a notebook's path (relative to the extracted folder) names, or None
    when it follows none of the layouts."""
    parts = PurePosixPath(path).parts
    for depth, folder in enumerate(parts[:-1]):
        if match := MOODLE_FOLDER.fullmatch(folder):
            return Download(path, "moodle", match["id"], "/".join(parts[depth + 1:]),
                            match["name"])
    base = parts[-1]
    if match := MOODLE_FILE.fullmatch(base):
        return Download(path, "moodle", match["id"], match["file"], match["name"])
    if match := CANVAS.fullmatch(base):
        return Download(path, "canvas", match["id"], match["file"] + ".ipynb", match["name"],
                        bool(match["late"]), (int(match["attachment"]), int(match["copy"] or 0)))
    if match := PLAIN.fullmatch(base):
        return Download(path, "plain", match["id"], match["file"])
    return None


@dataclass
class Plan:
    """Where each extracted notebook goes: kept {path: (student id, released notebook)},
    the paths superseded by a later upload, and the problems that stop the collection."""

    kept: dict
    downloads: dict  # path -> Download, of the kept ones
    superseded: list
    problems: list


def plan(notebooks: list, released: list, roster: dict | None = None,
         downloaded_at: Callable[[str], float] = lambda path: 0.0) -> Plan:
    """The Plan for the extracted notebooks' paths (relative, "/" between folders).

    released: the assignment's notebook names; a student's notebook of another name is
    taken as the released one when the assignment has only one. roster: read_roster's
    {lms id: {"name", "student_id"}}, or None to use the LMS's ids. downloaded_at(path):
    when the archive holding it was downloaded (a file's time), which orders uploads
    Canvas does not number.
    """
    problems, candidates = [], {}
    for path in sorted(notebooks):
        download = parse(path)
        if download is None:
            problems.append(f"{path}: the name follows no layout this course reads (Canvas "
                            f"name_userid_fileid_file.ipynb, Moodle Name_id_assignsubmission_"
                            f"file, or <student-id>_<file>.ipynb)")
            continue
        student = download.lms_id if roster is None else roster_student(roster, download)
        if student is None:
            problems.append(f"{path}: {download.lms} id {download.lms_id} is not in the roster")
            continue
        notebook = (download.notebook if download.notebook in released else
                    released[0] if len(released) == 1 else None)
        if notebook is None:
            problems.append(f"{path}: {download.notebook} is none of the assignment's "
                            f"notebooks ({', '.join(released)})")
            continue
        # the released name before a renamed copy, then the latest upload
        rank = (download.notebook == notebook, download.order, downloaded_at(path))
        candidates.setdefault((student, notebook), []).append((rank, download))
    kept, downloads, superseded = {}, {}, []
    for (student, notebook), found in sorted(candidates.items()):
        found.sort(key=lambda item: item[0])
        (rank, latest), earlier = found[-1], found[:-1]
        tied = [download.path for other, download in earlier if other == rank]
        if tied:
            problems.append(f"{latest.path} and {', '.join(tied)}: two uploads of {student}'s "
                            f"{notebook} and nothing says which is later; remove the older")
        kept[latest.path] = (student, notebook)
        downloads[latest.path] = latest
        superseded += [download.path for _, download in earlier]
    return Plan(kept, downloads, superseded, problems)


def roster_student(roster: dict, download: Download) -> str | None:
    """The course's id of a download's student: by LMS id, or for Moodle, whose participant
    ids differ from one assignment to the next, by the full name; None when not there."""
    if download.lms_id in roster:
        return roster[download.lms_id]["student_id"]
    if download.lms == "moodle":
        named = [entry["student_id"] for entry in roster.values() if entry["name"] == download.name]
        return named[0] if len(named) == 1 else None
    return None


def read_roster(path: str | os.PathLike) -> dict:
    """{lms id: {"name", "student_id"}} of a roster CSV with the columns ROSTER_COLUMNS."""
    with open(path, newline="", encoding="utf-8-sig") as file:
        rows = list(csv.DictReader(file))
    missing = [column for column in ROSTER_COLUMNS if rows and column not in rows[0]]
    if not rows or missing:
        raise ValueError(f"{path}: a roster needs a header row and the columns "
                         f"{', '.join(ROSTER_COLUMNS)}; missing {', '.join(missing) or 'rows'}")
    return {row["lms_id"].strip(): {"name": row["name"].strip(),
                                    "student_id": row["student_id"].strip()} for row in rows}


def relative(path: str | os.PathLike, folder: str | os.PathLike) -> str:
    """path relative to folder, "/" between its parts."""
    return Path(path).relative_to(folder).as_posix()
