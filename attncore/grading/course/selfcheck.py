"""`attncore-check NOTEBOOK` (or `python -m attncore.grading check NOTEBOOK`): grade your own
notebook, no instructor, nbgrader or repository needed.

Your notebook's code runs in a separate process, in a sandbox where one can start (Linux
with bubblewrap), exactly as when an instructor autogrades it (the grader's own worker:
without a sandbox it holds the same library and starts no process), and every suite the
installed attncore has for the assignment is run: the visible tests and the hidden ones,
whose random inputs are drawn from a fresh seed (printed, so `--seed N` replays a run).
The result is printed per function: points, and what went wrong, by name; with `--json`,
as one JSON object (per function and suite: points, passed, the misconception named) for
CI and for importing into a learning management system. Before grading, the notebook's
grading metadata is repaired as autograde repairs it (a pasted cell, a schema version, an
id the assignment lacks: course.normalise), and the report says what was repaired; a file
autograde could not grade at all is refused here too.
"""
import argparse
import json
import os
import secrets
import shutil
import sys
import textwrap
from pathlib import Path

from ..engine import ASSIGNMENTS, SPECS
from ..engine.probe import GENERIC
from .layout import by_function, grade_id, parse_grade_id
from .normalise import Known, normalise
from .runner import CellVerdict, grade_notebook, test_cells


class NotAnAssignment(ValueError):
    """The path is not a notebook of one of the course's assignments."""


def main(argv: list[str] | None = None) -> int:
    """The attncore-check command: grade a saved notebook, print the report (or --json),
    exit 0 for full automatic marks, 1 otherwise, 2 for a notebook it cannot grade."""
    parser = argparse.ArgumentParser(
        prog="attncore-check",
        description="Grade your exercise notebook with every test of the course, in a "
                    "separate process, and name your mistakes.")
    parser.add_argument("notebook", help="your notebook, e.g. 03-masking.ipynb, or the "
                                         "assignment's name, e.g. 03-masking")
    parser.add_argument("--seed", type=int, default=None,
                        help="draw the hidden cases with this seed (to replay a run)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of the table, for CI or an LMS: "
                             "the assignment, the seed, the total, and per function and per "
                             "suite the points, the maximum, passed, and the misconception "
                             "named (null when none is); same exit status")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv[1:] if argv[:1] == ["check"] else argv)
    # Drawn here, not in the runner, so that the JSON can give it (the runner draws the same way).
    seed = secrets.randbelow(2 ** 31) if args.seed is None else args.seed
    try:
        path = locate(args.notebook)
        assignment, grades, written, repairs = grade(path, seed=seed)
    except NotAnAssignment as error:
        print(f"error: {error}", file=sys.stderr)
        if args.json:
            _print(json.dumps({"notebook": args.notebook, "error": str(error)}, indent=2))
        return 2
    if args.json:
        result = as_json(path, assignment, grades, written, seed, repairs)
        _print(json.dumps(result, indent=2))
        return 0 if result["full_marks"] else 1
    text, full_marks = report(assignment, grades, written, repairs)
    found = "" if str(path) == args.notebook else \
        f" (found for {args.notebook!r}; give a path to check another copy)"
    _print(f"checked {path}{found}\n{text}")
    return 0 if full_marks else 1


