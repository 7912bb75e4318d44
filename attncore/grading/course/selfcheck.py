"""`attncore-check NOTEBOOK` (or `python -m attncore.grading check NOTEBOOK`): grade your own
notebook, no instructor, nbgrader or repository needed.

Your notebook's code runs in a separate process, in a sandbox where one can start (Linux
with bubblewrap), exactly as when an instructor autogrades it, and every suite the
installed attncore has for the assignment is run: the visible tests and the hidden ones,
whose random inputs are drawn from a fresh seed (printed, so `--seed N` replays a run).
The result is printed per function: points, and what went wrong, by name; with `--json`,
as one JSON object (per function and suite: points, passed, the misconception named) for
CI and for importing into a learning management system.
"""
import argparse
import json
import secrets
import sys
from pathlib import Path

from ..engine import ASSIGNMENTS, SPECS
from ..engine.probe import GENERIC
from .layout import by_function, grade_id, parse_grade_id
from .runner import CellVerdict, grade_notebook, test_cells


class NotAnAssignment(ValueError):
    """The path is not a notebook of one of the course's assignments."""


def main(argv=None):
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
        assignment, grades, written = grade(path, seed=seed)
    except NotAnAssignment as error:
        print(f"error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps({"notebook": args.notebook, "error": str(error)}, indent=2))
        return 2
    if args.json:
        result = as_json(path, assignment, grades, written, seed)
        print(json.dumps(result, indent=2))
        return 0 if result["full_marks"] else 1
    text, full_marks = report(assignment, grades, written)
    found = "" if str(path) == args.notebook else \
        f" (found for {args.notebook!r}; give a path to check another copy)"
    print(f"checked {path}{found}\n{text}")
    return 0 if full_marks else 1


def locate(name):
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


def identify(notebook, path):
    """The assignment a notebook belongs to: the one whose graded functions it all has."""
    ids = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
           for cell in notebook.get("cells", [])}
    for assignment, functions in ASSIGNMENTS.items():
        if set(functions) <= ids:
            return assignment
    raise NotAnAssignment(
        f"{path} is a notebook, but not one of the course's assignments "
        f"({', '.join(ASSIGNMENTS)}): none has all of its graded cells")


def grade(path, seed=None):
    """(assignment, [(grade_id, points, CellVerdict)] for every suite of the assignment,
    [(grade_id, points)] of the written answers, graded by hand); seed: the draw of the
    hidden cases (None: a fresh one)."""
    path = Path(path)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook["cells"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise NotAnAssignment(f"{path} is not a Jupyter notebook ({type(error).__name__})") \
            from None
    assignment = identify(notebook, path)
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
    return assignment, grades, written


def report(assignment, grades, written=()):
    """The printed table and the feedback of the first failing test of each function."""
    earned = sum(points for _, points, verdict in grades if verdict.passed and points)
    total = sum(points or 0 for _, points, _ in grades)
    how = next((verdict.how for _, _, verdict in grades if verdict.how), "")
    lines = [f"{assignment}: {earned:g} / {total:g} automatic points, from every test the "
             f"course has for it (visible and hidden), run in a separate process",
             *([f"({how}; --seed replays a draw)"] if how else []),
             "", f"{'function':<26}{'points':>10}  feedback", "-" * 72]
    shown = []
    for function, mine in by_function(grades, ASSIGNMENTS[assignment]).items():
        score = sum(points or 0 for _, points, verdict in mine if verdict.passed)
        most = sum(points or 0 for _, points, _ in mine)
        failed = [(gid, points, verdict) for gid, points, verdict in mine if not verdict.passed]
        status = next((verdict.message.splitlines()[0] for _, _, verdict in failed), "ok")
        lines.append(f"{function:<26}{f'{score:g} / {most:g}':>10}  {status[:80]}")
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


def misconception_of(function, verdict):
    """The catalogued misconception a failed verdict names, or None (passed, not written,
    did not finish, a mistake no catalogue entry explains)."""
    if verdict.passed:
        return None
    names = {m.name for m in SPECS[function].misconceptions} | set(GENERIC)
    return verdict.misconception if verdict.misconception in names else None


def as_json(path, assignment, grades, written, seed):
    """The self-check's result as a JSON-ready dict: per function and per suite, points,
    max_points, passed and misconception (the first failing suite's, for a function), and
    the wrong functions a suite was graded again without (graded_with_reference)."""
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
    }
