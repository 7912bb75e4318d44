"""Probes: run a learner's function on crafted inputs and name what went wrong.

A FunctionSpec holds, for one graded function, the reference implementation,
suites of input cases (ordered from the smallest input to the hardest) and the
catalogue of misconceptions. A misconception is recognised by its variants, wrong
implementations written as a learner with that mistake writes them (the learner's
output matches one on an input where it differs from the reference, or the learner's
function raises what a variant raises), or by an analytic detector that inspects the
output (the effective scale factor, the pattern of damage in the rows).
"""
import contextlib
import contextvars
import copy
import dataclasses
import enum
import os
from dataclasses import dataclass, field
from itertools import permutations
from typing import Callable

import numpy as np

from .feedback import message


# What the grader can say about any function, besides its own catalogue.
INPUT_MODIFIED = "input modified in place"
SHAPE_OR_DTYPE = "wrong output shape or dtype"
NAN_OR_INF = "NaN or inf in the output"
MATERIALISED = "the full (T_q, T_k) matrix materialised"
MATERIALISED_FIX = ("never build the (T_q, T_k) score matrix (no Q @ K.T on whole arrays): loop "
                    "over key tiles K[k0:k0 + block_size] (and query tiles), keep m, l and acc "
                    "per query row, and hold only one (block_size, block_size) tile of scores at "
                    "a time.")
MEMORY_UNMEASURED = "memory use could not be measured"
ROUNDED = "right values, rounded"
SCALED = "right values times a constant factor"
WRONG_ORDER = "results returned in the wrong order"
DID_NOT_FINISH = "did not finish"
NOT_WRITTEN = "not written yet"
FORBIDDEN = "called a function the exercise forbids"
GENERIC = (INPUT_MODIFIED, SHAPE_OR_DTYPE, NAN_OR_INF, MATERIALISED, MEMORY_UNMEASURED, ROUNDED,
           SCALED, WRONG_ORDER)
VISIBLE_SUITES = ("basic",)  # the cases a notebook shows; every other suite is hidden

STRICT_DETECTORS = "ATTNCORE_STRICT_DETECTORS"  # set to 1: a detector's error is raised

_DRAW = contextvars.ContextVar("draw", default=None)


def detector_errors():
    """Where a detector or an on_error runs: its exception is no verdict on the learner, so
    it is suppressed (the next misconception, or the generic feedback, speaks instead),
    unless the environment sets ATTNCORE_STRICT_DETECTORS=1, as the catalogue tests do, so
    that a broken detector fails a test instead of going unseen."""
    if os.environ.get(STRICT_DETECTORS) == "1":
        return contextlib.nullcontext()
    return contextlib.suppress(Exception)


def drawn_with():
    """The seed the hidden cases being made are drawn with, or None (the fixed cases)."""
    return _DRAW.get()


@contextlib.contextmanager
def drawing(seed):
    """While the block runs, cases are made with the draw `seed` (None: the fixed cases)."""
    token = _DRAW.set(seed)
    try:
        yield
    finally:
        _DRAW.reset(token)


@dataclass(frozen=True)
class Case:
    """One input: what it exercises, and a builder of fresh named arguments.

    make() returns the arguments as a dict in the function's parameter order (they are
    passed positionally). max_extra_bytes(arguments), when given, is the most the call may
    allocate at its peak: only such cases measure memory, on inputs small enough that
    measuring stays cheap even for pure-Python loops.
    """

    description: str
    make: Callable[[], dict]
    max_extra_bytes: Callable | None = None


