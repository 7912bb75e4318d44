"""Detectors of masked_softmax mistakes, by the pattern of the damage they leave.

Each is detect(args, got, expected) -> a detail naming what went wrong, or None: args
holds scores (..., T_q, T_k) and mask (broadcastable), got the learner's weights and
expected the reference's. They look at which rows are wrong, and at what those rows'
scores make of exp: a row that came out dead (NaN, inf, all zero), weight on blocked
keys, or the weights of a known wrong formula.
"""
import numpy as np

import attncore

from ...probe import same, tolerances


def _parts(args, got, expected):
    """(scores, broadcast mask, got as a float array) or None when shapes do not fit."""
    s = np.asarray(args["scores"])
    m = np.broadcast_to(np.asarray(args["mask"]), s.shape)
    got = np.asarray(got)
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.number):
        return None
    return s, m, got.astype(np.float64)


def _row(index):
    """'row 2' or 'row (1, 0, 2)' (the leading indices of a row of the scores)."""
    return f"row {index[0]}" if len(index) == 1 else f"row {tuple(int(i) for i in index)}"


def _wrong_rows(got, expected):
    """Boolean over the rows (leading axes): where got and expected differ."""
    rtol, atol = tolerances(expected)
    close = np.isclose(got, expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    return ~close.all(axis=-1)


def _dead(got, expected):
    """Rows that came out NaN, inf or all zero."""
    _, atol = tolerances(expected)
    return ~np.isfinite(got).all(axis=-1) | (np.abs(np.nan_to_num(got)).max(axis=-1) <= atol)


def _allowed_max(s, m):
    return np.where(m, s, -np.inf).max(axis=-1)


def _blocked_max(s, m):
    return np.where(m, -np.inf, s).max(axis=-1)


def _underflow_gap(dtype):
    """A difference of scores beyond which exp(-gap) is 0 (or denormal) in dtype."""
    return float(-np.log(np.finfo(dtype).tiny))


def mask_with_zero_detect(args, got, expected):
    """The learner's rows with an allowed key equal softmax(np.where(mask, scores, 0)) there
    (rows with no allowed key are left out: learners treat them in many ways)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    rows = m.any(axis=-1)
    wrong = attncore.softmax(np.where(m, s, 0).astype(s.dtype))
    if same(got[rows], wrong[rows]) and not same(expected[rows], wrong[rows]):
        index = tuple(np.argwhere(rows & _wrong_rows(got, expected))[0])
        return (f"Your blocked keys get weight: in {_row(index)} they receive "
                f"{np.where(m, 0, got)[index].sum():.1%} of the row. A blocked score of 0 "
                f"still counts, and it is not below the allowed scores here "
                f"(largest {_allowed_max(s, m)[index]:.6g}).")
    return None


def inverted_detect(args, got, expected):
    """INVERTED: in the rows that have both allowed and blocked keys, the learner's weights
    equal the softmax over the BLOCKED keys (rows with no allowed or no blocked key say
    nothing: learners treat them in many ways)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    rows = (~m).any(axis=-1) & m.any(axis=-1)  # rows that have keys under both readings
    if not rows.any():
        return None
    inverted = attncore.softmax(s, mask=~m)
    if same(got[rows], inverted[rows]) and not same(expected[rows], inverted[rows]):
        return ("Your weights sit on the blocked keys, and the allowed keys get 0: your code "
                "treats True as 'blocked'.")
    return None


def mask_after_detect(args, got, expected):
    """MASK_AFTER, two patterns of damage.

    Renormalised: every wrong row is dead (NaN, inf or all zero) and is a row where a
    blocked key scores so far above the allowed ones that exp(allowed - blocked)
    underflows: the softmax, or its maximum, still saw the blocked key. For example the
    row [1, 2, 1000] with the last key blocked gives [0, 0] / 0.
    Not renormalised: the weights equal softmax(scores) * mask, rows summing to less than 1.
    """
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    gap = _blocked_max(s, m) - _allowed_max(s, m)
    dominated = m.any(axis=-1) & (gap > _underflow_gap(s.dtype))
    if wrong.any() and np.all(_dead(got, expected)[wrong] & dominated[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"In {_row(index)} a blocked key scores {_blocked_max(s, m)[index]:.6g}, far "
                f"above the allowed keys (largest {_allowed_max(s, m)[index]:.4g}), and your "
                f"weights for the allowed keys came out {np.array2string(got[index], precision=3)}."
                f" exp(allowed score - {_blocked_max(s, m)[index]:.6g}) underflows to 0: the "
                f"softmax, or the maximum you subtract, still included the blocked key. In "
                f"exact arithmetic 'softmax, zero, renormalise' equals masking first; in "
                f"floating point it does not.")
    no_renorm = attncore.softmax(s) * m
    if same(got, no_renorm) and not same(expected, no_renorm):
        sums = got.sum(axis=-1)
        return (f"Your rows sum to {np.array2string(sums.ravel()[:4], precision=3)}"
                f"{' ...' if sums.size > 4 else ''}, not 1: the softmax was taken over all "
                f"keys and the blocked weights were set to 0 afterwards, so their share of "
                f"each row is lost.")
    return None


def fully_masked_detect(args, got, expected):
    """FULLY_MASKED: every row with an allowed key is right, and a row with none is not
    all zero (NaN from -inf - (-inf) or 0/0, uniform from a finite sentinel, or other)."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    empty = ~m.any(axis=-1)
    if not empty.any() or not same(got[~empty], expected[~empty]):
        return None
    index = tuple(np.argwhere(empty & _wrong_rows(got, expected))[0])
    row = got[index]
    if np.isnan(row).any():
        what = ("NaN: with every score -inf, the row maximum is -inf and -inf - (-inf) = NaN "
                "(or the sum is 0 and 0/0 = NaN)")
    elif np.allclose(row, 1.0 / row.size):
        what = (f"uniform (1/{row.size} per key): with a finite sentinel every blocked score is "
                f"the same number, and the softmax of a constant row is uniform, so the query "
                f"reads every blocked key")
    else:
        what = f"{np.array2string(row, precision=3)}, not zeros"
    return f"In {_row(index)} the query may attend to no key at all; your row is {what}."


_SENTINELS = (-1e2, -1e3, -1e4, -3e4, -65504.0, -1e5, -1e6, -1e9)


def _with_sentinel(s, m, c, how, zeroed=False):
    """Weights with sentinel c replacing the blocked scores or added to them; zeroed: the
    blocked weights set to 0 afterwards and the rows renormalised (empty rows 0)."""
    c = np.asarray(c, dtype=s.dtype)
    filled = np.where(m, s, c) if how == "replace" else s + np.where(m, 0, c).astype(s.dtype)
    weights = attncore.softmax(filled.astype(s.dtype))
    if not zeroed:
        return weights
    weights = weights * m
    total = weights.sum(axis=-1, keepdims=True)
    return weights / np.where(total > 0, total, 1)


def sentinel_detect(args, got, expected):
    """SENTINEL: the learner's weights are those of a common finite sentinel (-1e4, -1e9,
    ...) replacing the blocked scores or added to them; failing that, any sentinel: on
    scores of 1e3 or more, every wrong row puts weight on blocked keys."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    mask_after = _with_sentinel(s, m, 0.0, "add", zeroed=True)  # that is MASK_AFTER's
    for how, zeroed in [(how, zeroed) for zeroed in (False, True) for how in ("replace", "add")]:
        if zeroed and same(got, mask_after):
            continue
        fits = []
        for c in _SENTINELS:
            with np.errstate(all="ignore"):
                wrong = _with_sentinel(s, m, c, how, zeroed)
            if same(got, wrong) and not same(expected, wrong):
                fits.append(c)
        if fits:
            c = min(fits)  # on this input, any of them gives these weights
            value = f"{c:g}" if len(fits) == 1 else f"a finite number such as {c:g}"
            verb = (f"replacing the blocked scores by {value}" if how == "replace" else
                    f"adding {value} to the blocked scores")
            if zeroed:
                index = tuple(np.argwhere(_wrong_rows(got, expected))[0])
                return (f"Your weights match {verb} instead of -inf, then setting the blocked "
                        f"weights to 0. In {_row(index)} the allowed scores reach "
                        f"{_allowed_max(s, m)[index]:.6g}, far below the blocked ones after "
                        f"the sentinel, so exp of every allowed score minus the row maximum "
                        f"underflows to 0 and your row came out "
                        f"{np.array2string(got[index], precision=3)}.")
            return f"Your weights match {verb} instead of -inf. " + _leak(
                s, m, got, c if how == "replace" else None, c if how == "add" else None)
    wrong = _wrong_rows(got, expected) & m.any(axis=-1)
    leaked = np.where(m, 0, np.nan_to_num(got)).sum(axis=-1)
    if wrong.any() and np.all(leaked[wrong] > 1e-3) and np.abs(s).max() >= 1e3:
        return "Your weights put mass on blocked keys. " + _leak(s, m, got)
    return None


def _leak(s, m, got, replaced=None, added=None):
    """Where the blocked keys got the most weight, and why the sentinel did not block them."""
    leaked = np.where(m, 0, np.nan_to_num(got)).sum(axis=-1)
    index = tuple(np.argwhere(leaked == leaked.max())[0])
    top, blocked = _allowed_max(s, m)[index], _blocked_max(s, m)[index]
    if replaced is not None:
        why = (f"the largest allowed score is {top:.6g}, not far above the sentinel "
               f"{replaced:g}")
    elif added is not None:
        why = (f"a blocked key scores {blocked:.6g}, and {blocked:.6g} + ({added:g}) = "
               f"{blocked + added:.6g} is still far above the allowed scores (largest {top:.4g})")
    else:
        why = f"the allowed scores reach {top:.6g} and the blocked ones {blocked:.6g}"
    return (f"In {_row(index)} {why}: the blocked keys get {leaked[index]:.1%} of the row. A "
            f"finite sentinel blocks a key only when it ends up far below every allowed score.")


def global_max_detect(args, got, expected):
    """GLOBAL_MAX: every wrong row is dead and its largest allowed score sits more than
    the underflow gap below the largest allowed score of the whole array, so exp of the
    row minus one global maximum is 0 throughout."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    if not wrong.any():
        return None
    top = _allowed_max(s, m)
    low = m.any(axis=-1) & (top < top.max() - _underflow_gap(s.dtype))
    if np.all(_dead(got, expected)[wrong] & low[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"{_row(index).capitalize()} has allowed scores up to {top[index]:.6g}, but "
                f"the largest allowed score in the whole array is {top.max():.6g}: after "
                f"subtracting that one maximum, every exp in the row underflows to 0, and your "
                f"row came out {np.array2string(got[index], precision=3)}.")
    return None


def unstable_detect(args, got, expected):
    """UNSTABLE: every wrong row is dead and has an allowed score above log(dtype max)
    (709.8 in float64, 88.7 in float32), where exp without the maximum subtracted is inf."""
    parts = _parts(args, got, expected)
    if parts is None:
        return None
    s, m, got = parts
    wrong = _wrong_rows(got, expected)
    if not wrong.any():
        return None
    top = _allowed_max(s, m)
    overflow = top > np.log(np.finfo(s.dtype).max)
    if np.all(_dead(got, expected)[wrong] & overflow[wrong]):
        index = tuple(np.argwhere(wrong)[0])
        return (f"{_row(index).capitalize()} has allowed scores up to {top[index]:.6g}; "
                f"exp of anything above {np.log(np.finfo(s.dtype).max):.1f} overflows to inf "
                f"in {s.dtype}, and inf / inf = NaN.")
    return None
