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
import pickle
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import diagnosis
from .compare import same, several, tolerances  # noqa: F401 (the suites read them here)
from .diagnosis.generic import (  # noqa: F401
    NAN_OR_INF,
    NOT_AN_ARRAY,
    NOT_AN_ARRAY_FIX,
    ROUNDED,
    SCALED,
    SHAPE_OR_DTYPE,
    WRONG_ORDER,
    WRONG_VALUES,
    generic,
    unreadable,
)
from .diagnosis.witness import STRICT_DETECTORS  # noqa: F401
from .diagnosis.witness import guarded as detector_errors
from .feedback import message

# What the grader can say about any function, besides its own catalogue.
INPUT_MODIFIED = "input modified in place"
MATERIALISED = "the full (T_q, T_k) matrix materialised"
MATERIALISED_FIX = ("never build the (T_q, T_k) score matrix (no Q @ K.T on whole arrays): loop "
                    "over key tiles K[k0:k0 + block_size] (and query tiles), keep m, l and acc "
                    "per query row, and hold only one (block_size, block_size) tile of scores at "
                    "a time.")
MEMORY_UNMEASURED = "memory use could not be measured"
DID_NOT_FINISH = "did not finish"
NOT_WRITTEN = "not written yet"
FORBIDDEN = "called a function the exercise forbids"
GENERIC = (INPUT_MODIFIED, SHAPE_OR_DTYPE, NAN_OR_INF, MATERIALISED, MEMORY_UNMEASURED, ROUNDED,
           SCALED, WRONG_ORDER, NOT_AN_ARRAY)
VISIBLE_SUITES = ("basic",)  # the cases a notebook shows; every other suite is hidden

_DRAW = contextvars.ContextVar("draw", default=None)


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
    # right answers in plain NumPy (engine.stand_ins) whose code the derived mistakes change
    plain: tuple = ()
    # argument name (and "return") -> the names of its axes, for the diagnosis
    axes: dict = field(default_factory=dict)
    # (arguments, got, expected) -> a note for a right result that could be better, or None
    advice: Callable | None = None


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


@dataclass(frozen=True)
class Failure:
    """What went wrong on one case, before the diagnosis: a headline, its detail and fix.

    kind: "values" (a returned result that is wrong), "raised" (an exception), or "other"
    (did not finish, not written, input modified, memory, dtype: nothing to diagnose);
    named: a catalogued misconception (or a problem that names itself) said it.
    """

    headline: str
    detail: str = ""
    fix: str = ""
    kind: str = "other"
    named: bool = True
    misconception: object = None  # the catalogued Misconception that named it, if one did
    generic: bool = False  # said by the checks every function has, not by its catalogue
    show_values: bool = True  # the message shows what came back and what was expected
    text: str = ""  # the whole message, when it needs no input shown (not written, forbidden)


def graded_cases(spec, suite, seed=None):
    """[(case, the seed its inputs are drawn with)] of a suite, in the order they run.

    seed None (a learner's own check): every case as written. A seed (the grade that
    counts): a hidden suite draws its random inputs from it, so no table of fixed cases can
    answer them; a visible suite runs its cases as written (what the learner saw pass),
    then each again with its random inputs drawn, when that changes them (a "drawn
    twin"), so that no table of the visible cases earns the visible cell either.
    """
    cases = spec.suites[suite]
    if seed is None:
        return [(case, None) for case in cases]
    fixed = []
    for case in cases:
        with drawing(None):
            fixed.append(case.make())
    drawn = [(case, _new_draw(case, seed, fixed)) for case in cases]
    if suite not in VISIBLE_SUITES:
        return [(case, draw if draw is not None else seed) for case, draw in drawn]
    return [(case, None) for case in cases] + [
        (dataclasses.replace(case, description=f"{case.description}; values drawn when graded"),
         draw) for case, draw in drawn if draw is not None]


