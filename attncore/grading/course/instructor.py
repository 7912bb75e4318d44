"""The instructor's commands beside nbgrader's, run like nbgrader's from the course root
(the folder of nbgrader_config.py):

    python -m attncore.grading autograde <assignment> --jobs N [nbgrader's options]
    python -m attncore.grading report <assignment>
    python -m attncore.grading export <assignment> --lms canvas|moodle
    python -m attncore.grading feedback <assignment> --lms canvas|moodle
    python -m attncore.grading seed <assignment> <student> ...
"""
import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .layout import WORK

if TYPE_CHECKING:  # the learner's self-check runs through this package without traitlets
    from traitlets.config import Config

COMMANDS = ("autograde", "report", "export", "feedback", "seed")


def nbgrader_config() -> "Config":
    """The Config nbgrader's own commands would load here: nbgrader_config.py of this
    folder (the course root) and of the Jupyter config folders (~/.jupyter, where an
    instructor may keep the course secret)."""
    from nbgrader.apps.baseapp import NbGrader

    if not Path("nbgrader_config.py").is_file():
        raise SystemExit(f"error: no nbgrader_config.py in {Path.cwd()}: run this from the "
                         f"course's root folder, as nbgrader's own commands")
    app = NbGrader()
    app.load_config_file()
    return app.config


def positive(text: str) -> int:
    """An argument that must be a whole number above 0."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number above 0, not {text!r}")
    return int(text)


def parser() -> argparse.ArgumentParser:
    commands = argparse.ArgumentParser(prog="python -m attncore.grading", description=(
        "The instructor's commands of the course, run from the folder of "
        "nbgrader_config.py (the learner's self-check is `check NOTEBOOK`)."))
    sub = commands.add_subparsers(dest="command", required=True)

    def command(name, help):
        made = sub.add_parser(name, help=help)
        made.add_argument("assignment")
        return made

    autograde = command("autograde", "nbgrader autograde on several cores")
    autograde.add_argument("--jobs", type=positive, default=2, help="processes that grade at once")
    command("report", "reports/<assignment>/: report.html, students.csv, misconceptions.csv")
    export = command("export", "reports/<assignment>/<lms>-grades.csv, the file the LMS's "
                               "gradebook imports")
    export.add_argument("--lms", choices=("canvas", "moodle"), required=True)
    export.add_argument("--column", default="", help="Canvas: the gradebook column's title, "
                        "'Title (id)' to update an existing assignment (default: the "
                        "assignment's name)")
    export.add_argument("--out-of", type=float, default=None,
                        help="scale the scores to this maximum (the LMS assignment's)")
    export.add_argument("--missing-as-zero", action="store_true",
                        help="write 0, not an empty cell, for a student with no grade "
                             "(ungradable, or no submission)")
    feedback = command("feedback", "reports/<assignment>/<lms>-feedback.zip: the feedback "
                                   "pages named for the LMS's bulk upload")
    feedback.add_argument("--lms", choices=("canvas", "moodle"), required=True)
    command("seed", "the replay seed of a student's graded submission: keyed by the course "
                    "secret, of the assignment, the student and the code of the notebook "
                    "autograde graded (attncore-check --seed N on that notebook replays its "
                    "hidden cases; a changed notebook draws new ones)"
            ).add_argument("students", nargs="+")
    return commands


def main(argv: list) -> int:
    """Run one instructor's command; 0 when done, 2 (and why on stderr) when it cannot."""
    args, rest = parser().parse_known_args(argv)
    if rest and args.command != "autograde":
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return run(args, rest)
    except (LookupError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace, rest: list) -> int:
    """The command args names, with nbgrader's options rest (autograde only)."""
    config = nbgrader_config()
    root, db_url = Path(config.CourseDirectory.root), config.CourseDirectory.db_url
    if args.command == "autograde":
        from .contain import read_limits
        from .parallel import autograde

        return autograde(root, args.assignment, args.jobs, config.GradeOutOfProcess, rest,
                         db_url=db_url, limits=read_limits(config))
    if args.command == "report":
        from .report import write

        print(f"wrote {write(root, db_url, args.assignment)}/report.html, students.csv and "
              f"misconceptions.csv")
    elif args.command == "export":
        from .export import export

        path, left_out = export(root, db_url, args.assignment, args.lms, args.column,
                                args.missing_as_zero, args.out_of)
        print(f"wrote {path}")
        if left_out:
            print(f"left out, no {args.lms} id known for: {', '.join(left_out)}", file=sys.stderr)
    elif args.command == "feedback":
        from .export import feedback_zip

        path, left_out = feedback_zip(root, args.assignment, args.lms)
        print(f"wrote {path}")
        if left_out:
            print(f"left out, no feedback page or no {args.lms} download: {', '.join(left_out)}",
                  file=sys.stderr)
    else:
        for student in args.students:
            print(f"{student}\t{graded_seed(root, args.assignment, student, config.GradeOutOfProcess)}")
    return 0


def graded_seed(root: Path, assignment: str, student: str, config: "Config") -> int:
    """The seed autograde draws `student`'s hidden cases of `assignment` with: the configured
    one, else the replay seed of the notebook it graded (course.secret). Raises LookupError
    when autograde has graded none."""
    from .runner import submission_digest
    from .secret import keyed_secret, replay_seed

    if config.get("seed") is not None:
        return config.get("seed")
    graded = sorted(Path(root, WORK, "autograded", student, assignment).glob("*.ipynb"))
    if not graded:
        raise LookupError(f"{student} has no autograded notebook of {assignment}: the seed "
                          f"depends on the notebook graded, so autograde it first")
    cells = json.loads(graded[0].read_text(encoding="utf-8"))["cells"]
    return replay_seed(keyed_secret(root, config.get("secret", "")), assignment, student,
                       submission_digest(cells))
