"""`nbgrader zip_collect <assignment>` for what an LMS gives (course.downloads reads the
names): the extractor drops what is no student's notebook and the uploads a later one
supersedes, the collector files each notebook under its student, and both stop the
command, naming every file, when a name cannot be read.

The collector also records, per assignment, which LMS and which LMS id each student's
notebook came from (`.nbgrader/lms/<assignment>.json`): the export to the LMS's
gradebook and the feedback's return read it.
"""
import json
import os
from pathlib import Path

from nbgrader.plugins import ExtractorPlugin, FileNameCollectorPlugin
from nbgrader.utils import find_all_notebooks
from traitlets import Unicode
from traitlets.config import LoggingConfigurable

from . import downloads
from .layout import WORK

RECORDS = f"{WORK}/lms"  # <assignment>.json: where each student's notebook came from


def record_path(root: str | os.PathLike, assignment: str) -> Path:
    return Path(root) / RECORDS / f"{assignment}.json"


def read_record(root: str | os.PathLike, assignment: str) -> dict:
    """{student: {"lms", "lms_id", "name", "file", "late"}} as zip_collect last wrote it,
    {} when it never ran."""
    path = record_path(root, assignment)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


class LmsDownloads(LoggingConfigurable):
    """What both plugins share: the course's paths, the roster, and the Plan of a folder."""

    roster = Unicode(f"{WORK}/roster.csv", help=(
        "A CSV file (columns lms_id, name, student_id) that maps the LMS's ids to the "
        "course's own student ids, relative to the course root; without it, the LMS's ids "
        "are the students' ids.")).tag(config=True)

    def folder(self, step: str) -> str:
        """The absolute path of zip_collect's folder `step` (archive, extracted) of this
        assignment."""
        return self.parent._format_collect_path(step)

    def make_plan(self, extracted: str) -> tuple:
        app = self.parent
        assignment = app.coursedir.assignment_id
        released = find_all_notebooks(app.coursedir.format_path(
            app.coursedir.release_directory, ".", assignment))
        if not released:
            app.fail(f"no released notebook of {assignment}: run `nbgrader generate_assignment "
                     f"{assignment}` first")
        roster_file = Path(app.coursedir.root) / self.roster
        roster = downloads.read_roster(roster_file) if roster_file.is_file() else None
        # when each archive (or loose file) was downloaded, by the path nbgrader extracts
        # it to: a zip x.zip (or x.tar.gz) into the folder x, a loose file under its name
        archive, times = self.folder(app.archive_directory), {}
        for root, _, files in os.walk(archive):
            for name in files:
                path = os.path.join(root, name)
                extracted_as = downloads.relative(path, archive)
                for suffix in (".tar.gz", ".gz", ".zip"):
                    extracted_as = extracted_as.removesuffix(suffix)
                times[extracted_as] = times[downloads.relative(path, archive)] = \
                    os.path.getmtime(path)

        def downloaded_at(path):
            parts = path.split("/")
            return next((times[prefix] for depth in range(len(parts), 0, -1)
                         if (prefix := "/".join(parts[:depth])) in times), 0.0)

        notebooks = [downloads.relative(path, extracted) for path in Path(extracted).rglob("*")
                     if path.is_file() and not downloads.ignored(downloads.relative(path, extracted))
                     and path.suffix == ".ipynb"]
        result = downloads.plan(notebooks, released, roster, downloaded_at)
        if result.problems:
            app.fail("zip_collect cannot file these downloads, so nothing was collected:\n  "
                     + "\n  ".join(result.problems))
        return result, roster


class LmsExtractor(LmsDownloads, ExtractorPlugin):
    """nbgrader's extractor, then the extracted folder keeps only the students' latest
    notebooks (see course.downloads)."""

    def extract(self, archive_path: str, extracted_path: str) -> None:
        super().extract(archive_path, extracted_path)
        for path in sorted(Path(extracted_path).rglob("*"), reverse=True):
            name = downloads.relative(path, extracted_path)
            if path.is_file() and (downloads.ignored(name) or path.suffix != ".ipynb"):
                if not downloads.ignored(name):
                    self.log.info("Not a notebook, ignored: %s", name)
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        result, _ = self.make_plan(extracted_path)
        for name in result.superseded:
            self.log.info("Superseded by a later upload of the same student, ignored: %s", name)
            (Path(extracted_path) / name).unlink()


class LmsCollector(LmsDownloads, FileNameCollectorPlugin):
    """Files each extracted notebook under the student id its name gives (or the roster
    maps it to), as the assignment's released notebook."""

    plan = None  # made from the extracted folder when the first file is collected

    def collect(self, submitted_file: str) -> dict | None:
        if self.plan is None:
            self.extracted = self.folder(self.parent.extracted_directory)
            self.plan, roster = self.make_plan(self.extracted)
            self.write_record(roster)
        name = downloads.relative(submitted_file, self.extracted)
        if name not in self.plan.kept:  # superseded, or not a notebook: already reported
            return None
        student, notebook = self.plan.kept[name]
        return {"student_id": student, "file_id": notebook}

    def write_record(self, roster: dict | None) -> None:
        app = self.parent
        record = {}
        for path, (student, _) in self.plan.kept.items():
            download = self.plan.downloads[path]
            named = (roster or {}).get(download.lms_id, {}).get("name") or download.name
            record[student] = {"lms": download.lms, "lms_id": download.lms_id, "name": named,
                               "file": Path(path).name, "late": download.late}
        path = record_path(app.coursedir.root, app.coursedir.assignment_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
