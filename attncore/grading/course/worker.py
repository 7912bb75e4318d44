"""The grading worker: a fresh interpreter that runs a notebook's code and calls its functions.

Started by course.runner (inside a sandbox, see course.sandbox) as
`python -m attncore.grading.course.worker IN_FD OUT_FD [ARENA_FD ARENA_BYTES]`, it answers
requests on its own pipe (course.wire frames), one at a time:

    {"op": "exec", "name": ..., "source": ...}      run one cell in the notebook's namespace
    {"op": "seal", "allowed": [...], "forbidden": [...]}   once the cells have run
    {"op": "call", "function": ..., "arguments": ..., "measure_memory": ..., "measured": ...,
     "stand_ins": [{"name": ..., "source": ..., "entry": ...}]}

A stand-in is a right answer in plain NumPy, sent by the grader, that takes the place of
the notebook's function of that name during the call (the function graded calls it).
measure_memory: the worker traces the call's allocations itself (only where the grader
cannot measure from outside); measured: the grader measures the call's memory from
outside, so the garbage collector leaves alone the objects made before it (gc.freeze),
whose pages a collection would touch.

It never receives an expected value and imports nothing of the grading engine. Before any
learner code it takes on its hard limits and a seccomp filter (course.seccomp): for the
rest of its life it can start no process, and the grader checks from /proc before each
call that every thread carries the filter. In a sandbox it sees the library as the
exercise allows it (course.sandbox: the modules the exercise forbids are left out); once
the cells have run, the seal trips every attncore function it still holds but those the
exercise allows (and what they call): they raise ForbiddenCall (observe.seal_library),
a second line that code in this process can reach, so the grader trusts nothing of it.
Arrays it is given live in the grader's arena (course.arena): the grader reads back what
the call left there, and measures the memory from outside, so nothing this process says
about either is believed. What it reports is the return value, an exception, and notes.
"""
import builtins
import contextlib
import gc
import os
import sys
import traceback
from collections.abc import Iterator

import numpy as np

try:
    import resource
except ImportError:  # not on Windows: there a runaway allocation is the OS's to stop
    resource = None

from ..observe import RoutedStream, captured_as_notes, guard_library, observe, seal_library, shorten
from . import seccomp, wire
from .arena import Arena

# Hard limits, set before any learner code runs: no code in this process can raise them.
HARD_LIMITS = {"RLIMIT_AS": 8 << 30, "RLIMIT_FSIZE": 256 << 20, "RLIMIT_CPU": 900,
               "RLIMIT_CORE": 0}
# counted per user: set only where the user is the sandbox's own (the worker is its PID 1)
SANDBOXED_LIMITS = {"RLIMIT_NPROC": 256}
LOAD_ERROR_LINES = 3  # lines of a cell shown under the error it raised when loaded


def main(in_fd: int, out_fd: int, arena_fd: int | None = None, arena_bytes: int = 0) -> None:
    _set_hard_limits()
    seccomp.install()  # the grader reads from /proc whether it took, before every call
    sys.stdout, sys.stderr = RoutedStream(sys.stdout), RoutedStream(sys.stderr)
    requests, replies = os.fdopen(in_fd, "rb"), os.fdopen(out_fd, "wb")
    arena = Arena.attach(arena_fd, arena_bytes) if arena_fd is not None else None
    namespace = _notebook_namespace()
    guard_library()
    wire.send(replies, {"ready": True})
    while (request := wire.receive(requests)) is not None:
        if request["op"] == "exec":
            reply = run_cell(namespace, request["name"], request["source"])
        elif request["op"] == "seal":
            reply = seal(request["allowed"], request["forbidden"])
        else:
            reply = call(namespace, request, arena)
        wire.send(replies, reply)


def seal(allowed: list[str] | None, forbidden: list[str]) -> dict:
    """For the rest of this process: attncore out of reach but for `allowed` (learner code
    that runs later, a hook or a thread, is held to it too)."""
    return {"tripped": len(seal_library(allowed, forbidden))}


def run_cell(namespace: dict, name: str, source: str) -> dict:
    """Execute one cell; report the exception it raised (if any) and its notes."""
    notes, raised = [], None
    with captured_as_notes(notes):
        try:
            exec(compile(_python_source(source), f"<cell {name}>", "exec"), namespace)
        except (Exception, SystemExit) as error:
            raised = _load_error(error, name, source)
    return {"raised": raised, "notes": notes}


