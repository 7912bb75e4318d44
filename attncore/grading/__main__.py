"""Command line: `python -m attncore.grading check NOTEBOOK` (also `attncore-check NOTEBOOK`)."""
from .course.selfcheck import main

if __name__ == "__main__":
    raise SystemExit(main())
