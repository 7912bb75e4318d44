"""Raw NumPy errors, translated: which arrays had which shapes, and which axes the text
expects to meet.

translate(spec, arguments, error_type, error_message) -> (headline, detail, fix) or None.
NumPy's messages give sizes only; the sizes are named by the arguments they come from
(diagnosis.axes), so the learner reads "T_k = 5 against d_v = 3", not "(5,) (3,)".
"""
import inspect
import re

import numpy as np

from . import axes

BROADCAST = "shapes that do not broadcast"
MATMUL = "a matrix product whose inner sizes differ"
RESHAPE = "a reshape that does not fit the array"
NO_AXIS = "an axis the array does not have"
PAST_THE_END = "an index past the end of an axis"
UNEQUAL_SPLIT = "a split into unequal parts"
NONE_USED = "None used as a number"
NOT_AN_INTEGER = "a float where an integer is needed"
ZERO_DIVISION = "a division by zero"
TAKE_ALONG = "indices with fewer axes than the array"


def _shapes(text):
    """Every shape written as (a,b,...) in text, as tuples of ints."""
    return [tuple(int(n) for n in found.split(",") if n.strip())
            for found in re.findall(r"\(([\d, ]*)\)", text)]


def _clash(first, second, known):
    """The axis pairs that clash when NumPy lines up two shapes from the right."""
    pairs = []
    for a, b in zip(reversed(first), reversed(second)):
        if a != b and a != 1 and b != 1:
            pairs.append(f"{axes.size(a, known)} against {axes.size(b, known)}")
    return pairs


def _which(dims, spec, arguments, known):
    """'Q (T_q, d_k) = (3, 4)' when dims is an argument's shape (or its transpose), else the
    shape with its sizes named."""
    for name, value in arguments.items():
        if isinstance(value, np.ndarray) and value.ndim == len(dims) and value.ndim:
            if value.shape == dims:
                return f"{name} {axes.shape(dims, known)}"
            if value.ndim >= 2 and value.shape[::-1] == dims:
                return f"{name}.T {axes.shape(dims, known)}, the axes of {name} reversed"
    return f"an array of shape {axes.shape(dims, known)}"


def _broadcast(spec, arguments, message, known):
    shapes = _shapes(message.split("and requested shape")[0].split("->")[0]
                     if "remapped" not in message else message)
    if "remapped" in message:  # a stacked matmul: only the leading (stack) axes broadcast
        originals = [tuple(int(n) for n in s.split(",") if n.strip())
                     for s in re.findall(r"\(([\d,]*)\)->", message)]
        if len(originals) == 2:
            stacks = [s[:-2] if len(s) >= 2 else () for s in originals]
            detail = (f"In a product of stacks of matrices, {_which(originals[0], spec, arguments, known)} "
                      f"@ {_which(originals[1], spec, arguments, known)}, NumPy lines up the stack "
                      f"axes (all but the last two) from the right: {stacks[0]} against "
                      f"{stacks[1]} ({'; '.join(_clash(*stacks, known)) or 'they differ'}).")
            return BROADCAST, detail, (
                "give the operand with fewer stack axes the one it lacks, where it belongs: "
                "K[:, None] (a new axis of size 1) turns (H_kv, T_k, d) into (H_kv, 1, T_k, d), "
                "which broadcasts against (H_kv, G, T_q, d).")
        return None
    if len(shapes) < 2:
        return None
    first, second = shapes[0], shapes[1]
    clash = _clash(first, second, known)
    detail = (f"An elementwise operation (+, -, *, /, np.where) met "
              f"{_which(first, spec, arguments, known)} and "
              f"{_which(second, spec, arguments, known)}. NumPy lines up the LAST axes: "
              f"{'; '.join(clash) if clash else 'they do not fit'}.")
    short, long = sorted((first, second), key=len)
    if len(long) == len(short) + 1 and long[:len(short)] == short:
        detail += (f" The {len(short)}-axis array {short} matches the FIRST axes of {long}: it "
                   f"needs a new last axis, [:, None] (or keepdims=True where it was reduced), "
                   f"to meet the other one row by row.")
        fix = ("reduce with keepdims=True, or add the missing axis with [:, None] / "
               "[..., None], so that the smaller array lines up with the rows.")
    elif len(first) == len(second) and first == second[::-1]:
        detail += " One shape is the other reversed: one of the two is transposed."
        fix = "transpose the one whose axes are the wrong way round (.T, np.swapaxes)."
    else:
        fix = ("write the shape of each array under the line that fails, and make the axes "
               "that must meet (the same queries, keys or features) line up from the right; "
               "a product of matrices is @, not *.")
    return BROADCAST, detail, fix


