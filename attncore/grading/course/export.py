"""What goes back to the LMS, keyed by the LMS's ids that zip_collect recorded (or the
roster's): `python -m attncore.grading export <assignment> --lms canvas|moodle` writes
reports/<assignment>/<lms>-grades.csv, the grades its gradebook imports, and `... feedback
<assignment> --lms canvas|moodle` writes <lms>-feedback.zip, the feedback pages named so
that its bulk upload gives each student their own.

- Canvas's gradebook import (Grades, Import): the columns Student, ID (Canvas's user id),
  Section, then one column named after the assignment, and a "Points Possible" row. A
  column title that matches no Canvas assignment makes a new one; "Title (id)", with the
  assignment's Canvas id, updates that one.
- Moodle's offline grading worksheet (the assignment's "Upload grading worksheet", with
  the feedback type "Offline grading worksheet" on): the columns Identifier ("Participant"
  and the participant id its download gave), Full name, Grade, Maximum Grade and Last
  modified (grade); Moodle keeps a grade changed in Moodle after that time.

A student with no grade (ungradable, or no submission) gets an empty cell, which both
LMSs leave as it is, not a 0, unless missing_as_zero.
"""
import csv
import datetime
import os
import zipfile
from pathlib import Path

from .collect import read_record
from .downloads import read_roster
from .layout import WORK
from .report import REPORTS, class_rows

LMS_CHOICES = ("canvas", "moodle")


def lms_ids(root: str | os.PathLike, assignment: str) -> tuple:
    """({student: (lms id, name)} from this assignment's downloads, else the roster;
    whether a roster maps the ids). Without a roster, zip_collect keeps the LMS's ids, so a
    student id is the LMS's own."""
    ids = {}
    roster = Path(root) / WORK / "roster.csv"
    if roster.is_file():
        ids = {entry["student_id"]: (lms_id, entry["name"])
               for lms_id, entry in read_roster(roster).items()}
    for student, download in read_record(root, assignment).items():
        ids[student] = (download["lms_id"], download["name"])
    return ids, roster.is_file()


def export(root: str | os.PathLike, db_url: str, assignment: str, lms: str, column: str = "",
           missing_as_zero: bool = False, out_of: float | None = None) -> tuple:
    """Write the CSV `lms` imports; return (its path, [students with a grade it leaves out,
    having no LMS id]).

    column: Canvas's column title (default: the assignment); out_of: scale the scores to
    this maximum (the LMS assignment's), else the nbgrader assignment's maximum.
    """
    if lms not in LMS_CHOICES:
        raise ValueError(f"lms must be one of {LMS_CHOICES}, got {lms!r}")
    rows = class_rows(root, db_url, assignment)
    (ids, rostered), record = lms_ids(root, assignment), read_record(root, assignment)
    most = next((row.max_score for row in rows if row.max_score is not None), 0.0)
    scale = 1.0 if out_of is None else out_of / most
    left_out, lines = [], []
    for row in rows:
        download = record.get(row.student)
        if lms == "moodle":  # participant ids belong to one assignment: its download has them
            known = bool(download) and download["lms"] == "moodle"
        else:  # a user id: downloaded from Canvas (or named plainly), or the roster's
            known = download["lms"] != "moodle" if download else row.student in ids or not rostered
        score = row.score if row.score is not None else 0.0 if missing_as_zero else None
        if not known:  # an empty cell changes nothing in the LMS: only a grade is missed
            left_out += [row.student] if score is not None else []
            continue
        lms_id, name = ids.get(row.student, (row.student, ""))
        lines.append((lms_id, name or row.student, "" if score is None else f"{score * scale:.6g}"))
    path = Path(root) / REPORTS / assignment / f"{lms}-grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        table = csv.writer(file)
        maximum = f"{most * scale:.6g}"
        if lms == "canvas":
            table.writerow(["Student", "ID", "Section", column or assignment])
            table.writerow(["Points Possible", "", "", maximum])
            table.writerows([name, lms_id, "", grade] for lms_id, name, grade in lines)
        else:
            now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            table.writerow(["Identifier", "Full name", "Grade", "Maximum Grade",
                            "Last modified (grade)"])
            table.writerows([f"Participant {lms_id}", name, grade, maximum, now]
                            for lms_id, name, grade in lines)
    return path, left_out


def feedback_zip(root: str | os.PathLike, assignment: str, lms: str) -> tuple:
    """Zip each student's feedback page under the name `lms` files it by: Canvas's
    "Re-upload submissions" reads the user id and the id of the uploaded file from the name
    its download gave (the page keeps that name); Moodle's "Upload multiple feedback files
    in a zip" reads "Full Name_participantid_assignsubmission_file_". Return (the zip's
    path, [students left out: no page, or not downloaded from this LMS])."""
    if lms not in LMS_CHOICES:
        raise ValueError(f"lms must be one of {LMS_CHOICES}, got {lms!r}")
    record, left_out = read_record(root, assignment), []
    feedback = Path(root) / WORK / "feedback"
    students = sorted(set(record) | {p.name for p in feedback.glob("*") if p.is_dir()})
    path = Path(root) / REPORTS / assignment / f"{lms}-feedback.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for student in students:
            pages = sorted((feedback / student / assignment).glob("*.html"))
            download = record.get(student)
            if not pages or not download or download["lms"] != lms:
                left_out.append(student)
                continue
            for page in pages:
                if lms == "canvas":
                    name = f"{Path(download['file']).stem}-{page.stem}-feedback.html"
                else:
                    name = (f"{download['name']}_{download['lms_id']}_assignsubmission_file_"
                            f"{page.stem}-feedback.html")
                archive.write(page, name)
    return path, left_out
