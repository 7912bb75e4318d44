"""Measure the unseen class through nbgrader autograde: `python -m tests.unseen [FOLDER]`.

Each wrong solution is one student's submission, graded alone by the course's own
`nbgrader autograde` (the repository's nbgrader_config.py, the sandbox, a fresh seed per
notebook) in a throwaway course folder (FOLDER, or a temporary one). Prints, per
assignment and in all, how many lost points for their function (caught) and how many
feedbacks name the behaviour (tests.unseen.names), then the ones that do not.
"""
import importlib
import sys
import tempfile
import time

from ..gradekit import SUITE_MODULE, Course, points_by_function, submission
from . import headline_and_detail, names


def measure(root):
    course = Course(root, list(SUITE_MODULE))
    rows, misses = [], []
    for assignment, module in SUITE_MODULE.items():
        unseen = importlib.import_module(f"tests.unseen.{module}").UNSEEN
        course.generate(assignment)
        students = {f"s{k:03d}": entry for k, entry in enumerate(unseen)}
        for student, entry in students.items():
            course.submit(assignment, student, submission(assignment, {entry.function: entry.source}))
        started = time.perf_counter()
        course.autograde(assignment)
        seconds = time.perf_counter() - started
        caught = named = 0
        for student, entry in students.items():
            score, most, messages = points_by_function(
                course.grades(assignment, student), assignment)[entry.function]
            caught += score < most
            named += score < most and names(entry, messages)
            if not (score < most and names(entry, messages)):
                said = headline_and_detail(messages[0])[0] if messages else "(full marks)"
                misses.append(f"{entry.function}: {entry.behaviour}\n    -> {said[:160]}")
        rows.append((assignment, len(students), caught, named, seconds))
        print(f"{assignment:14s} {len(students):4d} written {caught:4d} caught {named:4d} named "
              f"({seconds:.0f} s)", flush=True)
    total = [sum(row[i] for row in rows) for i in (1, 2, 3)]
    print(f"{'all':14s} {total[0]:4d} written {total[1]:4d} caught {total[2]:4d} named")
    print("\n".join(["", "not caught or not named:", *misses]) if misses else "")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        measure(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as folder:
            measure(folder)