def _matmul(spec, arguments, message, known):
    core = re.search(r"\(size (\d+) is different from (\d+)\)", message)
    dot = re.search(r"shapes \(([\d, ]+)\) and \(([\d, ]+)\) not aligned", message)
    if core:
        right, left = int(core.group(1)), int(core.group(2))
        detail = (f"In a matrix product A @ B the last axis of A must have the size of the "
                  f"second-to-last axis of B: here {axes.size(left, known)} met "
                  f"{axes.size(right, known)}.")
    elif dot:
        a, b = (tuple(int(n) for n in g.split(",") if n.strip()) for g in dot.groups())
        detail = (f"np.dot met {_which(a, spec, arguments, known)} and "
                  f"{_which(b, spec, arguments, known)}: the last axis of the first must have "
                  f"the size of the first axis of the second.")
    else:
        return None
    shapes = axes.argument_shapes(spec, arguments)
    told = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
    if core:
        detail += _products(arguments, left, right)
    return MATMUL, detail + (f" The arrays here are {told}." if told else ""), (
        "the axis that two matrices share in a product is the one summed over (d_k in "
        "Q @ K.T, T_k in weights @ V): put it last in the left operand and first (of the two "
        "last axes) in the right one, transposing with .T or np.swapaxes where needed.")


def _products(arguments, left, right):
    """' q @ K fails this way; q @ K.T puts the axes that match together.' for two array
    arguments whose product A @ B fails with these sizes, and a product of them that runs."""
    arrays = {n: v for n, v in arguments.items() if isinstance(v, np.ndarray) and v.ndim}
    for a, x in arrays.items():
        for b, y in arrays.items():
            inner = y.shape[-2] if y.ndim >= 2 else y.shape[0]
            if a == b or x.shape[-1] != left or inner != right:
                continue
            if y.ndim >= 2 and x.shape[-1] == y.shape[-1]:
                return (f" {a} @ {b} fails this way: the {left} entries of each row of {a} meet "
                        f"the {right} rows of {b}. {a} @ {b}.T puts the axes of size {left} "
                        f"together (each row of {b} is one vector, as each row of {a} is).")
            if x.ndim >= 2 and y.ndim >= 2 and x.shape[-2] == inner:
                return f" {a} @ {b} fails this way; {a}.T @ {b} puts the axes of size {inner} together."
    return ""


