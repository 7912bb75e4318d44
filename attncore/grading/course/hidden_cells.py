"""The text of a hidden test cell, made from its suite's cases (they are written once, in
the suites).

A hidden test cell of a notebook holds no code, only a comment that lists what its suite
probes: the descriptions of the suite's Cases, the same words the feedback quotes. The
grader reads the suite from the cell's grade id, never from its text.

`python -m attncore.grading.course.hidden_cells` rewrites the hidden cells of solutions/
from the suites (then regenerate the release: `make exercises FORCE=1`).
"""
from pathlib import Path

from ..engine import SPECS
from ..engine.probe import VISIBLE_SUITES
from .layout import SOURCE, parse_grade_id
from .runner import test_cells

HEAD = ("# Hidden tests: they run when the notebook is graded (nbgrader autograde) and in a "
        "terminal\n# with `attncore-check NOTEBOOK`, in a separate process; they do not run "
        "in this kernel.\n")


def hidden_cell_text(function, suite):
    """The comment of the test cell that runs hidden `suite` of `function`: one line per case."""
    return HEAD + "\n".join(f"# - {case.description}" for case in SPECS[function].suites[suite])


def hidden_cells(cells):
    """[(cell, the text it should hold)] for the hidden test cells among a notebook's cells."""
    return [(cell, hidden_cell_text(*parse_grade_id(gid))) for gid, cell in test_cells(cells)
            if parse_grade_id(gid)[1] not in VISIBLE_SUITES]


def main(root="."):
    """Rewrite every hidden test cell of root/solutions/*/*.ipynb that differs; print which."""
    import nbformat  # a course maintainer's tool: the self-check never needs it

    for path in sorted(Path(root, SOURCE).glob("*/*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        stale = [(cell, text) for cell, text in hidden_cells(notebook.cells)
                 if cell.source != text]
        for cell, text in stale:
            cell.source = text
        if stale:
            nbformat.write(notebook, path)
            print(f"{path}: {len(stale)} hidden cell(s) rewritten")


if __name__ == "__main__":
    main()
