"""What a wrong result is when nothing more specific names it: its type, shape, NaN, a
rounding, results in the wrong order, or values that differ (a constant factor is one of
the shapes of an error that diagnosis.shape reads)."""
from itertools import permutations

import numpy as np

from ..compare import same, several

SHAPE_OR_DTYPE = "wrong output shape or dtype"
NAN_OR_INF = "NaN or inf in the output"
ROUNDED = "right values, rounded"
SCALED = "right values times a constant factor"
WRONG_ORDER = "results returned in the wrong order"
WRONG_VALUES = "wrong values"
NOT_AN_ARRAY = "returned something that is not an array of the expected shape"
NOT_AN_ARRAY_FIX = ("return a NumPy array of numbers (or booleans, where the exercise says so) of "
                    "the expected shape, with every row as long as the others, in every case: "
                    "not a list of rows of different lengths, a dict or an object of your own.")


def unreadable(got, expected):
    """What got is, when no comparison can read it as the result expected (a ragged list,
    a dict, a string, an object that NumPy cannot turn into an array of numbers or whose
    conversion raises); None when it is an array of numbers or booleans (of any shape:
    the comparison says what else is wrong), or several of them where several are due."""
    if several(expected) and isinstance(got, (tuple, list)) and len(got) == len(expected):
        return next(filter(None, (unreadable(g, e) for g, e in zip(got, expected))), None)
    if several(expected):
        return None  # not as many results: _generic_several says so
    try:
        with np.errstate(all="ignore"):
            array = np.asarray(got)
            if array.dtype.kind in "biufc":
                return None
        problem = f"NumPy reads it as an array of dtype {array.dtype}, not of numbers"
    except Exception as error:  # the learner's value broke the conversion
        problem = f"NumPy cannot read it as one array ({type(error).__name__}: {str(error)[:160]})"
    return (f"Your function returned {seen(got)}: {problem}. The expected result is "
            f"{_kind(np.asarray(expected))}.")


def seen(value):
    """The type of a value, and its length or shape where it has one, read without calling
    any method of the learner's own (a repr or a len can raise)."""
    kind = type(value)
    if kind is np.ndarray:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    name = f"a {kind.__name__}" if kind in (list, tuple, dict, set, str, bytes, int, float,
                                           complex, bool) else f"an object of type {kind.__name__}"
    if kind in (list, tuple, dict, str):
        lengths = sorted({len(item) for item in value if type(item) in (list, tuple)}) \
            if kind in (list, tuple) else []
        rows = f", rows of lengths {', '.join(map(str, lengths))}" if len(lengths) > 1 else ""
        return f"{name} of {len(value)} item{'s' if len(value) != 1 else ''}{rows}"
    return name


def generic(got, expected):
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
        near = _rounded(got_array, expected)
        if near is not None:
            return near
    differ = np.argwhere(~np.isclose(got_array, expected, equal_nan=True)) if np.issubdtype(
        got_array.dtype, np.number) else np.argwhere(got_array != expected)
    where = tuple(int(i) for i in differ[0]) if len(differ) else ()
    at = f" First difference at index {where}: got {got_array[where]}, expected {expected[where]}." if where else ""
    return (WRONG_VALUES, f"No known mistake matches exactly.{at}",
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
            headline, detail, fix = generic(mine, theirs)
            return headline, f"Result {index} of the tuple you returned: {detail}", fix
    return (WRONG_VALUES, "No known mistake matches exactly.", "")


def _reordered(got, expected):
    """The order of expected's results in got when got holds them all, reordered, else None."""
    for order in permutations(range(len(expected))):
        if list(order) != sorted(order) and all(
                same(got[i], expected[j]) for i, j in enumerate(order)):
            return ", ".join(map(str, order))
    return None
