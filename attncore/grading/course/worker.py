"""The grading worker: a fresh interpreter that runs a notebook's code and calls its functions.

Started by course.runner as `python -m attncore.grading.course.worker IN_FD OUT_FD`, it
answers requests on its own pipe (course.wire frames), one at a time:

    {"op": "exec", "name": ..., "source": ...}      run one cell in the notebook's namespace
    {"op": "call", "function": ..., "arguments": ..., "forbidden": [...], "measure_memory": ...}

It never receives an expected value and imports nothing of the grading engine: what it
reports (the return value, an exception, peak memory, the arguments after the call, the
notes) is compared and diagnosed in the grader's process.
"""
import os
import sys
import traceback

try:
    import resource
except ImportError:  # not on Windows: there a runaway allocation is the OS's to stop
    resource = None

from ..observe import RoutedStream, captured_as_notes, observe, shorten
from . import wire

ADDRESS_SPACE_LIMIT = 8 << 30  # bytes: a runaway allocation raises MemoryError, not the OOM killer


def main(in_fd, out_fd):
    _limit_address_space()
    sys.stdout, sys.stderr = RoutedStream(sys.stdout), RoutedStream(sys.stderr)
    requests, replies = os.fdopen(in_fd, "rb"), os.fdopen(out_fd, "wb")
    namespace = _notebook_namespace()
    while (request := wire.receive(requests)) is not None:
        if request["op"] == "exec":
            reply = run_cell(namespace, request["name"], request["source"])
        else:
            reply = call(namespace, request)
        wire.send(replies, reply)


def run_cell(namespace, name, source):
    """Execute one cell; report the exception it raised (if any) and its notes."""
    notes, raised = [], None
    with captured_as_notes(notes):
        try:
            exec(compile(_python_source(source), f"<cell {name}>", "exec"), namespace)
        except (Exception, SystemExit) as error:
            frames = [f for f in traceback.extract_tb(error.__traceback__)
                      if f.filename == f"<cell {name}>"]
            line = f" (line {frames[-1].lineno})" if frames else ""
            raised = f"{type(error).__name__}{line}: {shorten(error)}"
    return {"raised": raised, "notes": notes}


def call(namespace, request):
    """Call the named function on the decoded arguments and report what happened."""
    function = namespace.get(request["function"])
    if not callable(function):
        return {"missing": "not defined" if function is None else
                f"defined, but as a {type(function).__name__}, not a function"}
    arguments = {k: wire.decode(v) for k, v in request["arguments"].items()}
    seen = observe(function, arguments, request["forbidden"], request["measure_memory"])
    return {"returned": wire.encode(seen["returned"]), "raised": seen["raised"],
            "arguments_after": wire.encode(seen["arguments_after"]),
            "peak_bytes": seen["peak_bytes"], "notes": list(seen["notes"])}


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


def _limit_address_space():
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > ADDRESS_SPACE_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, hard))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
