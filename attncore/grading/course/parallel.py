"""Autograde on several cores: `python -m attncore.grading autograde <assignment> --jobs N`.

nbgrader grades one notebook after another and keeps its gradebook in SQLite, whose
writes stay serial. So the grading is split in two:

1. the sandboxed part, nearly all of the time, runs for every submission in a pool of N
   processes, each verdict kept with a key of everything it depends on (the notebook's
   cells as nbgrader grades them, its metadata repaired (course.normalise) from the
   gradebook; the draw; the grading options as GradeOutOfProcess's traits read them);
2. then `nbgrader autograde` runs as usual, with GradeOutOfProcess.ahead pointing at
   those verdicts: a notebook whose key matches takes them instead of being graded
   again, and any other (a locked cell nbgrader restored, an option given only to
   nbgrader) is graded there. nbgrader records the grades, writes the feedback's outputs, and the
   gradebook ends as a serial run leaves it.
"""
import concurrent.futures
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .ahead import AHEAD, notebook_key, save_ahead
from .layout import WORK
from .normalise import normalise
from .reading import MAX_BYTES, MAX_CELLS, limited_text
from .runner import grade_notebook, submission_digest
from .secret import keyed_secret, replay_seed


def grade_ahead(task: tuple) -> tuple:
    """Pool work: grade one submission and keep its verdicts; (student, error or "").
    Its cells are first repaired as nbgrader's NormaliseMetadata repairs them, given
    `known` (the gradebook's cells; None: as submitted). The draw: the configured seed,
    else the submission's replay seed under the secret."""
    student, assignment, notebook, target, seed, secret, options, known, limits = task
    try:
        cells = json.loads(limited_text(notebook, *limits))["cells"]
        if known is not None:
            normalise(cells, known)
        if seed is None:
            seed = replay_seed(secret, assignment, student, submission_digest(cells))
        verdicts = grade_notebook(cells, cwd=Path(notebook).parent, seed=seed, **options)
    except Exception as error:  # nbgrader meets it again and records it as it does
        return student, f"{type(error).__name__}: {error}"
    save_ahead(target, notebook_key(cells, seed, options), verdicts)
    return student, ""


def gradebook_knowledge(db_url: str, assignment: str):
    """notebook name -> {grade id: Known} of its cells in the gradebook at db_url, or None
    where the gradebook does not have it (nbgrader then says why, and grades it itself)."""
    from nbgrader.api import MissingEntry

    from .preprocessors import gradebook_cells

    kept = {}

    def known(notebook):
        if notebook not in kept:
            try:
                kept[notebook] = gradebook_cells(db_url, notebook, assignment) if db_url else None
            except MissingEntry:  # no such assignment or notebook recorded yet
                kept[notebook] = None
        return kept[notebook]
    return known


def progress(done: int, total: int, what: str, started: float, stream: TextIO = sys.stderr) -> None:
    """Draw a one-line progress bar: done of total, the rate and the time left."""
    width = 30
    filled = width * done // max(total, 1)
    spent = time.monotonic() - started
    left = spent / done * (total - done) if done else 0.0
    stream.write(f"\r{what} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                 f"{spent:.0f} s, about {left:.0f} s left ")
    stream.write("\n" if done == total else "")
    stream.flush()


def autograde(root: Path, assignment: str, jobs: int, config: dict, nbgrader_args: Sequence = (),
              stream: TextIO = sys.stderr, db_url: str = "",
              limits: tuple[int, int] | None = None) -> int:
    """Grade every submission of `assignment` that `nbgrader autograde` would, on `jobs`
    processes, then record them with nbgrader; return nbgrader's exit status. config: the
    GradeOutOfProcess section of nbgrader's configuration; db_url: the gradebook's; limits:
    the (max_bytes, max_cells) of a notebook it reads (course.contain.read_limits)."""
    from .preprocessors import configured

    limits = limits or (MAX_BYTES, MAX_CELLS)
    grader = configured(config)
    options, seed = grader.options(), grader.seed
    secret = keyed_secret(root, grader.secret) if seed is None else ""
    known = gradebook_knowledge(db_url, assignment)
    force = any(arg in ("--force", "-f") for arg in nbgrader_args)
    only = []  # nbgrader's --student=ID or --student ID
    for k, arg in enumerate(nbgrader_args):
        if arg.startswith("--student="):
            only.append(arg.split("=", 1)[1])
        elif arg == "--student" and k + 1 < len(nbgrader_args):
            only.append(nbgrader_args[k + 1])
    ahead = Path(root) / AHEAD / assignment
    shutil.rmtree(ahead, ignore_errors=True)
    tasks = []
    for notebook in sorted(Path(root, WORK, "submitted").glob(f"*/{assignment}/*.ipynb")):
        student = notebook.parent.parent.name
        done = Path(root, WORK, "autograded", student, assignment).exists()
        if (only and student not in only) or (done and not force):
            continue  # nbgrader skips it too
        tasks.append((student, assignment, str(notebook), str(ahead / f"{student}.json"), seed,
                      secret, options, known(notebook.stem), limits))
    started = time.monotonic()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        for done, (student, error) in enumerate(pool.map(grade_ahead, tasks), 1):
            if error:
                stream.write(f"\n{student}: not graded ahead ({error}); nbgrader will say why\n")
            progress(done, len(tasks), f"grading on {jobs} cores", started, stream)
    graded = time.monotonic()
    status = record(root, assignment, ahead, nbgrader_args, len(tasks), stream)
    shutil.rmtree(ahead, ignore_errors=True)
    stream.write(f"{len(tasks)} submissions: graded in {graded - started:.1f} s on {jobs} "
                 f"processes, recorded by nbgrader in {time.monotonic() - graded:.1f} s\n")
    return status


def record(root: Path, assignment: str, ahead: Path, nbgrader_args: Sequence, total: int,
           stream: TextIO) -> int:
    """Run nbgrader autograde with the verdicts graded ahead; show its progress, pass on
    its warnings, errors and summary, and keep its whole log in .nbgrader/."""
    bin_dir = os.path.dirname(sys.executable)  # nbgrader calls `alembic` from PATH
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment,
               f"--GradeOutOfProcess.ahead={ahead}", *nbgrader_args]
    log_path = Path(root) / WORK / f"autograde-{assignment}.log"
    started, recorded = time.monotonic(), 0
    with subprocess.Popen(command, cwd=root, env=env, stderr=subprocess.PIPE, text=True,
                          stdout=subprocess.DEVNULL) as process, open(log_path, "w") as log:
        for line in process.stderr:
            log.write(line)
            if "] Sanitizing " in line:  # nbgrader starts on the next student
                recorded += 1
                progress(min(recorded, total), total, "recording with nbgrader", started, stream)
            elif any(word in line for word in ("WARNING", "ERROR", "[attncore]")) \
                    and "Directory not found. Creating" not in line:
                stream.write(("\n" if 0 < recorded < total else "") + line)
    stream.write(f"nbgrader's whole log: {log_path}\n")
    return process.returncode
