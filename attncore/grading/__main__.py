"""Command line: `python -m attncore.grading check NOTEBOOK` (also `attncore-check
NOTEBOOK`), the learner's self-check; and the instructor's commands (course.instructor):
autograde --jobs N, report, export, feedback, seed."""
import sys

from .course.instructor import COMMANDS


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in COMMANDS:
        from .course.instructor import main as instructor

        return instructor(argv)
    from .course.selfcheck import main as check

    return check(argv)


if __name__ == "__main__":
    raise SystemExit(main())
