"""Command line: `python -m attncore.grading check NOTEBOOK` (also `attncore-check NOTEBOOK`)."""
import argparse
import sys

from .selfcheck import NotAnAssignment, grade, report


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m attncore.grading",
        description="Grade your notebook with the course's tests and feedback.")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="autograde one exercise notebook")
    check.add_argument("notebook", help="e.g. exercises/03-masking/03-masking.ipynb")
    args = parser.parse_args(["check", *argv] if argv and argv[0] != "check" else argv)
    try:
        assignment, hidden, grades = grade(args.notebook)
    except NotAnAssignment as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    text, full_marks = report(assignment, hidden, grades)
    print(text)
    return 0 if full_marks else 1


if __name__ == "__main__":
    sys.exit(main())