def _new_draw(case, seed, fixed, attempts=8):
    """The draw, seed or one derived from it, whose inputs for case differ from every fixed
    case of its suite (a small range of sizes can draw a fixed one), or None when the case
    draws nothing."""
    for attempt in range(attempts):
        draw = seed if attempt == 0 else (seed * 1_000_003 + attempt) % 2 ** 31
        with drawing(draw):
            made = case.make()
        if not any(_same_arguments(made, other) for other in fixed):
            return draw
    return None


def _same_arguments(a, b):
    """Are two cases' arguments equal (arrays by value, other objects by their pickle)?"""
    try:
        return pickle.dumps(a) == pickle.dumps(b)
    except Exception:  # an argument that does not pickle: take it as changed
        return False


def run_suite(spec, suite, call, seed=None, diagnose=True):
    """Run suite `suite` of spec's cases, smallest first, and stop at the first mistake.

    call(arguments, measure_memory) runs the learner's function on the arguments (a dict in
    parameter order) wherever it lives and returns an Outcome. The expected values and
    the diagnosis stay here, in the caller's process. seed: the draw of the grade that
    counts (graded_cases). At the first mistake, the diagnosis may run the suite's later
    cases too (never those that measure memory) to name it; diagnose=False says only that
    the suite failed (for counting points, as a test of grades across draws does).
    """
    notes, witnesses = [], []
    cases = graded_cases(spec, suite, seed)

    def run(case, draw):
        with drawing(draw):
            arguments = case.make()
        expected = spec.reference(*copy.deepcopy(arguments).values())
        outcome = call(copy.deepcopy(arguments), case.max_extra_bytes is not None)
        return arguments, expected, outcome

    for index, (case, draw) in enumerate(cases):
        arguments, expected, outcome = run(case, draw)
        notes += [note for note in dict.fromkeys(outcome.notes) if note not in notes]
        failure = _failure(spec, case, arguments, outcome, expected)
        witnesses.append(diagnosis.Witness(case.description, arguments, expected, outcome,
                                           failure is None, case.max_extra_bytes is not None))
        if failure is None:
            advice = spec.advice and spec.advice(arguments, outcome.returned, expected)
            notes += [advice] if advice and advice not in notes else []
            continue
        if not diagnose:
            return Verdict(False, failure.headline, tuple(notes), failure.headline)

        def more(later=cases[index + 1:]):
            found = []
            for other, other_draw in ((c, d) for c, d in later if c.max_extra_bytes is None):
                a, e, o = run(other, other_draw)
                if o.stopped is not None:
                    break
                other_failure = _failure(spec, other, a, o, e)
                if other_failure is not None and other_failure.headline == NOT_AN_ARRAY:
                    continue  # nothing a diagnosis can read
                found.append(diagnosis.Witness(other.description, a, e, o, other_failure is None))
            return found

        if failure.text:
            return Verdict(False, failure.text, tuple(notes), failure.headline)
        headline, detail, fix = diagnosis.explain(spec, witnesses, failure, more, call)
        short = f"raised {outcome.raised[0]}" if headline == failure.headline and \
            failure.kind == "raised" and not failure.named else headline
        return Verdict(False, message(spec.name, headline, case.description, arguments,
                                      outcome.returned, expected, detail, fix,
                                      failure.show_values), tuple(notes), short)
    return Verdict(True, "", tuple(notes))


def _failure(spec, case, pristine, outcome, expected):
    """The Failure of this case, or None when the learner's function got it right."""
    if outcome.stopped is not None:
        return Failure(DID_NOT_FINISH, outcome.stopped,
                       "run it on the input above in a cell of your own: look for a loop that "
                       "never ends, or code that stops the interpreter.", show_values=False)
    if outcome.raised is not None:
        return _raised(spec, pristine, *outcome.raised)
    return _diagnose(spec, case, pristine, outcome, expected)


