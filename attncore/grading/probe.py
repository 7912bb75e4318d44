"""Probes: run a learner's function on crafted inputs and name what went wrong.

A FunctionSpec holds, for one graded function, the reference implementation,
suites of input cases (ordered from the smallest input to the hardest) and the
catalogue of misconceptions. A misconception is recognised either by a wrong
implementation written as a learner would write it (the learner's output
matches it on an input where it differs from the reference) or by a detector
that inspects the output (for example, the effective scale factor used).
"""
import contextlib
import copy
import tracemalloc
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import guard
from .feedback import FeedbackError, message


# What the grader can say about any function, besides its own catalogue.
INPUT_MODIFIED = "input modified in place"
SHAPE_OR_DTYPE = "wrong output shape or dtype"
NAN_OR_INF = "NaN or inf in the output"
MATERIALISED = "the full (T_q, T_k) matrix materialised"
GENERIC = (INPUT_MODIFIED, SHAPE_OR_DTYPE, NAN_OR_INF, MATERIALISED)


@dataclass(frozen=True)
class Case:
    """One input: what it exercises, and a builder of fresh named arguments."""

    description: str
    make: Callable[[], dict]


@dataclass(frozen=True)
class Misconception:
    """A named mistake: a wrong implementation or a detector, and how to fix it.

    wrong(*args) returns what a function with this mistake returns.
    detect(args, got, expected) returns a detail string when the mistake is present.
    """

    name: str
    fix: str
    wrong: Callable | None = None
    detect: Callable | None = None


@dataclass(frozen=True)
class FunctionSpec:
    """Everything the grader knows about one function a learner writes."""

    name: str
    reference: Callable
    suites: dict
    misconceptions: list = field(default_factory=list)
    keep_dtype: bool = False  # float32 in, float32 out
    forbidden: tuple = ()  # attncore functions the learner is asked to write, not call
    rtol: float | None = None
    max_extra_bytes: Callable | None = None  # args -> allowed tracemalloc peak


def tolerances(expected, rtol=None):
    """rtol, atol for comparing with the reference.

    Loose enough for any correct order of operations even when scores reach 1e4
    (their rounding errors, ~1e4 * d_k * eps, move the weights by that relative
    amount), tight enough that every catalogued mistake, which changes results
    by far more, is seen: rtol 1e-6 in float64 and 2e-3 in float32.
    """
    dtype = expected.dtype if np.issubdtype(expected.dtype, np.floating) else np.float64
    loose = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3}.get(np.dtype(dtype), 1e-6)
    scale = float(np.max(np.abs(expected[np.isfinite(expected)]), initial=1.0))
    rtol = rtol if rtol is not None else loose
    return rtol, loose * 1e-3 * scale


def same(a, b, rtol=None):
    """a and b have one shape and agree within tolerance (NaN matches NaN)."""
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


def check(spec, function, suite):
    """Run one suite of spec's cases on the learner's function; raise FeedbackError on a mistake."""
    guard.verify_integrity()
    if not callable(function):
        raise FeedbackError(f"{spec.name}: expected a function, got {function!r}")
    for case in spec.suites[suite]:
        _check_case(spec, function, case)


def _check_case(spec, function, case):
    arguments = case.make()
    pristine = copy.deepcopy(arguments)
    expected = spec.reference(*copy.deepcopy(arguments).values())
    try:
        with guard.forbid(spec.name, spec.forbidden, function), \
                _peak_memory(spec.max_extra_bytes) as peak:
            got = function(*arguments.values())
    except FeedbackError:
        raise
    except NotImplementedError:
        raise FeedbackError(f"{spec.name}: not written yet. Replace `raise NotImplementedError()` "
                            f"with your code.") from None
    except Exception as error:  # the learner's code raised: name the mistake if one raises alike
        alike = [m for m in spec.misconceptions if _raises_alike(m, pristine, error)]
        named = alike[0] if len(alike) == 1 else None
        raised = f"your function raised {type(error).__name__}: {error}"
        raise FeedbackError(message(
            spec.name, named.name if named else raised, case.description, pristine,
            detail=raised if named else "", show_values=False,
            fix=named.fix if named else "run it on the input above in a cell of your own "
                                         "and read the traceback.",
        )) from None
    failure = _diagnose(spec, pristine, arguments, got, expected, peak())
    if failure is not None:
        headline, detail, fix = failure
        raise FeedbackError(message(
            spec.name, headline, case.description, pristine, got, expected, detail, fix
        ))