def _print(text):
    """Print text; a reader that stops early (`| head`) ends the output quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # nothing more reaches the reader; Python's own flush at exit must not complain
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def locate(name: str) -> Path:
    """The notebook a learner means: a path, or an assignment's name or file name looked
    for in the current folder, the learner's copy my-exercises/ (from the repository root,
    before the untouched exercises/), exercises/ and their assignment folders."""
    path = Path(name)
    if path.is_file():
        return path
    stem = path.name.removesuffix(".ipynb")
    candidates = [Path(folder) / f"{stem}.ipynb" for folder in (
        ".", stem, f"my-exercises/{stem}", f"exercises/{stem}", f"../{stem}")]
    found = [candidate for candidate in candidates if candidate.is_file()]
    if found:
        return found[0]
    raise NotAnAssignment(f"{name}: no such file (looked for it as given and as "
                          f"{', '.join(str(c) for c in candidates)})")


def identify(notebook: dict, path: Path) -> str:
    """The assignment a notebook belongs to: the one whose graded functions it all has."""
    ids = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
           for cell in notebook.get("cells", [])}
    for assignment, functions in ASSIGNMENTS.items():
        if set(functions) <= ids:
            return assignment
    raise NotAnAssignment(
        f"{path} is a notebook, but not one of the course's assignments "
        f"({', '.join(ASSIGNMENTS)}): none has all of its graded cells")


def grade(path: str | Path, seed: int | None = None) -> tuple[str, list, list, list[str]]:
    """(assignment, [(grade_id, points, CellVerdict)] for every suite of the assignment,
    [(grade_id, points)] of the written answers, graded by hand, [the repairs made to the
    notebook's grading metadata, as autograde makes them]); seed: the draw of the hidden
    cases (None: a fresh one)."""
    path = Path(path)
    notebook = read_notebook(path)
    cells = notebook["cells"]
    assignment = identify(notebook, path)
    repairs = normalise(cells, known_cells(assignment, cells))
    points = {gid: float(cell["metadata"]["nbgrader"].get("points", 0))
              for gid, cell in test_cells(cells)}
    verdicts = grade_notebook(cells, cwd=path.resolve().parent, seed=seed)
    grades = []
    for function in ASSIGNMENTS[assignment]:
        for suite in SPECS[function].suites:
            gid = grade_id(function, suite)
            verdict = verdicts.get(gid) or CellVerdict(
                False, f"{gid}: this test cell is missing from your notebook, so it was not "
                       f"run; copy it back from a fresh copy of the exercise.")
            grades.append((gid, points.get(gid), verdict))
    written = [(cell["metadata"]["nbgrader"]["grade_id"], cell["metadata"]["nbgrader"]["points"])
               for cell in cells if cell["cell_type"] == "markdown"
               and cell.get("metadata", {}).get("nbgrader", {}).get("grade")]
    return assignment, grades, written, repairs


def read_notebook(path: Path) -> dict:
    """The notebook at path as JSON, when it is one nbgrader could grade; NotAnAssignment
    with the reason autograde records (course.contain) when it is not."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise NotAnAssignment(f"{path} is not a Jupyter notebook ({type(error).__name__}): "
                              f"nothing graded") from None
    if notebook.get("nbformat") != 4:
        raise NotAnAssignment(f"{path} is a notebook of a format nbgrader cannot read "
                              f"(nbformat {notebook.get('nbformat')!r}): nothing graded")
    for index, cell in enumerate(cells):
        source = cell.get("source") if isinstance(cell, dict) else None
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw") \
                or not isinstance(cell.get("metadata"), dict) or not (isinstance(source, str) or (
                    isinstance(source, list) and all(isinstance(line, str) for line in source))):
            raise NotAnAssignment(f"{path} is not a valid Jupyter notebook (cell {index + 1} has no "
                                  f"type, text and metadata as a notebook's cells do): nothing graded")
    return notebook


def known_cells(assignment: str, cells: list[dict]) -> dict[str, Known]:
    """{grade id: Known}: what the self-check knows of the assignment's cells with no
    gradebook: its functions' solution and test cells from the installed suites (an id
    that names one of its functions and no suite is not the assignment's); any other cell
    (a written answer, a locked text) as the notebook's last copy of it says."""
    known, functions = {}, set(ASSIGNMENTS[assignment])
    for cell in cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) \
                and cell.get("cell_type") in ("code", "markdown") and not _graded(meta["grade_id"], functions):
            flags = [meta.get(flag) is True for flag in ("grade", "solution", "locked")]
            known[meta["grade_id"]] = Known(cell["cell_type"], *flags, points=None)
    for function in ASSIGNMENTS[assignment]:
        known[function] = Known("code", grade=False, solution=True, locked=False)
        for suite in SPECS[function].suites:
            known[grade_id(function, suite)] = Known("code", grade=True, solution=False, locked=True)
    return known


