"""Call a learner's function once and record what happened.

Used where the learner's code lives: in the grading worker (the grade that counts) and
in the learner's own kernel (quick feedback). It imports nothing of the grading engine,
so the process that runs learner code holds no expected values and no grader state.

While the function runs:
- the attncore functions it is asked to write (or that would do the work) raise
  ForbiddenCall, in attncore and wherever the learner's module holds a copy;
- warnings are recorded and printed output is captured: both become notes, never
  mistakes (a RuntimeWarning from log(0) is how the additive-mask idiom works);
- allocations are traced with tracemalloc when memory is measured.
"""
import contextlib
import io
import sys
import tracemalloc
import warnings

MAX_NOTE_CHARS = 300


class ForbiddenCall(Exception):
    """The learner's function called an attncore function the exercise does not allow."""


def observe(function, arguments, forbidden=(), measure_memory=False):
    """Call function(*arguments.values()); return a dict with the fields of engine.Outcome.

    arguments: a dict in parameter order, which the call may modify (they are reported back
    as arguments_after). forbidden: names of attncore attributes, dotted for submodules
    ("masks.causal").
    """
    notes = []
    returned, raised = None, None
    with captured_as_notes(notes), _tripwires(forbidden, function), \
            _peak_memory(measure_memory) as peak:
        try:
            returned = function(*arguments.values())
        except (Exception, SystemExit) as error:
            raised = (type(error).__name__, str(error))
    return {"returned": returned, "raised": raised, "arguments_after": arguments,
            "peak_bytes": peak(), "notes": tuple(notes)}


def shorten(text, limit=MAX_NOTE_CHARS):
    """One line of at most limit characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class RoutedStream(io.TextIOBase):
    """A text stream that writes wherever it currently points.

    The worker installs one as sys.stdout and one as sys.stderr, so that whatever holds on
    to them (a logging handler made in an earlier cell, say) writes into the capture of the
    call that is running, not into a buffer read long ago.
    """

    def __init__(self, original):
        self.original = self.target = original

    def write(self, text):
        return self.target.write(text)

    def flush(self):
        self.target.flush()

    def writable(self):
        return True


@contextlib.contextmanager
def captured_as_notes(notes):
    """Record warnings and captured stdout/stderr as notes for the learner."""
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, _routed_to(out, err):
        warnings.simplefilter("always")
        try:
            yield
        finally:
            seen = []
            for warning in caught:
                text = f"{warning.category.__name__}: {warning.message}"
                if text not in seen:
                    seen.append(text)
            notes += [f"your code issued a {shorten(text)} (not a mistake in itself; it costs "
                      f"no points)" for text in seen]
            for stream, name in ((out, "stdout"), (err, "stderr")):
                if stream.getvalue().strip():
                    notes.append(f"your code printed to {name}: "
                                 f"{shorten(stream.getvalue())!r} (this costs no points)")


@contextlib.contextmanager
def _routed_to(out, err):
    """Send stdout and stderr to out and err while the block runs."""
    if not (isinstance(sys.stdout, RoutedStream) and isinstance(sys.stderr, RoutedStream)):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
        return
    routed = (sys.stdout, sys.stderr)
    sys.stdout.target, sys.stderr.target = out, err
    try:
        yield
    finally:
        for stream in routed:
            stream.target = stream.original


@contextlib.contextmanager
def _tripwires(names, function):
    """While the block runs, attncore.<name> and the function's global copies raise."""
    import attncore

    def owner_and_attribute(name):
        *path, attribute = name.split(".")
        owner = attncore
        for part in path:
            owner = getattr(owner, part)
        return owner, attribute

    def tripwire(name):
        def refuse(*args, **kwargs):
            raise ForbiddenCall(f"attncore.{name}")
        return refuse

    originals = {name: getattr(*owner_and_attribute(name)) for name in names}
    namespace = getattr(function, "__globals__", {})
    aliases = {key: name for key, value in list(namespace.items())
               for name, original in originals.items() if value is original}
    try:
        for name in names:
            setattr(*owner_and_attribute(name), tripwire(name))
        for key, name in aliases.items():
            namespace[key] = tripwire(name)
        yield
    finally:
        for name, original in originals.items():
            setattr(*owner_and_attribute(name), original)
        for key, name in aliases.items():
            namespace[key] = originals[name]


@contextlib.contextmanager
def _peak_memory(enabled):
    """Yield a function giving the peak of traced allocations during the block (0 when not
    enabled, None when the traced code stopped tracing)."""
    if not enabled:
        yield lambda: 0
        return
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    result = {"peak": None}
    try:
        yield lambda: result["peak"]
    finally:
        if tracemalloc.is_tracing():
            result["peak"] = max(0, tracemalloc.get_traced_memory()[1] - baseline)
            if not already:
                tracemalloc.stop()
