"""Shared by the grading tests: the repository's assignments, built into submissions."""
import re
from pathlib import Path

import nbformat

from attncore.grading import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[1]


def source_notebook(assignment):
    return ROOT / "solutions" / assignment / f"{assignment}.ipynb"


def release_notebook(assignment):
    return ROOT / "exercises" / assignment / f"{assignment}.ipynb"


def reference_sources(assignment):
    """{function: its reference solution cell, solution markers removed}."""
    notebook = nbformat.read(source_notebook(assignment), as_version=4)
    return {cell.metadata["nbgrader"]["grade_id"]: re.sub(
                r"^\s*### (BEGIN|END) SOLUTION\s*\n", "", cell.source, flags=re.M)
            for cell in notebook.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}


def submission(assignment, replaced=None):
    """The released notebook with every function filled in: the reference, or replaced[f]."""
    notebook = nbformat.read(release_notebook(assignment), as_version=4)
    sources = {**reference_sources(assignment), **(replaced or {})}
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in sources:
            cell.source = sources[grade_id]
    return notebook


def points_by_function(grades, assignment):
    """{function: (score, max, [messages of failing cells])} from a list of CellGrade."""
    result = {}
    for function in ASSIGNMENTS[assignment]:
        cells = [g for g in grades if g.grade_id.split("-")[0] == function and not g.manual]
        result[function] = (sum(g.score for g in cells), sum(g.max_score for g in cells),
                            [g.message for g in cells if g.score < g.max_score])
    return result
