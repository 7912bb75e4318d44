"""Repair a submission's nbgrader metadata before nbgrader checks it (standard library only).

nbgrader trusts nothing a submission says about its graded cells' points or tests, but it
stops on metadata it cannot read: a cell pasted twice (Jupyter's copy keeps the metadata),
a schema_version of 0 or 99, an id that is not a string. normalise() leaves every graded
cell's metadata exactly as the instructor's notebook has it, so nbgrader's checks always
pass and score the real cells:

- a cell whose grade id the assignment does not have (or that is no string) loses its
  nbgrader metadata and runs as an ordinary cell: a forged cell earns nothing;
- of several cells with one grade id, one is graded (the last whose type is the
  instructor's and, for a locked cell, whose source is too) and the others run as
  ordinary cells: a pasted copy costs nothing;
- the graded cell's metadata is rebuilt from what the instructor's notebook says of its id
  (flags, points, schema version), and a cell whose type changed gets its type back.

Autograde gives it the gradebook's record of every cell (course.preprocessors); the
self-check, which has no gradebook, what the course's suites say (course.selfcheck).
"""
from dataclasses import dataclass

from .printable import printable

SCHEMA_VERSION = 3  # nbgrader 0.9's cell metadata format


@dataclass(frozen=True)
class Known:
    """What the instructor's notebook says of the cell with one grade id. None: not known
    here (the self-check has no gradebook); the submission's own value stays."""

    cell_type: str  # "code" or "markdown"
    grade: bool
    solution: bool
    locked: bool
    task: bool = False
    points: float | None = None
    source: str | None = None  # of a locked cell
    checksum: str | None = None


def normalise(cells: list, known: dict[str, Known]) -> list[str]:
    """Repair the nbgrader metadata of `cells` (nbformat nodes or dicts) in place, given
    `known` ({grade id: Known} of the instructor's cells); return the repairs made, one
    sentence each, for the log and the learner."""
    repairs, copies = [], {}
    for index, cell in enumerate(cells):
        metadata = cell.get("metadata")
        if not isinstance(metadata, dict) or "nbgrader" not in metadata:
            continue
        meta = metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str) and grade_id in known:
            copies.setdefault(grade_id, []).append(index)
            continue
        del metadata["nbgrader"]
        if not isinstance(meta, dict) or grade_id is not None or _claims(meta):
            what = "unreadable grading metadata" if not isinstance(meta, dict) else \
                f"the grading metadata of a cell {printable(repr(grade_id))} the assignment " \
                f"does not have"
            repairs.append(f"cell {index + 1} carries {what}: it runs as an ordinary cell "
                           f"and earns nothing")
    for grade_id, indices in copies.items():
        chosen = max(indices, key=lambda i: (_looks_like(cells[i], known[grade_id]), i))
        for index in indices:
            if index != chosen:
                del cells[index]["metadata"]["nbgrader"]
        if len(indices) > 1:
            others = ", ".join(str(i + 1) for i in indices if i != chosen)
            repairs.append(f"cell {grade_id!r} appears {len(indices)} times (a copied cell keeps "
                           f"its grading metadata): cell {chosen + 1} is graded, and cell(s) "
                           f"{others} run as ordinary cells")
        repairs += _restore(cells[chosen], grade_id, known[grade_id], chosen)
    return repairs


def _claims(meta):
    """Whether metadata claims anything nbgrader acts on (an empty record claims nothing)."""
    return any(meta.get(flag) for flag in ("grade", "solution", "locked", "task"))


def _looks_like(cell, known):
    """(its type is the instructor's, its source is, for a locked cell): the real cell
    ranks highest among copies."""
    return (cell.get("cell_type") == known.cell_type,
            not known.locked or known.source is None or _text(cell.get("source")) == known.source)


def _restore(cell, grade_id, known, index):
    """Give the graded cell its instructor's type and metadata; the repairs, as sentences."""
    repairs, meta = [], cell["metadata"]["nbgrader"]
    if cell.get("cell_type") != known.cell_type:
        repairs.append(f"cell {grade_id!r} (cell {index + 1}) was turned into a "
                       f"{printable(cell.get('cell_type'))} cell: it is graded as the "
                       f"{known.cell_type} cell it is")
        _set_type(cell, known.cell_type)
    if isinstance(meta, dict) and meta.get("schema_version") != SCHEMA_VERSION:
        repairs.append(f"cell {grade_id!r} has nbgrader metadata of schema version "
                       f"{printable(repr(meta.get('schema_version')))}, not {SCHEMA_VERSION}: "
                       f"it is read as version {SCHEMA_VERSION}")
    points = known.points if known.points is not None else _number(meta.get("points"))
    rebuilt = {"schema_version": SCHEMA_VERSION, "grade_id": grade_id, "grade": known.grade,
               "solution": known.solution, "locked": known.locked, "cell_type": known.cell_type,
               **({"task": True} if known.task else {}),
               **({"points": points or 0.0} if known.grade or known.task else {})}
    checksum = known.checksum if known.checksum is not None else meta.get("checksum")
    if isinstance(checksum, str) and len(checksum) == 32:
        rebuilt["checksum"] = checksum
    cell["metadata"]["nbgrader"] = rebuilt
    return repairs


def _set_type(cell, cell_type):
    """Make cell a valid cell of cell_type, keeping its source and metadata."""
    cell["cell_type"] = cell_type
    cell["source"] = _text(cell.get("source"))
    if cell_type == "code":
        cell.pop("attachments", None)
        cell["outputs"], cell["execution_count"] = [], None
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def _text(source):
    """A cell's source as one string (nbformat allows a list of lines)."""
    if isinstance(source, list):
        return "".join(line for line in source if isinstance(line, str))
    return source if isinstance(source, str) else ""


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and value >= 0 else None