def _columns():
    """The terminal's width (COLUMNS where it is set); 100 when the output is no terminal."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 100


def _graded(name, functions):
    """Whether a grade id names a graded function or one of its tests (the suites say)."""
    parsed = parse_grade_id(name)
    return name in functions or parsed is not None and parsed[0] in functions


def report(assignment: str, grades: list, written: list = (), repairs: list[str] = ()) -> tuple[str, bool]:
    """The printed table, what was repaired in the notebook's grading metadata, and the
    feedback of the first failing test of each function. The feedback column wraps to the
    terminal's width."""
    earned = sum(points for _, points, verdict in grades if verdict.passed and points)
    total = sum(points or 0 for _, points, _ in grades)
    how = next((verdict.how for _, _, verdict in grades if verdict.how), "")
    lines = [f"{assignment}: {earned:g} / {total:g} automatic points, from every test the "
             f"course has for it (visible and hidden), run in a separate process",
             *([f"({how})"] if how else []),
             *(["", "The grader repaired your notebook's grading metadata (as autograde does; "
                    "this costs nothing):", *(f"- {repair}" for repair in repairs)]
               if repairs else []),
             "", f"{'function':<26}{'points':>10}  feedback", "-" * 72]
    width = max(30, _columns() - 39)
    shown = []
    for function, mine in by_function(grades, ASSIGNMENTS[assignment]).items():
        score = sum(points or 0 for _, points, verdict in mine if verdict.passed)
        most = sum(points or 0 for _, points, _ in mine)
        failed = [(gid, points, verdict) for gid, points, verdict in mine if not verdict.passed]
        status = next((verdict.message.splitlines()[0] for _, _, verdict in failed), "ok")
        first, *rest = textwrap.wrap(status, width) or [""]
        lines.append(f"{function:<26}{f'{score:g} / {most:g}':>10}  {first}")
        lines += [" " * 38 + line for line in rest]
        shown += failed[:1]
    for gid, points in written:
        lines.append(f"{gid:<26}{f'? / {points:g}':>10}  written answer, graded by hand")
    for gid, points, verdict in grades:
        if verdict.notes and gid not in {shown_id for shown_id, _, _ in shown}:
            shown.append((gid, points, verdict))
    for gid, points, verdict in shown:
        title = f"{gid} ({(points or 0) if verdict.passed else 0:g} / {points or 0:g})"
        lines += ["", f"== {title}", verdict.text(how=False)]
    full = all(verdict.passed for _, _, verdict in grades)
    return "\n".join(lines), full


def misconception_of(function: str, verdict: CellVerdict) -> str | None:
    """The catalogued misconception a failed verdict names, or None (passed, not written,
    did not finish, a mistake no catalogue entry explains)."""
    if verdict.passed:
        return None
    names = {m.name for m in SPECS[function].misconceptions} | set(GENERIC)
    return verdict.misconception if verdict.misconception in names else None


def as_json(path: Path, assignment: str, grades: list, written: list, seed: int,
            repairs: list[str] = ()) -> dict:
    """The self-check's result as a JSON-ready dict: per function and per suite, points,
    max_points, passed and misconception (the first failing suite's, for a function), the
    wrong functions a suite was graded again without (graded_with_reference), and the
    repairs made to the notebook's grading metadata."""
    functions = []
    for function, mine in by_function(grades, ASSIGNMENTS[assignment]).items():
        suites = [{"grade_id": gid, "suite": parse_grade_id(gid)[1],
                   "points": float(points or 0) if verdict.passed else 0.0,
                   "max_points": float(points or 0),
                   "passed": verdict.passed, "misconception": misconception_of(function, verdict),
                   "graded_with_reference": list(verdict.stood_in),
                   "feedback": verdict.text(how=False)}
                  for gid, points, verdict in mine]
        failed = [suite for suite in suites if not suite["passed"]]
        functions.append({
            "function": function,
            "points": sum(suite["points"] for suite in suites),
            "max_points": sum(suite["max_points"] for suite in suites),
            "passed": not failed,
            "misconception": next((s["misconception"] for s in failed if s["misconception"]),
                                  None),
            "suites": suites})
    how = next((verdict.how for _, _, verdict in grades if verdict.how), "")
    return {
        "notebook": str(path), "assignment": assignment, "seed": seed, "graded": how,
        "points": sum(f["points"] for f in functions),
        "max_points": sum(f["max_points"] for f in functions),
        "full_marks": all(f["passed"] for f in functions),
        "functions": functions,
        "written_answers": [{"grade_id": gid, "points": None, "max_points": float(points)}
                            for gid, points in written],
        "repaired": list(repairs),
    }