@dataclass(frozen=True)
class Misconception:
    """A named mistake, how to recognise it, and how to fix it.

    variants: wrong implementations, with the graded function's parameters, as learners
    with this mistake write them; a variant returns None where it does not apply.
    detail: what to add when variant i matched: a string, one string per variant, or a
    function (arguments, i) -> string.
    detect(arguments, got, expected) -> detail string or None: an analytic detector, for
    mistakes that no short list of variants covers (a fitted scale, a damage pattern).
    on_error(arguments, error_type, error_message) -> detail string or None: recognises
    the mistake from what the learner's function raised, beyond what variants raise.
    finite: a variant whose output has no finite entry never matches (an all-inf result
    says "overflow", not which formula overflowed).
    close_too: detect also runs on an output within tolerance of the reference, for a
    promise the text makes beyond closeness (rows that sum to 1 within the slack).
    """

    name: str
    fix: str
    variants: tuple = ()
    detail: str | list | Callable = ""
    detect: Callable | None = None
    on_error: Callable | None = None
    finite: bool = False
    close_too: bool = False

    def recognise(self, arguments, got, expected, rtol=None):
        """A detail string when the learner's output shows this mistake, else None."""
        for index, variant in enumerate(self.variants):
            if _shows(variant, arguments, got, expected, rtol, self.finite):
                return self._detail(arguments, index)
        if self.detect is not None:
            with np.errstate(all="ignore"), detector_errors():
                return self.detect(copy.deepcopy(arguments), got, expected)
        return None

    def raises_alike(self, arguments, error_type, error_message):
        """A detail string when a variant raises exactly what the learner's function raised."""
        for index, variant in enumerate(self.variants):
            try:
                with np.errstate(all="ignore"):
                    variant(*copy.deepcopy(arguments).values())
            except Exception as wrong_error:
                if type(wrong_error).__name__ == error_type and str(wrong_error) == error_message:
                    return self._detail(arguments, index)
        return None

    def _detail(self, arguments, index):
        if callable(self.detail):
            return self.detail(arguments, index)
        return self.detail[index] if isinstance(self.detail, (list, tuple)) else self.detail


class ResultDtype(enum.Enum):
    """What a right result's dtype must be, beyond its values (the reference's dtype)."""

    ANY = "any"  # values only: 1.0 passes for 1, float64 for float32
    INPUT_FLOAT = "the input's float dtype"  # float32 in, float32 out
    EXACT_INT = "an exact integer"  # a count or an index, never a float equal to it


@dataclass(frozen=True)
class FunctionSpec:
    """Everything the grader knows about one function a learner writes."""

    name: str
    reference: Callable
    suites: dict
    misconceptions: list = field(default_factory=list)
    result_dtype: ResultDtype = ResultDtype.ANY
    forbidden: tuple = ()  # attncore functions the learner is asked to write, not call
    rtol: float | None = None
    # (arguments, peak_bytes, allowed) -> (headline, detail, fix): what a peak above the
    # allowed bytes held, from the sizes of the arrays the input implies; None: MATERIALISED
    memory: Callable | None = None
    # a right answer in plain NumPy (engine.stand_ins) that replaces the learner's function
    # while another function of the notebook that calls it is graded again
    stand_in: Callable | None = None


def tolerances(expected, rtol=None):
    """rtol, atol for comparing with the reference.

    Loose enough for any correct order of operations even when scores reach 1e4
    (their rounding errors, ~1e4 * d_k * eps, move the weights by that relative
    amount), tight enough that every catalogued mistake, which changes results
    by far more, is seen: rtol 1e-6 in float64 and 2e-3 in float32. atol is a
    twentieth of that, relative to the largest expected entry: an entry near 0 that
    is a difference of larger terms (a weighted sum of values of both signs, x - tau
    in sparsemax) carries a rounding error relative to those terms, not to itself,
    and inputs drawn at grading time land on such entries by chance.
    """
    dtype = expected.dtype if np.issubdtype(expected.dtype, np.floating) else np.float64
    loose = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3}.get(np.dtype(dtype), 1e-6)
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0))
    rtol = rtol if rtol is not None else loose
    return rtol, loose * 0.05 * scale