def _reshape(spec, arguments, message, known):
    found = re.search(r"array of size (\d+) into shape \(([\d, ]+)\)", message)
    if not found:
        return None
    total = int(found.group(1))
    target = tuple(int(n) for n in found.group(2).split(",") if n.strip())
    holds = int(np.prod(target))
    source = [f"{name} {axes.shape(value.shape, known)}" for name, value in arguments.items()
              if isinstance(value, np.ndarray) and value.size == total]
    unnamed = [i for i, n in enumerate(target) if not axes.names_of(n, known)]
    should = ""
    if len(unnamed) == 1 and holds and total % (holds // max(target[unnamed[0]], 1)) == 0:
        right = total // (holds // max(target[unnamed[0]], 1))
        names = axes.names_of(right, known)
        should = (f" Its size {target[unnamed[0]]} (axis {unnamed[0]}) should be {right}"
                  f"{' = ' + ' or '.join(f'{n}, ' + axes.words(n) for n in names) if names else ''}.")
    return RESHAPE, (
        f"An array of {total} numbers{' (' + ', '.join(source) + ')' if source else ''} cannot "
        f"take the shape {axes.shape(target, known)}, which holds {holds}: the sizes you "
        f"split it into must multiply to {total}.{should}"), (
        "build the new shape from the sizes of the axes you cut, read from the array itself "
        "(x.shape[-1] for the last axis), so that they multiply to its size.")


def _split(spec, arguments, message, known):
    if "split does not result in an equal division" not in message:
        return None
    parts = [v for v in arguments.values() if isinstance(v, (int, np.integer))]
    options = [f"{name} = {n}" for name, n in known.items()
               if parts and n % parts[0] and not name.startswith("n_")]
    heads = "n_heads" in arguments
    return UNEQUAL_SPLIT, (
        f"np.split cuts one axis into {parts[0] if parts else 'n'} equal parts, and the axis "
        f"you split does not divide{': it is ' + ' or '.join(options) if options else ''}."
        + (" The axis to cut is the last one, the features, which holds n_heads heads of d "
           "features each (the token axis holds tokens, not heads)." if heads else "")), (
        "split the last axis: np.split(x, n_heads, axis=-1), then stack the parts after the "
        "batch axis, or reshape(B, T, n_heads, d).transpose(0, 2, 1, 3)." if heads else
        "split along the axis whose size the number of parts divides.")


def _axis(spec, arguments, message, known):
    found = re.search(r"axis (-?\d+) is out of bounds for array of dimension (\d+)", message)
    if not found:
        return None
    axis, ndim = int(found.group(1)), int(found.group(2))
    inputs = [f"{name} has shape {value.shape}" for name, value in arguments.items()
              if isinstance(value, np.ndarray) and value.ndim == ndim]
    return NO_AXIS, (
        f"Your code uses axis {axis} (axis={axis}) of an array with {ndim} "
        f"ax{'is' if ndim == 1 else 'es'}{': ' + '; '.join(inputs) if inputs else ''}. "
        f"{'A 1-D array is a single row: its only axis is axis 0, which is also axis -1. ' if ndim == 1 else ''}"
        f"Counted from the end, the last axis is always axis -1."), (
        "name the axes from the end: axis=-1 for the last axis (the entries of a row), "
        "whatever the number of leading axes.")


def _index(spec, arguments, message, known):
    found = re.search(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)", message)
    if not found:
        return None
    index, axis, length = (int(g) for g in found.groups())
    past = "one past the end" if index == length else "beyond the end"
    return PAST_THE_END, (
        f"Index {index} is {past} of an axis of size {axes.size(length, known)} (its indices "
        f"run from 0 to {length - 1}): a range or a bound off by one?"), (
        "the indices of an axis of size n are 0, ..., n - 1: range(n), and slices [a:b] that "
        "stop before b.")


def _none(spec, arguments, error_type, message):
    try:  # a plain right answer has the graded function's parameters and defaults
        defaults = inspect.signature((*spec.plain, spec.reference)[0]).parameters.values()
    except (TypeError, ValueError):
        defaults = ()
    absent = [name for name, value in arguments.items() if value is None] + [
        p.name for p in defaults if p.default is None and p.name not in arguments]
    if error_type != "TypeError" or not absent:
        return None
    if not ("NoneType" in message or "not supported for the input types" in message):
        return None
    name = absent[0]
    return NONE_USED, (
        f"{name} is None here ({name}=None: the caller gave no {name}), and your code used it "
        f"as a number."), (
        f"test `if {name} is None:` first and use the default there; pass numbers on to "
        f"NumPy, never None.")


def _integer(spec, arguments, error_type, message):
    if not re.search(r"cannot be interpreted as an integer|integer scalar arrays|slice indices "
                     r"must be integers|integers or None", message):
        return None
    return NOT_AN_INTEGER, (
        "A float reached a place that takes an integer (a shape, a range, an index or a "
        "slice): true division / gives a float even when it divides exactly."), (
        "use integer division // for sizes and indices (n_q_heads // n_kv_heads), or int(...).")


def translate(spec, arguments, error_type, error_message):
    """(headline, detail, fix) that says what a raw error means here, or None."""
    known = axes.sizes(spec, arguments)
    if error_type == "ZeroDivisionError":
        zeros = [name for name, value in known.items() if value == 0]
        return ZERO_DIVISION, (
            f"Your code divided by zero{' (' + ', '.join(zeros) + ' = 0 here)' if zeros else ''}: "
            f"a size computed the wrong way round (a smaller number divided by a larger one "
            f"with // is 0)."), "check each division: which count goes over which."
    if "`indices` and `arr` must have the same number of dimensions" in error_message:
        return TAKE_ALONG, (
            "np.take_along_axis needs indices with as many axes as the array they index: a "
            "reduction (np.sum, np.argmax) without keepdims=True dropped an axis."), (
            "reduce with keepdims=True, so the result keeps a size-1 axis where the reduced "
            "one was.")
    for reader in (_none, _integer):
        said = reader(spec, arguments, error_type, error_message)
        if said:
            return said
    if error_type not in ("ValueError", "IndexError", "AxisError", "TypeError"):
        return None
    if "could not be broadcast" in error_message and "into shape" in error_message:
        given, into = _shapes(error_message)[:2] if len(_shapes(error_message)) >= 2 else ((), ())
        return BROADCAST, (
            f"A block of shape {axes.shape(given, known)} did not fit the place it was written "
            f"to, of shape {axes.shape(into, known)}."), (
            "allocate the result with the shape the text gives (one row per query, one column "
            "per value feature, ...), and write each block where its rows belong.")
    for reader in (_broadcast if "could not be broadcast" in error_message else None,
                   _matmul if ("matmul" in error_message or "not aligned" in error_message)
                   else None,
                   _reshape, _split, _axis, _index):
        if reader is not None:
            said = reader(spec, arguments, error_message, known)
            if said:
                return said
    return None