def _raised(spec, pristine, error_type, error_message):
    """The Failure of a call that raised."""
    if error_type == "NotImplementedError":
        return Failure(NOT_WRITTEN, text=f"{spec.name}: {NOT_WRITTEN}. Replace `raise "
                                         f"NotImplementedError()` with your code.")
    if error_type == "ForbiddenCall":
        return Failure(FORBIDDEN, text=(
            f"{spec.name}: you called {error_message}, which this exercise does not allow (it is "
            f"what you are asked to write, or it would do the work for you). Use NumPy and the "
            f"helpers the exercise allows instead."))
    named, detail = recognise_error(spec, pristine, error_type, error_message)
    raised = f"Your function raised {error_type}: {error_message}"
    if named:
        return Failure(named.name, "\n".join(filter(None, [raised, detail])), named.fix, "raised",
                       show_values=False)
    return Failure(f"your function raised {error_type}: {error_message}", "",
                   "run it on the input above in a cell of your own and read the traceback.",
                   "raised", named=False, show_values=False)


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
    """The Failure of a returned value, or None when it is right.

    In order: inputs modified, nothing returned, a value no comparison can read (a ragged
    list, a dict: its own message, no diagnosis), right values in the wrong dtype, too much
    memory, then the catalogue of misconceptions, then a generic description (which the
    diagnosis replaces when it reads more in the error).
    """
    got = outcome.returned
    modified = [part for name in pristine
                for part in _modified(name, pristine[name], outcome.arguments_after.get(name))]
    if modified:
        return Failure(INPUT_MODIFIED,
                       f"After the call, {', '.join(modified)} no longer held what was passed in.",
                       "work on a copy (x = x.copy(), or x = x - m instead of x -= m); the "
                       "caller's arrays must be left as they were.")
    if got is None:
        return Failure("returned None", "", "end your function with `return` and the result.")
    odd = unreadable(got, expected)
    if odd is not None:  # no comparison, dtype check or diagnosis can read it: the learner's
        return Failure(NOT_AN_ARRAY, odd, NOT_AN_ARRAY_FIX, "values", generic=True,
                       show_values=False, text=message(spec.name, NOT_AN_ARRAY, case.description,
                                                       pristine, detail=odd, fix=NOT_AN_ARRAY_FIX,
                                                       show_values=False))
    correct = same(got, expected, spec.rtol)
    if correct and spec.result_dtype is not ResultDtype.ANY \
            and np.asarray(got).dtype != np.asarray(expected).dtype:
        return Failure(SHAPE_OR_DTYPE,
                       f"The values are right but the dtype is {np.asarray(got).dtype}, "
                       f"not {np.asarray(expected).dtype}.",
                       "return an exact integer: use integer operations only (*, //; no /, no "
                       "float factors), or finish with int(...)."
                       if spec.result_dtype is ResultDtype.EXACT_INT
                       else "compute in the input's dtype (avoid np.float64 constants or arrays), "
                            "or finish with .astype(x.dtype).")
    if correct and case.max_extra_bytes is not None:
        allowed = case.max_extra_bytes(pristine)
        if outcome.peak_bytes is None:
            return Failure(MEMORY_UNMEASURED,
                           "The grader could not measure the memory your function used "
                           "(the note below says why), so this test cannot pass.",
                           "leave the grader's modules in that process alone (your own calls of "
                           "tracemalloc are fine: they cannot change what the grader measures).")
        if outcome.peak_bytes > allowed:
            held = spec.memory(pristine, outcome.peak_bytes, allowed) if spec.memory else None
            if held is not None:
                return Failure(*held)
            return Failure(MATERIALISED,
                           f"Your function allocated {outcome.peak_bytes / 1e6:.2f} MB at its "
                           f"peak; a tiled version needs at most {allowed / 1e6:.2f} MB here.",
                           MATERIALISED_FIX)
    if correct:
        for misconception in spec.misconceptions:
            if misconception.close_too and misconception.detect is not None:
                with np.errstate(all="ignore"), detector_errors():
                    detail = misconception.detect(copy.deepcopy(pristine), got, expected)
                    if detail is not None:
                        return Failure(misconception.name, detail, misconception.fix, "values")
        return None
    for misconception in spec.misconceptions:
        detail = misconception.recognise(pristine, got, expected, spec.rtol)
        if detail is not None:
            return Failure(misconception.name, detail, misconception.fix, "values",
                           misconception=misconception)
    headline, detail, fix = generic(got, expected)
    return Failure(headline, detail, fix, "values", named=headline != WRONG_VALUES, generic=True)


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
