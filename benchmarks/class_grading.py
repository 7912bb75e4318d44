"""Grading a class: seconds per submission of one `nbgrader autograde` run, sandboxed or not.

    python -m benchmarks.class_grading                  # 60 submissions of 03-masking, 3 rounds
    python -m benchmarks.class_grading --students 20 --rounds 1

One course of N submissions (the reference solution and wrong ones from tests/wrong/, in
turn), autograded whole with the repository's nbgrader_config.py, once with
--GradeOutOfProcess.sandbox=none and once with bubblewrap, alternating in each round with
a pause before each run, after one untimed run that creates the gradebook's records. Prints
the seconds per submission of every run and, per round, the ratio sandboxed / unsandboxed.
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

from attncore.bench import machine
from tests.gradekit import Course, submission
from tests.wrong.masking import WRONG

ASSIGNMENT = "03-masking"
PAUSE = 2.0  # seconds of quiet before each timed run


def course_of(root, students):
    """A generated course with `students` submissions: reference and wrong ones in turn."""
    course = Course(root, [ASSIGNMENT])
    course.generate(ASSIGNMENT)
    for k in range(students):
        wrong = WRONG[k % len(WRONG)] if k % 2 else None
        course.submit(ASSIGNMENT, f"student{k:03d}", submission(
            ASSIGNMENT, None if wrong is None else {wrong.function: wrong.source}))
    return course


def timed_autograde(course, sandbox):
    time.sleep(PAUSE)
    start = time.perf_counter()
    course.autograde(ASSIGNMENT, f"--GradeOutOfProcess.sandbox={sandbox}")
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{machine.cpu_model()}, {machine.cores()} cores; {args.students} submissions of "
          f"{ASSIGNMENT}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        course = course_of(Path(folder), args.students)
        timed_autograde(course, "bubblewrap")  # creates every student's records: not timed
        ratios = []
        for round_ in range(args.rounds):
            order = ("none", "bubblewrap") if round_ % 2 == 0 else ("bubblewrap", "none")
            seconds = {sandbox: timed_autograde(course, sandbox) for sandbox in order}
            per = {sandbox: s / args.students for sandbox, s in seconds.items()}
            ratios.append(per["bubblewrap"] / per["none"])
            print(f"round {round_ + 1}: " + ", ".join(
                f"{sandbox} {per[sandbox]:.2f} s/submission" for sandbox in order)
                + f"; sandboxed / not {ratios[-1]:.2f}", flush=True)
        print(f"median ratio sandboxed / not over {args.rounds} rounds: "
              f"{statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
