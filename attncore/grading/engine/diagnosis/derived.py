"""Derived mistakes: a learner's function that behaves, on every case of a suite, like a
right answer with one thing changed, is named by that change.

Two kinds of candidates, tried in a fixed order so that the same code gets the same name:
the code of the plain right answers (FunctionSpec.plain) changed in one place
(diagnosis.mutation), and the reference applied to an input changed in one way (an
integer one too high, two sizes swapped, an index counted from the end, a mask inverted,
the tiles of keys cut short). A candidate names the mistake only when it does what the
learner's function did on every case the suite ran (the same result within the grader's
tolerance, or the same exception), and differs from the reference on a case the learner
failed: derivation never names a mistake whose effects the learner's results do not show.
"""
import copy
import re
import warnings

import numpy as np

from ..compare import same
from . import axes
from .mutation import mutants
from .witness import Finding


def _run(function, arguments):
    """(output, None) or (None, (error type, message)) of function on a copy of arguments."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*copy.deepcopy(arguments).values()), None
    except Exception as error:
        return None, (type(error).__name__, str(error))


def _behaves_like(function, witness, rtol, type_only=False):
    """Does function do on this witness's input what the learner's function did (raise the
    same exception; with type_only, one of the same type, as the library's own checks word
    a broadcast NumPy would refuse in other words)?"""
    output, raised = _run(function, witness.arguments)
    if raised is not None or witness.raised is not None:
        return raised == witness.raised or (
            type_only and raised is not None and witness.raised is not None
            and raised[0] == witness.raised[0])
    return output is not None and same(witness.got, output, rtol)


def _explains(function, witnesses, rtol):
    """Does function behave like the learner's on every witness, and differ from the
    expected result on one that failed? The first failing witness is tried first: most
    candidates fail there at once. Where the learner's function returned wrong values on
    some case, an exception elsewhere need only be of the same type."""
    ordered = sorted(witnesses, key=lambda w: w.passed)
    type_only = any(not w.passed and w.raised is None for w in witnesses)
    for witness in ordered:
        if not _behaves_like(function, witness, rtol, type_only):
            return False
    return any(not w.passed and (w.raised is not None or not same(_run(function, w.arguments)[0],
                                                                     w.expected, rtol))
               for w in witnesses)


def _loop_pass(spec, mutant, arguments):
    """': the loop leaves out its last pass, the last key' for a range stop one short (one
    pass too many for one too long), naming what the loop runs over by its size."""
    if not (mutant.kind == "off by one" and mutant.line.startswith("for ")
            and mutant.now in (f"{mutant.was} - 1", f"{mutant.was} + 1")):
        return ""
    shaped = re.fullmatch(r"(\w+)\.shape\[(-?\d+)\]", mutant.was)
    if shaped and shaped[1] in arguments and shaped[1] in spec.axes:
        names = axes.named(spec.axes[shaped[1]], np.ndim(arguments[shaped[1]]))
        names = [names[int(shaped[2])]]
    else:
        try:
            stop = int(eval(mutant.was, {"np": np}, dict(arguments)))  # our own code's bound
        except Exception:
            return ""
        names = axes.names_of(stop, axes.sizes(spec, arguments))
    names = [axes.words(n, plural=False) for n in names if n in axes.WORDS]
    what = f", the last {names[0]}" if names else ""
    return (f": the loop leaves out its last pass{what}" if mutant.now.endswith("- 1")
            else f": the loop makes one pass too many{what.replace('last', 'one past the last')}")


def _named(spec, mutant, arguments, values=True):
    """The Finding of a derived mistake: what changed, where, and what it does (values:
    shown by results; else only by the exceptions raised)."""
    changed = (f"the line `{mutant.was}` left out" if not mutant.now else
               f"`{mutant.was}` written as `{mutant.now}`")
    if mutant.places > 1:
        changed += f" at each of the {mutant.places} places it appears"
    where = "" if not mutant.now or mutant.line == mutant.was else \
        f" in `{mutant.line}`" + (f", which then reads `{mutant.line_now}`"
                                  if mutant.line_now and mutant.line.count(mutant.was) > 1 else "")
    return Finding(mutant.headline, (
        f"On every input of this test your function "
        f"{'does what a right solution does' if values else 'raises what a right solution raises'}"
        f" with one change: {changed}{where} ({mutant.kind}{_loop_pass(spec, mutant, arguments)})."),
        f"find what your code computes in place of `{mutant.was}`: it behaves like "
        f"`{mutant.now or 'nothing'}`. Make it `{mutant.was}`.")


def _integers(arguments):
    return [name for name, value in arguments.items()
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool)]


def perturbations(spec, arguments):
    """[(what changed, change(arguments) -> arguments)] for the kinds of these arguments."""
    found = []
    ints = _integers(arguments)
    for name in ints:
        for delta in (1, -1):
            found.append((f"{name} {'+' if delta > 0 else '-'} 1 in place of {name}",
                          lambda a, n=name, d=delta: {**a, n: a[n] + d}))
        for other in ints:
            if other != name:
                found.append((f"{name} and {other} swapped",
                              lambda a, n=name, o=other: {**a, n: a[o], o: a[n]}))
                found.append((f"{name} counted from the end ({other} - 1 - {name})",
                              lambda a, n=name, o=other: {**a, n: a[o] - 1 - a[n]}))
    for name, value in arguments.items():
        if not isinstance(value, np.ndarray):
            continue
        if value.dtype == bool:
            found.append((f"the mask inverted (~{name})", lambda a, n=name: {**a, n: ~a[n]}))
        elif np.issubdtype(value.dtype, np.integer) and value.ndim == 1:
            for delta in (1, -1):
                found.append((f"{name} {'+' if delta > 0 else '-'} 1 in place of {name}",
                              lambda a, n=name, d=delta: {**a, n: a[n] + d}))
            for other in ints:
                found.append((f"{name} read as what is left of {other} ({other} - {name})",
                              lambda a, n=name, o=other: {**a, n: a[o] - a[n]}))
        elif np.issubdtype(value.dtype, np.floating):
            found.append((f"-{name} in place of {name} (its sign flipped)",
                          lambda a, n=name: {**a, n: -a[n]}))
    found += _tile_cuts(spec, arguments)
    return found


def _tile_cuts(spec, arguments):
    """Keys (the axis named T_k of every argument that has one) cut to tiles of block_size:
    the last tile left out, or kept alone, the first kept alone."""
    if "block_size" not in arguments:
        return []
    keyed = {name: axes.named(spec.axes.get(name, ()), value.ndim).index("T_k")
             for name, value in arguments.items() if isinstance(value, np.ndarray)
             and "T_k" in axes.named(spec.axes.get(name, ()), value.ndim)}
    if not keyed:
        return []

    def cut(keep):
        def change(a):
            n = a[next(iter(keyed))].shape[keyed[next(iter(keyed))]]
            chosen = keep(n, a["block_size"])
            return {**a, **{name: np.take(a[name], chosen, axis=axis) for name, axis in keyed.items()}}
        return change

    last = lambda n, b: (n - 1) // b * b  # noqa: E731 (the start of the last tile)
    return [
        ("the keys of the last tile left out (the tiles before it only)",
         cut(lambda n, b: np.arange(0, last(n, b)))),
        ("the keys of the last tile alone: what the earlier tiles added was lost (as if the "
         "running maximum and sum were started again at every tile)",
         cut(lambda n, b: np.arange(last(n, b), n))),
        ("the keys of the first tile alone, whatever the tile", cut(lambda n, b: np.arange(min(b, n)))),
    ]


def derive(spec, witnesses):
    """Finding of the first candidate that explains every witness, or None. When the
    learner's function raised on every failing case, an exception's text is weak evidence
    (many changes raise the same one): a changed code then names the mistake only when it
    is the one change that raises it, and a changed input never does."""
    if any(w.costly and not w.passed for w in witnesses):
        return None  # a case that measures memory is too large to run every candidate on
    witnesses = [w for w in witnesses if not w.costly]
    failing = [w for w in witnesses if not w.passed]
    if not failing or any(w.outcome.stopped for w in witnesses):
        return None
    values = any(w.raised is None for w in failing)
    found = []
    for plain in spec.plain:
        for mutant in mutants(plain):
            if _explains(mutant.run, witnesses, spec.rtol):
                found.append(mutant)
                if values:
                    break
        if found and values:
            break
    if found and (values or len({(m.kind, m.was, m.now) for m in found}) == 1):
        return _named(spec, found[0], failing[0].arguments, values)
    if found:  # several changes raise the same: hypotheses, not a name
        told = "; ".join(dict.fromkeys(f"`{m.was}` written as `{m.now or '(left out)'}`"
                                       for m in found[:3]))
        return Finding("", f"A right solution raises the same with one of these changes: {told}.")
    for what, change in perturbations(spec, failing[0].arguments) if values else ():
        def applied(*values, change=change):
            return spec.reference(*change(dict(zip(failing[0].arguments, values))).values())
        if _explains(applied, witnesses, spec.rtol):
            return Finding(f"the right result for another input: {what.split(' (')[0]}", (
                f"On every input of this test your results are what the right function gives "
                f"with {what}."),
                f"follow the input above through your code and look for where it uses "
                f"{what.split(' (')[0].split(' in place of')[0]}.")
    return None