def several(expected):
    """Is expected a tuple of results with different shapes, such as (output, weights)?"""
    return isinstance(expected, tuple) and len({np.shape(v) for v in expected}) > 1


def same(a, b, rtol=None):
    """a and b have one shape and agree within tolerance (NaN matches NaN); when b is
    several results, a must be as many, each agreeing with its counterpart."""
    if several(b):
        return isinstance(a, (tuple, list)) and len(a) == len(b) and all(
            same(x, y, rtol) for x, y in zip(a, b))
    try:
        a, b = np.asarray(a), np.asarray(b)
    except Exception:  # a ragged or odd return value
        return False
    if a.shape != b.shape:
        return False
    if a.dtype == bool or b.dtype == bool or not np.issubdtype(b.dtype, np.number):
        return a.dtype == b.dtype and np.array_equal(a, b)
    if not np.issubdtype(a.dtype, np.number):
        return False
    rtol, atol = tolerances(b, rtol)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


@dataclass(frozen=True)
class Outcome:
    """What happened when the learner's function was called on one case.

    returned: the return value; raised: (exception type name, message) or None;
    arguments_after: the arguments as they were after the call; peak_bytes: the peak of
    allocations during the call (None when not measured or when measuring failed);
    notes: what the code printed or warned (never a mistake in itself); stopped: why the
    call never finished (a time limit, the process ended), or None; stood_in: the graded
    functions whose stand-in the call used in place of the learner's.
    """

    returned: object = None
    raised: tuple | None = None
    arguments_after: dict = field(default_factory=dict)
    peak_bytes: int | None = None
    notes: tuple = ()
    stopped: str | None = None
    stood_in: tuple = ()


@dataclass(frozen=True)
class Verdict:
    """The result of one suite: passed, the feedback when not, and the notes on the way."""

    passed: bool
    message: str = ""
    notes: tuple = ()
    misconception: str = ""  # what the message's first line names: a mistake, or what went wrong


def run_suite(spec, suite, call, seed=None):
    """Run suite `suite` of spec's cases, smallest first, and stop at the first mistake.

    call(arguments, measure_memory) runs the learner's function on the arguments (a dict in
    parameter order) wherever it lives and returns an Outcome. The expected values and
    the diagnosis stay here, in the caller's process. seed: when given, the random inputs
    of a hidden suite are drawn from it (so no table of fixed cases can answer them);
    visible suites keep their fixed cases.
    """
    notes = []
    for case in spec.suites[suite]:
        with drawing(None if suite in VISIBLE_SUITES else seed):
            arguments = case.make()
        expected = spec.reference(*copy.deepcopy(arguments).values())
        outcome = call(copy.deepcopy(arguments), case.max_extra_bytes is not None)
        notes += [note for note in dict.fromkeys(outcome.notes) if note not in notes]
        failure = _failure(spec, case, arguments, outcome, expected)
        if failure is not None:
            headline, text = failure
            return Verdict(False, text, tuple(notes), headline)
    return Verdict(True, "", tuple(notes))


def _failure(spec, case, pristine, outcome, expected):
    """(headline, learner-facing message) for the first problem of this case, or None; the
    headline is what the message's first line names (a misconception, or what went wrong)."""
    if outcome.stopped is not None:
        return DID_NOT_FINISH, message(
            spec.name, DID_NOT_FINISH, case.description, pristine, detail=outcome.stopped,
            show_values=False, fix="run it on the input above in a cell of your own: look for a "
                                   "loop that never ends, or code that stops the interpreter.")
    if outcome.raised is not None:
        return _raised(spec, case, pristine, *outcome.raised)
    failure = _diagnose(spec, case, pristine, outcome, expected)
    if failure is None:
        return None
    headline, detail, fix = failure
    return headline, message(spec.name, headline, case.description, pristine, outcome.returned,
                             expected, detail, fix)