def _load_error(error, name, source):
    """'ZeroDivisionError (line 1): division by zero', then the cell's lines the error
    passed through (at most LOAD_ERROR_LINES, the innermost last)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename == f"<cell {name}>"]
    line = f" (line {frames[-1].lineno})" if frames else ""
    lines = source.splitlines()
    where = [f"  line {f.lineno}: {shorten(lines[f.lineno - 1].strip())}"
             for f in frames[-LOAD_ERROR_LINES:] if 0 < f.lineno <= len(lines)]
    return "\n".join([f"{type(error).__name__}{line}: {shorten(error)}", *where])


def call(namespace: dict, request: dict, arena: Arena | None) -> dict:
    """Call the named function on the decoded arguments and report what happened."""
    function = namespace.get(request["function"])
    if not callable(function):
        return {"missing": "not defined" if function is None else
                f"defined, but as a {type(function).__name__}, not a function"}
    shared = arena.view if arena is not None else None
    arguments = {k: wire.decode(v, shared) for k, v in request["arguments"].items()}
    with standing_in(namespace, request.get("stand_ins", [])) as used, \
            _frozen(request.get("measured")):
        seen = observe(function, arguments, (), request["measure_memory"])
    return {"returned": wire.encode(seen["returned"]), "raised": seen["raised"],
            # lent by the arena, the grader reads them back there itself
            "arguments_after": wire.encode(seen["arguments_after"]) if shared is None else {},
            "shapes_after": {k: list(v.shape) for k, v in arguments.items()
                             if isinstance(v, np.ndarray)},  # x.shape = ... leaves the arena's bytes
            "peak_bytes": seen["peak_bytes"], "notes": list(seen["notes"]),
            "stood_in": sorted(used)}


@contextlib.contextmanager
def standing_in(namespace: dict, stand_ins: list[dict]) -> Iterator[set]:
    """While the block runs, each stand-in replaces the notebook's function of its name;
    yields the set of names whose stand-in was called."""
    used, saved = set(), {}
    for stand_in in stand_ins:
        name = stand_in["name"]
        defined = {"np": np, "__builtins__": builtins}
        exec(compile(stand_in["source"], f"<stand-in {name}>", "exec"), defined)
        saved[name] = namespace.get(name, _ABSENT)
        namespace[name] = _counted(defined[stand_in["entry"]], name, used)
    try:
        yield used
    finally:
        for name, value in saved.items():
            if value is _ABSENT:
                namespace.pop(name, None)
            else:
                namespace[name] = value


_ABSENT = object()


@contextlib.contextmanager
def _frozen(frozen):
    """While the block runs, when frozen: no garbage collection looks at older objects."""
    if frozen:
        gc.freeze()
    try:
        yield
    finally:
        if frozen:
            gc.unfreeze()


def _counted(function, name, used):
    def stand_in(*args, **kwargs):
        used.add(name)
        return function(*args, **kwargs)
    return stand_in


def _notebook_namespace():
    """The namespace the cells run in: an IPython shell's when IPython is installed, so
    that magics, get_ipython() and display() work as in a kernel; a plain module's
    otherwise. The shell keeps no history, so nothing is written to ~/.ipython."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
    except ImportError:
        return {"__name__": "__main__", "__builtins__": __builtins__}
    shell = InteractiveShell.instance(config=Config({"HistoryManager": {"enabled": False}}))
    shell.user_ns["__name__"] = "__main__"
    return shell.user_ns


def _python_source(source):
    """The cell as plain Python: IPython syntax (%magic, !shell) is translated when IPython
    is installed; without it such a line fails the cell like any other error."""
    if not any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return source
    return TransformerManager().transform_cell(source)


def _set_hard_limits():
    """Lower soft and hard limits together (never raise one the grader already set)."""
    if resource is None:
        return
    limits = {**HARD_LIMITS, **(SANDBOXED_LIMITS if os.getpid() == 1 else {})}
    for name, limit in limits.items():
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft, hard = resource.getrlimit(kind)
        value = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        try:
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):  # a limit this system does not let us set
            pass


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
