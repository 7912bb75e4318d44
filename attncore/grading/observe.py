"""Call a learner's function once and record what happened.

Used where the learner's code lives: in the grading worker (the grade that counts) and
in the learner's own kernel (quick feedback). It imports nothing of the grading engine,
so the process that runs learner code holds no expected values and no grader state.

While the function runs:
- the attncore functions it is asked to write (or that would do the work) raise
  ForbiddenCall however they are reached (an alias, a default argument, sys.modules):
  their code is swapped for the call, and guard_library keeps learner code from
  copying that code or re-running attncore's modules to get fresh copies. The swap is
  process-wide, not per thread: a thread the learner's code started sees the tripwires
  too. The grading worker goes further (seal_library): once a notebook's cells have run,
  every attncore function but those the exercise allows raises ForbiddenCall for good,
  so what an exercise forbids is what it computes, not a list of names;
- warnings are recorded and printed output is captured: both become notes, never
  mistakes (a RuntimeWarning from log(0) is how the additive-mask idiom works);
- allocations are traced with tracemalloc when memory is measured; the function's own
  calls of tracemalloc see a view of their own and cannot change the peak measured.
"""
import _tracemalloc
import contextlib
import io
import sys
import tracemalloc
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

MAX_NOTE_CHARS = 300
_LIBRARY = {}  # "masks.causal" -> (the function, its own code), as attncore defined them
_READ = {"modules": None, "reached": {}}  # the modules _LIBRARY was read from; trip's answers for them
_SEALED = {"folder": None}  # attncore's folder, once seal_library ran: its code runs no more


class ForbiddenCall(Exception):
    """The learner's function called an attncore function the exercise does not allow."""


def observe(function: Callable, arguments: dict, forbidden: Iterable[str] = (),
            measure_memory: bool = False) -> dict:
    """Call function(*arguments.values()); return a dict with the fields of engine.Outcome.

    arguments: a dict in parameter order, which the call may modify (they are reported back
    as arguments_after). forbidden: names of attncore attributes, dotted for submodules
    ("masks.causal").
    """
    notes = []
    returned, raised = None, None
    with captured_as_notes(notes), _tripwires(forbidden), \
            _peak_memory(measure_memory, function) as peak:
        try:
            returned = function(*arguments.values())
        except (Exception, SystemExit) as error:
            raised = (type(error).__name__, str(error))
    return {"returned": returned, "raised": raised, "arguments_after": arguments,
            "peak_bytes": peak(), "notes": tuple(notes)}