def _raised(spec, case, pristine, error_type, error_message):
    """(headline, message) of a call that raised."""
    if error_type == "NotImplementedError":
        return NOT_WRITTEN, (f"{spec.name}: {NOT_WRITTEN}. Replace `raise NotImplementedError()` "
                             f"with your code.")
    if error_type == "ForbiddenCall":
        return FORBIDDEN, (f"{spec.name}: you called {error_message}, which this exercise does not "
                           f"allow (it is what you are asked to write, or it would do the work for "
                           f"you). Use NumPy and the helpers the exercise allows instead.")
    named, detail = recognise_error(spec, pristine, error_type, error_message)
    raised = f"your function raised {error_type}: {error_message}"
    detail = "\n".join(filter(None, [raised, detail])) if named else ""
    headline = named.name if named else raised
    return (named.name if named else f"raised {error_type}"), message(
        spec.name, headline, case.description, pristine, detail=detail, show_values=False,
        fix=named.fix if named else "run it on the input above in a cell of your own and read "
                                    "the traceback.")


def recognise_error(spec, arguments, error_type, error_message):
    """(misconception, detail) that explains an error, or (None, "").

    A variant that raises exactly the same error names its mistake when it is the only
    one that does; otherwise the first misconception whose on_error recognises it.
    """
    alike = [(m, d) for m in spec.misconceptions
             for d in [m.raises_alike(arguments, error_type, error_message)] if d is not None]
    if len(alike) == 1:
        return alike[0]
    for misconception in spec.misconceptions:
        if misconception.on_error is not None:
            with detector_errors():
                detail = misconception.on_error(arguments, error_type, error_message)
                if detail is not None:
                    return misconception, detail
    return None, ""


def _diagnose(spec, case, pristine, outcome, expected):
    """(headline, detail, fix) for the first problem found in a returned value, or None.

    In order: inputs modified, nothing returned, right values in the wrong dtype, too much
    memory, then the catalogue of misconceptions, then a generic description.
    """
    got = outcome.returned
    modified = [part for name in pristine
                for part in _modified(name, pristine[name], outcome.arguments_after.get(name))]
    if modified:
        return (INPUT_MODIFIED,
                f"After the call, {', '.join(modified)} no longer held what was passed in.",
                "work on a copy (x = x.copy(), or x = x - m instead of x -= m); the caller's "
                "arrays must be left as they were.")
    if got is None:
        return ("returned None", "", "end your function with `return` and the result.")
    correct = same(got, expected, spec.rtol)
    if correct and spec.result_dtype is not ResultDtype.ANY \
            and np.asarray(got).dtype != np.asarray(expected).dtype:
        return (SHAPE_OR_DTYPE,
                f"The values are right but the dtype is {np.asarray(got).dtype}, "
                f"not {np.asarray(expected).dtype}.",
                "return an exact integer: use integer operations only (*, //; no /, no float "
                "factors), or finish with int(...)." if spec.result_dtype is ResultDtype.EXACT_INT
                else "compute in the input's dtype (avoid np.float64 constants or arrays), "
                     "or finish with .astype(x.dtype).")
    if correct and case.max_extra_bytes is not None:
        allowed = case.max_extra_bytes(pristine)
        if outcome.peak_bytes is None:
            return (MEMORY_UNMEASURED,
                    "The process running your code sent no measurement of the memory your "
                    "function used, so this test cannot pass.",
                    "leave the grader's modules in that process alone (your own calls of "
                    "tracemalloc are fine: they cannot change what the grader measures).")
        if outcome.peak_bytes > allowed:
            held = spec.memory(pristine, outcome.peak_bytes, allowed) if spec.memory else None
            if held is not None:
                return held
            return (MATERIALISED,
                    f"Your function allocated {outcome.peak_bytes / 1e6:.2f} MB at its peak; "
                    f"a tiled version needs at most {allowed / 1e6:.2f} MB here.",
                    MATERIALISED_FIX)
    if correct:
        for misconception in spec.misconceptions:
            if misconception.close_too and misconception.detect is not None:
                with np.errstate(all="ignore"), detector_errors():
                    detail = misconception.detect(copy.deepcopy(pristine), got, expected)
                    if detail is not None:
                        return misconception.name, detail, misconception.fix
        return None
    for misconception in spec.misconceptions:
        detail = misconception.recognise(pristine, got, expected, spec.rtol)
        if detail is not None:
            return misconception.name, detail, misconception.fix
    return _generic(got, expected)