def _diagnose(spec, pristine, arguments, got, expected, peak_bytes):
    """(headline, detail, fix) for the first problem found, or None when correct."""
    modified = [name for name in pristine if not _unchanged(pristine[name], arguments[name])]
    if modified:
        return (INPUT_MODIFIED,
                f"After the call, {', '.join(modified)} no longer held what was passed in.",
                "work on a copy (x = x.copy(), or x = x - m instead of x -= m); the caller's "
                "arrays must be left as they were.")
    if got is None:
        return ("returned None", "", "end your function with `return` and the result.")
    correct = same(got, expected, spec.rtol)
    if correct and spec.keep_dtype and np.asarray(got).dtype != np.asarray(expected).dtype:
        counting = np.issubdtype(np.asarray(expected).dtype, np.integer)
        return (SHAPE_OR_DTYPE,
                f"The values are right but the dtype is {np.asarray(got).dtype}, "
                f"not {np.asarray(expected).dtype}.",
                "return an exact integer: multiply integers only (no /, no float factors), "
                "or finish with int(...)." if counting else
                "compute in the input's dtype (avoid np.float64 constants or arrays), "
                "or finish with .astype(x.dtype).")
    if correct and spec.max_extra_bytes is not None:
        allowed = spec.max_extra_bytes(pristine)
        if peak_bytes > allowed:
            return _named(spec, MATERIALISED,
                          f"Your function allocated {peak_bytes / 1e6:.2f} MB at its peak; "
                          f"a tiled version needs at most {allowed / 1e6:.2f} MB here.")
    if correct:
        return None
    for misconception in spec.misconceptions:
        detail = _recognise(misconception, pristine, got, expected, spec.rtol)
        if detail is not None:
            return misconception.name, detail, misconception.fix
    return _generic(got, expected)


def shows(wrong, arguments, got, expected, rtol=None, finite=False):
    """Does got equal wrong(*arguments), on an input where that differs from expected?

    With finite=True a wrong output with no finite entry never matches: an all-inf
    result says "overflow", not which formula overflowed.
    """
    try:
        with np.errstate(all="ignore"):
            output = wrong(*copy.deepcopy(arguments).values())
            if finite and not np.isfinite(np.asarray(output, dtype=float)).any():
                return False
    except Exception:  # this wrong implementation cannot even run on the input
        return False
    return same(got, output, rtol) and not same(expected, output, rtol)


def _recognise(misconception, arguments, got, expected, rtol):
    """A detail string when the learner's output shows this misconception, else None."""
    if misconception.wrong is not None and shows(misconception.wrong, arguments, got, expected, rtol):
        return ""
    if misconception.detect is not None:
        with np.errstate(all="ignore"), contextlib.suppress(Exception):
            return misconception.detect(copy.deepcopy(arguments), got, expected)
    return None


def _raises_alike(misconception, arguments, error):
    """Does this misconception's wrong implementation fail the same way on these arguments?"""
    if misconception.wrong is None:
        return False
    try:
        with np.errstate(all="ignore"):
            misconception.wrong(*copy.deepcopy(arguments).values())
    except Exception as wrong_error:
        return type(wrong_error) is type(error) and str(wrong_error) == str(error)
    return False


def _named(spec, name, detail):
    fix = next((m.fix for m in spec.misconceptions if m.name == name), "")
    return name, detail, fix


def _generic(got, expected):
    """What is wrong when no catalogued misconception explains it."""
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
    differ = np.argwhere(~np.isclose(got_array, expected, equal_nan=True)) if np.issubdtype(
        got_array.dtype, np.number) else np.argwhere(got_array != expected)
    where = tuple(int(i) for i in differ[0]) if len(differ) else ()
    at = f" First difference at index {where}: got {got_array[where]}, expected {expected[where]}." if where else ""
    return ("wrong values", f"No known mistake matches exactly.{at}",
            "compare your steps with the definition in the exercise text on this small input.")


def _unchanged(before, after):
    if isinstance(before, np.ndarray):
        return isinstance(after, np.ndarray) and before.shape == after.shape and np.array_equal(
            before, after, equal_nan=True)
    return True


@contextlib.contextmanager
def _peak_memory(enabled):
    """Measure the peak of Python and NumPy allocations during the block, when enabled
    (tracing slows Python code down, so only the memory probes pay for it)."""
    if not enabled:
        yield lambda: 0
        return
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    baseline = tracemalloc.get_traced_memory()[0]
    result = {"peak": 0}
    try:
        yield lambda: result["peak"]
    finally:
        result["peak"] = max(0, tracemalloc.get_traced_memory()[1] - baseline)
        if not already:
            tracemalloc.stop()
