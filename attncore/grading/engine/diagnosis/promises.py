"""Which promise of the text a wrong result breaks: rows that sum to 1, nothing on blocked
keys, entries in [0, 1], the input's dtype; and, by calling the learner's function again,
independence from the scores of blocked keys and from the order of the keys.

broken(spec, witness) -> [Finding] reads the result alone, with attncore.invariants (the
checks the book and the tests use); metamorphic(spec, witness, call) -> [Finding] calls
the function on a changed input whose right answer the text fixes.
"""
import copy

import numpy as np

import attncore
from attncore.invariants import check_rows, default_atol

from ..compare import same
from . import axes
from .witness import Finding

ROWS = "rows that do not sum to 1"
ROWS_ABOVE_ONE = "rows that sum to more than 1"
MASS_ON_BLOCKED = "weight on blocked keys"
OUTSIDE_UNIT = "weights outside [0, 1]"
DEPENDS_ON_BLOCKED = "depends on the scores of blocked keys"
DEPENDS_ON_ORDER = "depends on the order of the keys"
KEY_AXES = ("T_k", "t_k", "n")  # axes whose entries are keys: their order must not matter


def _scores(arguments, shape):
    """The float argument whose rows the result's rows are a softmax of, or None."""
    for value in arguments.values():
        if isinstance(value, np.ndarray) and value.shape == shape and \
                np.issubdtype(value.dtype, np.floating):
            return value
    return None


def broken(spec, witness):
    """[Finding] of the promises of a row of weights that the learner's result breaks,
    when the expected result is rows of weights (entries in [0, 1], rows summing to at
    most 1)."""
    got, expected = witness.got, witness.expected
    try:
        g, e = np.asarray(got), np.asarray(expected)
    except Exception:
        return []
    if g.shape != e.shape or e.ndim < 1 or not np.issubdtype(e.dtype, np.floating) \
            or not np.issubdtype(g.dtype, np.number) or not np.all(np.isfinite(g)):
        return []
    mask = axes.mask_of(witness.arguments, e.shape)
    told = check_rows(e, mask=mask)
    if not (told.entries_in_unit_interval and told.masked_mass == 0 and told.sub_stochastic):
        return []
    scores = _scores(witness.arguments, e.shape)
    lse = 0.0 if scores is None else attncore.logsumexp(scores.astype(np.float64), mask=mask)
    slack = default_atol(e.shape[-1], e.dtype, lse=lse)
    mine = check_rows(g, mask=mask, atol=slack)
    findings = []
    if mine.masked_mass > 0:
        findings.append(Finding(MASS_ON_BLOCKED, (
            f"Your weights put {mine.masked_mass:.3g} in all on blocked keys (where the mask is "
            f"False); a blocked key gets weight exactly 0."),
            "set the blocked scores to -inf before the exp (np.where(mask, scores, -np.inf)), "
            "so that exp gives exactly 0 there."))
    if not mine.entries_in_unit_interval:
        findings.append(Finding(OUTSIDE_UNIT, (
            f"Your weights range from {mine.min_entry:.4g} to {mine.max_entry:.4g}; a weight is "
            f"a probability, between 0 and 1."), "a weight is exp(...) divided by a sum of "
                                                   "such terms: it cannot be negative or above 1."))
    exact = told.worst_row_error <= told.atol
    off = mine.worst_row_error
    if exact and off > slack:
        row = mine.worst_row
        total = float(np.asarray(g, np.float64).sum(axis=-1)[row])
        findings.append(Finding(ROWS, (
            f"Row {row} of your weights sums to {total:.9g}: "
            f"{off / slack:.3g} times the slack that rounding allows for rows of n = "
            f"{e.shape[-1]} in {e.dtype} ({slack:.3g}); every row of weights sums to 1."),
            "divide each row by its own sum, e.sum(axis=-1, keepdims=True), and by nothing "
            "else (no epsilon, no other row's sum)."))
    elif not exact and mine.max_row_sum > 1 + slack:
        findings.append(Finding(ROWS_ABOVE_ONE, (
            f"A row of your weights sums to {mine.max_row_sum:.9g}: these rows sum to at most 1 "
            f"(within the slack {slack:.3g})."), "check the denominator: it adds 1 (or "
                                                  "exp(-m)) to the sum of the row's terms."))
    return findings


def _call(call, arguments):
    with np.errstate(all="ignore"):
        return call(copy.deepcopy(arguments), False)


def metamorphic(spec, witness, call):
    """[Finding] of what the learner's function does on inputs changed where the text fixes
    the answer: blocked scores moved (the result must not change), keys reordered (the
    result must not change, or move with the keys)."""
    arguments, got = witness.arguments, witness.got
    findings = []
    expected = np.asarray(witness.expected) if not isinstance(witness.expected, tuple) else None
    if expected is not None and np.shape(got) != expected.shape:
        return findings
    mask = None if expected is None else axes.mask_of(arguments, expected.shape)
    if mask is not None and not mask.all():
        name = next((k for k, v in arguments.items() if isinstance(v, np.ndarray)
                     and v.shape == expected.shape and np.issubdtype(v.dtype, np.floating)), None)
        if name is not None:
            moved = {**arguments, name: np.where(mask, arguments[name],
                                                 arguments[name] + 3).astype(arguments[name].dtype)}
            again = _call(call, moved)
            if again.raised is None and again.stopped is None and not same(again.returned, got):
                findings.append(Finding(DEPENDS_ON_BLOCKED, (
                    "Moving only the scores of blocked keys (mask False) by 3 changed your "
                    "result: a blocked key must not count at all, whatever its score."),
                    "remove the blocked keys before the row maximum, the exp and the sum: "
                    "np.where(mask, scores, -np.inf)."))
    keyed = {name: [i for i, a in enumerate(axes.named(spec.axes.get(name, ()), value.ndim))
                    if a in KEY_AXES]
             for name, value in arguments.items() if isinstance(value, np.ndarray)}
    keyed = {name: found[-1] for name, found in keyed.items() if found}
    if keyed:
        sizes = {arguments[name].shape[axis] for name, axis in keyed.items()}
        if len(sizes) == 1 and (n := sizes.pop()) > 1:
            order = np.roll(np.arange(n), 1)
            moved = {**arguments, **{name: np.take(arguments[name], order, axis=axis)
                                     for name, axis in keyed.items()}}
            again = _call(call, moved)
            names = axes.named(axes.result_names(spec), np.ndim(got)) if expected is not None else []
            out_axis = next((i for i, a in enumerate(names) if a in KEY_AXES), None)
            want = got if out_axis is None else np.take(np.asarray(got), order, axis=out_axis)
            if again.raised is None and again.stopped is None and not same(again.returned, want):
                moved_too = " other than by moving its columns" if out_axis is not None else ""
                findings.append(Finding(DEPENDS_ON_ORDER, (
                    f"Putting the keys in another order (the last key first, with its value and "
                    f"its mask entry) changed your result{moved_too}: attention does not depend "
                    f"on the order of the keys."),
                    "treat every key alike: no key, tile or position may be left out, counted "
                    "twice or weighted by where it sits."))
    return findings