def _shows(variant, arguments, got, expected, rtol=None, finite=False):
    """Does got equal variant(*arguments), on an input where that differs from expected?"""
    try:
        with np.errstate(all="ignore"):
            output = variant(*copy.deepcopy(arguments).values())
            if output is None or (finite and not np.isfinite(np.asarray(output, float)).any()):
                return False
    except Exception:  # this wrong implementation cannot even run on the input
        return False
    return same(got, output, rtol) and not same(expected, output, rtol)


def _generic(got, expected):
    """What is wrong when no catalogued misconception explains it."""
    if several(expected):
        return _generic_several(got, expected)
    if not isinstance(got, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return (SHAPE_OR_DTYPE, f"Your function returned {got!r}; the expected result is "
                                f"{_kind(np.asarray(expected))}.",
                "return a NumPy array of numbers (or booleans, where the exercise says so).")
    got_array, expected = np.asarray(got), np.asarray(expected)
    if got_array.shape != expected.shape:
        return (SHAPE_OR_DTYPE,
                f"Your result has shape {got_array.shape}; the expected shape is {expected.shape}.",
                "check which axes your products and reductions run over.")
    if np.issubdtype(got_array.dtype, np.number) and not np.all(np.isfinite(got_array)):
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(got_array))[0])
        return (NAN_OR_INF,
                f"Entry {where} is {got_array[where]}; the expected value is {expected[where]}.",
                "look for exp of a large number (overflow), 0/0 (a row with nothing to "
                "normalise), or inf - inf.")
    if got_array.dtype != expected.dtype and (got_array.dtype == bool or expected.dtype == bool):
        return (SHAPE_OR_DTYPE,
                f"Your result has dtype {got_array.dtype}; expected {expected.dtype}.",
                "return a boolean array (True = may attend)." if expected.dtype == bool else "")
    if np.issubdtype(got_array.dtype, np.number) and np.issubdtype(expected.dtype, np.floating):
        near = _rounded(got_array, expected) or _scaled(got_array, expected)
        if near is not None:
            return near
    differ = np.argwhere(~np.isclose(got_array, expected, equal_nan=True)) if np.issubdtype(
        got_array.dtype, np.number) else np.argwhere(got_array != expected)
    where = tuple(int(i) for i in differ[0]) if len(differ) else ()
    at = f" First difference at index {where}: got {got_array[where]}, expected {expected[where]}." if where else ""
    return ("wrong values", f"No known mistake matches exactly.{at}",
            "compare your steps with the definition in the exercise text on this small input.")


def _rounded(got, expected):
    """ROUNDED when got is expected rounded to 0-8 decimals (and differs from it), else None:
    every entry on the grid of that many decimals, within half a step of the expected one
    (up to the rounding of got's dtype)."""
    eps = np.finfo(got.dtype).eps if np.issubdtype(got.dtype, np.floating) else 0.0
    values, reference = got.astype(np.float64), expected.astype(np.float64)
    for decimals in range(9):
        steps = values * 10.0 ** decimals
        slack = 4 * eps * np.abs(steps).max(initial=1.0) + 1e-9
        on_grid = np.allclose(steps, np.round(steps), rtol=0, atol=slack)
        near = np.all(np.abs(values - reference) <= 0.5 * 10.0 ** -decimals
                      + 4 * eps * np.abs(reference).max(initial=1.0))
        if on_grid and near:
            return (ROUNDED, f"Your values are the expected ones rounded to {decimals} decimals.",
                    "return the values as computed: rounding (np.round, round, a format) is for "
                    "printing only.")
    return None


