"""Verdicts graded ahead, in a pool (course.parallel), kept for nbgrader's serial run to take.

Each notebook's verdicts are stored under a key of everything they depend on, so that
GradeOutOfProcess takes them only for the very notebook, draw and options they were
graded with.
"""
import dataclasses
import hashlib
import json
import os
from pathlib import Path

from .layout import WORK
from .verdict import CellVerdict

AHEAD = f"{WORK}/ahead"  # <assignment>/<student>.json: verdicts graded in the pool


def notebook_key(cells: list, seed: int, options: dict) -> str:
    """A digest of everything a notebook's verdicts depend on: what the grader reads of each
    cell (its type, source, and nbgrader's grade_id, grade and solution), the seed, and
    grade_notebook's options (time limits, restarts, the sandbox)."""
    def read(cell):
        source = cell["source"]
        meta = cell.get("metadata", {}).get("nbgrader", {})
        return [cell["cell_type"], "".join(source) if isinstance(source, list) else source,
                *(meta.get(name) for name in ("grade_id", "grade", "solution"))]

    parts = [read(cell) for cell in cells]
    blob = json.dumps([parts, seed, options], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def save_ahead(path: str | os.PathLike, key: str, verdicts: dict) -> None:
    """Keep a notebook's {grade_id: CellVerdict} under its key."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"key": key, "verdicts": {
        grade_id: dataclasses.asdict(verdict) for grade_id, verdict in verdicts.items()}}))


def load_ahead(path: str | os.PathLike, key: str) -> dict | None:
    """The verdicts kept at path when they were graded under this key, else None."""
    try:
        kept = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if kept.get("key") != key:
        return None
    return {grade_id: CellVerdict(**{name: tuple(value) if isinstance(value, list) else value
                                     for name, value in fields.items()})
            for grade_id, fields in kept["verdicts"].items()}