def shorten(text: object, limit: int = MAX_NOTE_CHARS) -> str:
    """One line of at most limit characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


class RoutedStream(io.TextIOBase):
    """A text stream that writes wherever it currently points.

    The worker installs one as sys.stdout and one as sys.stderr, so that whatever holds on
    to them (a logging handler made in an earlier cell, say) writes into the capture of the
    call that is running, not into a buffer read long ago.
    """

    def __init__(self, original: io.TextIOBase) -> None:
        self.original = self.target = original

    def write(self, text: str) -> int:
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()

    def writable(self) -> bool:
        return True


@contextlib.contextmanager
def captured_as_notes(notes: list) -> Iterator[None]:
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


def library_functions() -> dict[str, tuple]:
    """{name: (function, its code)} for attncore's functions as tripwires name them
    ("softmax", "masks.causal"), from every attncore module loaded so far. The modules are
    read again only when one was loaded or gained a name since the last read."""
    import attncore
    import attncore.bert  # noqa: F401  (the real-model exercise forbids its functions)

    modules = [(name, module) for name, module in list(sys.modules.items())
               if name.startswith("attncore.") and not name.startswith("attncore.grading")
               and not vars(module).get("__left_out__")]  # a sandbox's stand-in (course.left_out)
    read = (len(vars(attncore)), *((name, id(module), len(vars(module))) for name, module in modules))
    if read == _READ["modules"]:
        return _LIBRARY
    known = {id(function): code for function, code in _LIBRARY.values()}
    for module_name, module in modules:
        prefix = module_name.removeprefix("attncore.")
        for name, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and value.__module__ == module_name \
                    and value.__closure__ is None:
                if id(value) not in known:  # read once: a tripped function keeps its own
                    known[id(value)] = value.__code__
                for key in (f"{prefix}.{name}", *[name] * (getattr(attncore, name, None) is value)):
                    _LIBRARY.setdefault(key, (value, known[id(value)]))
    _READ.update(modules=read, reached={})
    return _LIBRARY


def guard_library() -> None:
    """From now on, for good (an audit hook cannot be removed): attncore's functions cannot
    be read for their code, their code (however it was reached: gc.get_referents too)
    cannot be put into new functions, given to another or run by exec, and its modules
    cannot be run again (importlib.reload, a fresh spec of the same file), so that no fresh
    copy side-steps a tripwire. (Pasting the library's source is copying, which no check
    in the process can tell from writing the code.)"""
    functions = library_functions().values()
    protected = {id(f) for f, _ in functions}
    codes = {id(code) for _, code in functions}
    bytecodes = {code.co_code for _, code in functions}
    loaded = {module.__file__ for name, module in list(sys.modules.items())
              if name.startswith("attncore") and getattr(module, "__file__", None)}

    def hook(event, args):
        if event == "object.__getattr__" and args[1] == "__code__" and id(args[0]) in protected \
                or event == "function.__new__" and id(args[0]) in codes \
                or event == "object.__setattr__" and args[1] == "__code__" and id(args[2]) in codes \
                or event == "exec" and id(args[0]) in codes \
                or event == "code.__new__" and args[0] in bytecodes \
                or event == "exec" and getattr(args[0], "co_name", None) == "<module>" \
                and (args[0].co_filename in loaded or _sealed_away(args[0].co_filename)):
            raise PermissionError(f"{event}: attncore's own code cannot be read, copied or run "
                                  f"again while your code is graded")

    sys.addaudithook(hook)


def seal_library(allowed: Iterable[str] | None, forbidden: Iterable[str] = ()) -> list[str]:
    """For good: every attncore function of every module loaded (public or private; the
    grading package aside) raises ForbiddenCall, but those named in allowed ("softmax",
    "invariants.default_atol", "feature_maps.*" for a whole module; None: every public
    one) and what they call, so that an allowed function still works; the forbidden names
    raise in any case; and no attncore module that is not loaded yet can be loaded, by
    import or by running its file. Returns the names of the functions tripped."""
    import attncore

    library = library_functions()
    keep = {library[name][0] for name in library if _allowed(name, allowed)}
    banned = {library[name][0] for name in forbidden if name in library}
    code_of = {id(function): code for function, code in library.values()}
    kept = {id(function) for function in _reach(keep - banned, code_of, stop=banned)}
    names = {}  # a function's shortest name: how its refusal names it
    for key, (function, _) in library.items():
        if id(function) not in kept:
            names.setdefault(id(function), []).append(key)
    for keys in names.values():
        name = min(keys, key=lambda key: (key.count("."), key))
        library[name][0].__code__ = _refusal_code(name)
    _SEALED["folder"] = str(Path(attncore.__file__).resolve().parent)
    sys.meta_path.insert(0, _NoNewModules())
    return sorted(key for keys in names.values() for key in keys)


def _allowed(name, allowed):
    module, _, function = name.rpartition(".")
    if allowed is None:
        return not function.startswith("_")
    return name in allowed or bool(module) and f"{module}.*" in allowed


def _sealed_away(filename):
    """Whether filename is attncore's own code (not the grading package's), once sealed."""
    folder = _SEALED["folder"]
    return folder is not None and str(filename).startswith(folder + "/") \
        and not str(filename).startswith(folder + "/grading/")


class _NoNewModules:
    """A finder, first on sys.meta_path once sealed: an attncore module not loaded yet
    cannot be imported (its functions were never tripped)."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "attncore" and not name.startswith("attncore.grading"):
            raise ForbiddenCall(f"import {name}")
        return None


def trip(names: Iterable[str]) -> list[str]:
    """From now on, the named attncore functions ("softmax", "masks.causal") raise
    ForbiddenCall wherever they are held (their code is swapped for a refusal), and so do
    the attncore functions that only they reach (a private core such as the softmax's),
    so that no helper of a forbidden function does its work in its place. Returns the
    names of every function tripped, for untrip."""
    library = library_functions()
    key = tuple(sorted(names))
    if key not in _READ["reached"]:  # the same answer while the library is unchanged
        _READ["reached"][key] = _reached_only_by(names, library)
    tripped = _READ["reached"][key]
    for name in tripped:
        library[name][0].__code__ = _refusal_code(name)
    return tripped


def untrip(names: Iterable[str]) -> None:
    """Give the named functions their own code back."""
    library = library_functions()
    for name in names:
        function, code = library[name]
        function.__code__ = code


@contextlib.contextmanager
def _tripwires(names):
    """While the block runs, the named attncore functions raise ForbiddenCall."""
    tripped = trip(names)
    try:
        yield
    finally:
        untrip(tripped)


def _reached_only_by(names, library):
    """The names of the functions in names, and of the attncore functions they call
    (directly or not) that no other public attncore function calls (library: library_functions())."""
    key_of = {library[name][0]: name for name in names}  # a refusal says the name forbidden
    for key, (function, _) in library.items():
        key_of.setdefault(function, key)
    forbidden = {library[name][0] for name in names}
    allowed = {function for key, (function, _) in library.items()
               if not key.rpartition(".")[2].startswith("_") and function not in forbidden}
    code_of = {id(function): code for function, code in library.values()}
    reached = (_reach(forbidden, code_of) - _reach(allowed, code_of, stop=forbidden)) | forbidden
    return sorted({key_of[function] for function in reached})