def _scaled(got, expected):
    """SCALED when got = c * expected for one number c other than 1, else None."""
    flat, ref = got.astype(np.float64).ravel(), expected.astype(np.float64).ravel()
    if not ref.any() or not np.all(np.isfinite(flat)) or not np.all(np.isfinite(ref)):
        return None
    c = float(ref @ flat / (ref @ ref))
    if np.isclose(c, 1) or not np.allclose(flat, c * ref, rtol=1e-6, atol=1e-9 * np.abs(ref).max()):
        return None
    return (SCALED, f"Your result is the expected one times {c:.6g} (1/{1 / c:.6g}): every entry "
                    f"by the same factor.",
            "look for a division or multiplication too many (by a size such as T_k, d_k or "
            "sqrt(d_k)) applied to the whole result.")


def _kind(array):
    return f"an array of shape {array.shape} and dtype {array.dtype}"


def _generic_several(got, expected):
    """_generic for a function that returns several results: the first one that differs."""
    shapes = ", ".join(f"an array of shape {np.shape(e)}" for e in expected)
    if not isinstance(got, (tuple, list)) or len(got) != len(expected):
        kind = f"an array of shape {got.shape}" if isinstance(got, np.ndarray) else \
            f"a {type(got).__name__}" + (f" of {len(got)}" if isinstance(got, (tuple, list)) else "")
        return (SHAPE_OR_DTYPE,
                f"Your function returned {kind}; the expected result is a tuple of "
                f"{len(expected)}: {shapes}.",
                f"return all {len(expected)} results, in the order the exercise gives "
                f"(return first, second).")
    order = _reordered(got, expected)
    if order is not None:
        return (WRONG_ORDER, f"Your function returned the right results in the order {order}; "
                             f"the exercise asks for them in the order 0, ..., {len(expected) - 1}.",
                "return them in the order the exercise gives (return first, second).")
    for index, (mine, theirs) in enumerate(zip(got, expected)):
        if not same(mine, theirs):
            headline, detail, fix = _generic(mine, theirs)
            return headline, f"Result {index} of the tuple you returned: {detail}", fix
    return ("wrong values", "No known mistake matches exactly.", "")


def _reordered(got, expected):
    """The order of expected's results in got when got holds them all, reordered, else None."""
    for order in permutations(range(len(expected))):
        if list(order) != sorted(order) and all(
                same(got[i], expected[j]) for i, j in enumerate(order)):
            return ", ".join(map(str, order))
    return None


def _modified(name, before, after):
    """The parts of argument `name` the call changed: name itself for an array, name.W_q for
    a field of the weights of a layer (any dataclass), name[i] for an item of a list, tuple
    or dict; [] if none. Other values (numbers, strings, functions) cannot change here."""
    if isinstance(before, np.ndarray):
        same = isinstance(after, np.ndarray) and before.shape == after.shape and np.array_equal(
            before, after, equal_nan=True)
        return [] if same else [name]
    if dataclasses.is_dataclass(before) and not isinstance(before, type):
        if type(after) is not type(before):
            return [name]
        return [part for f in dataclasses.fields(before)
                for part in _modified(f"{name}.{f.name}", getattr(before, f.name), getattr(after, f.name))]
    if isinstance(before, (list, tuple)):
        if type(after) is not type(before) or len(after) != len(before):
            return [name]
        return [part for i, (b, a) in enumerate(zip(before, after)) for part in _modified(f"{name}[{i}]", b, a)]
    if isinstance(before, dict):
        if not isinstance(after, dict) or after.keys() != before.keys():
            return [name]
        return [part for key, b in before.items() for part in _modified(f"{name}[{key!r}]", b, after[key])]
    return []
