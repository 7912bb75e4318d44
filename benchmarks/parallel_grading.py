"""Grading a class on several cores: `nbgrader autograde` against `python -m attncore.grading
autograde --jobs N`, on the same submissions, with the grades compared.

    python -m benchmarks.parallel_grading                      # 1,000 submissions, 2 jobs
    python -m benchmarks.parallel_grading --students 60 --jobs 2

One course of N submissions of 03-masking: right ones (tests/right/, the k-th style of every
function together) and wrong ones (tests/wrong/) in turn. It is autograded once serially by
nbgrader (which also creates every student's records) and once with --jobs N --force, a
pause before each. Prints both times, the measured speed-up, the part that stays serial
(nbgrader recording grades that were graded ahead, as a fraction of the serial run) and
the speed-up Amdahl's law gives from it on 16 cores; and checks that every cell of every
submission got the same score and the same feedback both times.
"""
import argparse
import re
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from attncore.bench import machine
from tests.gradekit import Course, submission
from tests.right.masking import RIGHT
from tests.wrong.masking import WRONG

ASSIGNMENT = "03-masking"
PAUSE = 2.0  # seconds of quiet before each timed run


def course_of(root, students):
    """A generated course of `students` submissions: one right (in a style of its own), two
    wrong (one wrong function each), in turn."""
    course = Course(root, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    functions = sorted({right.function for right in RIGHT})
    styles = {f: [r for r in RIGHT if r.function == f] for f in functions}
    for k in range(students):
        if k % 3 == 0:
            rank = k // 3
            replaced = {f: styles[f][rank % len(styles[f])].source for f in functions}
        else:
            wrong = WRONG[k % len(WRONG)]
            replaced = {wrong.function: wrong.source}
        course.submit(ASSIGNMENT, f"s{k:04d}", submission(ASSIGNMENT, replaced))
    return course


def timed(course, *args):
    time.sleep(PAUSE)
    start = time.perf_counter()
    result = course.run(*args)
    return time.perf_counter() - start, result


def grades(course):
    """{student: [(grade id, score, output)]} of the gradebook and the autograded notebooks."""
    return {folder.name: [(g.grade_id, g.score, g.output) for g in course.grades(ASSIGNMENT, folder.name)]
            for folder in sorted((course.root / ".nbgrader" / "autograded").iterdir())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"{machine.cpu_model()}, {machine.cores()} cores; {args.students} submissions of "
          f"{ASSIGNMENT}, {args.jobs} jobs", flush=True)
    with TemporaryDirectory() as folder:
        course = course_of(Path(folder), args.students)
        serial, result = timed(course, "nbgrader", "autograde", ASSIGNMENT)
        assert result.returncode == 0, result.stderr[-2000:]
        before = grades(course)
        parallel, result = timed(course, "attncore.grading", "autograde", ASSIGNMENT,
                                 "--jobs", str(args.jobs), "--force")
        assert result.returncode == 0, result.stderr[-2000:]
        phases = re.search(r"graded in ([\d.]+) s on \d+ processes, recorded by nbgrader in "
                           r"([\d.]+) s", result.stderr)
        ahead = re.search(r"\((\d+) graded ahead in parallel\)", result.stderr)
        after = grades(course)
    same = before == after
    record = float(phases[2])
    fraction = record / serial
    print(f"serial nbgrader autograde: {serial:.0f} s ({serial / args.students:.3f} s per submission)")
    print(f"--jobs {args.jobs}: {parallel:.0f} s (graded ahead {phases[1]} s, recorded {record:.0f} s;"
          f" {ahead[1] if ahead else 0} of {args.students} graded ahead)")
    print(f"speed-up on {args.jobs} jobs: {serial / parallel:.2f}")
    print(f"serial part (recording) {fraction:.3f} of the serial run; Amdahl on 16 cores: "
          f"{1 / (fraction + (1 - fraction) / 16):.1f}")
    print(f"identical scores and feedback for every cell of every submission: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