def _reach(roots, code_of, stop=()):
    """roots and every attncore function their code names, transitively (not through the
    functions in stop); code_of: {id(function): its own code} of attncore's functions."""
    stopped = {id(function) for function in stop}
    seen, todo = {}, list(roots)
    while todo:
        function = todo.pop()
        if id(function) in seen or id(function) in stopped:
            continue
        seen[id(function)] = function
        names = _names(code_of[id(function)])
        for name in names:
            value = function.__globals__.get(name)
            if isinstance(value, types.ModuleType) and value.__name__.startswith("attncore"):
                todo += [getattr(value, attribute, None) for attribute in names]
            else:
                todo.append(value)
        todo = [target for target in todo if id(target) in code_of]
    return set(seen.values())


def _names(code):
    """Every global or attribute name a code object and its nested code objects use."""
    return set(code.co_names).union(*(_names(const) for const in code.co_consts
                                      if isinstance(const, types.CodeType)))


def _refusal(*args, **kwargs):
    raise __import__("attncore.grading.observe", fromlist=["ForbiddenCall"]).ForbiddenCall(
        "attncore.NAME")


def _refusal_code(name):
    """Code that raises ForbiddenCall(attncore.<name>), with no free variables, so that it
    can stand in for any function's code."""
    code = _refusal.__code__
    return code.replace(co_consts=tuple(f"attncore.{name}" if c == "attncore.NAME" else c
                                        for c in code.co_consts))


@contextlib.contextmanager
def _replaced(replacements, function):
    """While the block runs, owner.name is replaced for every (owner, name): replacement, and
    so is every global of the function's module that holds what owner.name held (the
    tracemalloc controls, which are builtins and cannot have their code swapped)."""
    originals = {target: getattr(*target) for target in replacements}
    namespace = getattr(function, "__globals__", {})
    aliases = {key: replacements[target] for key, value in list(namespace.items())
               for target, original in originals.items() if value is original}
    saved = {key: namespace[key] for key in aliases}
    try:
        for target, replacement in replacements.items():
            setattr(*target, replacement)
        namespace.update(aliases)
        yield
    finally:
        for target, original in originals.items():
            setattr(*target, original)
        namespace.update(saved)


# The tracemalloc calls that would change what the grader measures if the learner's code
# made them for real (it may: to print its own peak, say).
CONTROLS = ("start", "stop", "is_tracing", "get_traced_memory", "reset_peak", "clear_traces")
_REAL = {name: getattr(_tracemalloc, name) for name in CONTROLS}


class _LearnersTracemalloc:
    """tracemalloc as the learner's code sees it while the grader traces the call.

    The grader's tracing goes on underneath: stop only ends the learner's view, start and
    clear_traces begin a new one at the memory traced now, and reset_peak resets the
    learner's peak after the grader has kept the peak so far.
    """

    def __init__(self, tracing):
        self.tracing = tracing  # whether the learner's code sees tracemalloc on
        self.offset = 0  # traced memory when the learner's view began
        self.kept_peak = 0  # the highest peak before the last real reset_peak

    def keep_peak_and_reset(self):
        self.kept_peak = max(self.kept_peak, _REAL["get_traced_memory"]()[1])
        _REAL["reset_peak"]()

    def peak(self):
        """The highest traced memory since the grader's reset, whatever the learner did."""
        return max(self.kept_peak, _REAL["get_traced_memory"]()[1])

    def start(self, nframe=1):
        if not self.tracing:
            self.tracing = True
            self.clear_traces()

    def stop(self):
        self.tracing = False

    def is_tracing(self):
        return self.tracing

    def get_traced_memory(self):
        if not self.tracing:
            return 0, 0
        current, peak = _REAL["get_traced_memory"]()
        return max(0, current - self.offset), max(0, peak - self.offset)

    def reset_peak(self):
        if self.tracing:
            self.keep_peak_and_reset()

    def clear_traces(self):
        if self.tracing:
            self.keep_peak_and_reset()
            self.offset = _REAL["get_traced_memory"]()[0]


@contextlib.contextmanager
def _peak_memory(enabled, function):
    """Yield a function giving the peak of traced allocations during the block (0 when not
    enabled). While it runs, the function's calls of tracemalloc (through tracemalloc,
    _tracemalloc or names it imported from them) go to a _LearnersTracemalloc, so that no
    call the learner's code makes can lower the peak measured."""
    if not enabled:
        yield lambda: 0
        return
    already = _REAL["is_tracing"]()
    if not already:
        _REAL["start"]()
    _REAL["reset_peak"]()
    baseline = _REAL["get_traced_memory"]()[0]
    view = _LearnersTracemalloc(tracing=already)
    result = {"peak": None}
    try:
        with _replaced({(module, name): getattr(view, name)
                        for module in (tracemalloc, _tracemalloc) for name in CONTROLS}, function):
            yield lambda: result["peak"]
    finally:
        result["peak"] = max(0, view.peak() - baseline)
        if not already:
            _REAL["stop"]()
