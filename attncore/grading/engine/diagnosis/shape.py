"""How a wrong result differs from the expected one as a whole: a constant factor or
offset, a factor or an offset per row, a sign, the reciprocal, exp(-x) for exp(x), a
transpose, an order or a shift along an axis, an integer that wrapped around, a count
off by one, a mask inverted or with too many or too few entries, one answer for every
input.

how(spec, witness) -> [Finding], the most telling first; across(witnesses) -> Finding or
None for what only several inputs show.
"""
from dataclasses import replace
from fractions import Fraction

import numpy as np

from ..compare import same, tolerances
from . import axes
from .generic import SCALED as CONSTANT_FACTOR
from .witness import Finding

ROW_FACTOR = "each row off by a factor of its own"
ROW_OFFSET = "each row shifted by a constant of its own"
OFFSET = "off by a constant"
SIGN = "the sign flipped"
RECIPROCAL = "the reciprocal of the expected"
NEGATED_EXPONENT = "largest where the expected are smallest (exp(-x) for exp(x))"
TRANSPOSED = "axes swapped (a transpose)"
SHIFTED = "shifted along an axis"
REORDERED = "the right slices in another order"
WRAPPED = "an integer overflow (the value wrapped around)"
FACTOR_TOO_MANY = "a factor too many"
FACTOR_MISSING = "a factor missing"
FACTOR_REPLACED = "a factor replaced by another"
OFF_BY_ONE = "off by one"
NOT_AN_INTEGER = "not an integer"
INVERTED = "the mask inverted"
TOO_FEW = "too few entries True"
TOO_MANY = "too many entries True"
CONSTANT = "the same result for every input"


def _close(a, b):
    """a and b agree as the grader compares (exact for booleans)."""
    return same(a, b)


def _fraction(r):
    """p/q (a Fraction with q <= 12) equal to r within 1e-9, or None."""
    if not np.isfinite(r) or r == 0:
        return None
    f = Fraction(r).limit_denominator(12)
    return f if abs(float(f) - r) <= 1e-9 * abs(r) else None


def _factor_words(c, known):
    """'3/2', '1/T_k = 1/5' or '0.3' for a factor, with what it may be made of."""
    f = _fraction(c)
    text = f"{f.numerator}/{f.denominator}" if f is not None and f.denominator > 1 else (
        str(f.numerator) if f is not None else f"{c:.4g}")
    for name, n in known.items():
        for value, form in ((n, name), (1 / n if n else 0, f"1/{name}"),
                            (np.sqrt(n), f"sqrt({name})"), (1 / np.sqrt(n) if n else 0, f"1/sqrt({name})")):
            if n > 1 and np.isclose(c, value, rtol=1e-6):
                return f"{text} (= {form}, {name} = {n})"
    return text


def _number(spec, arguments, got, expected):
    """A scalar result: an overflow, a ratio, one too many or too few, a fraction."""
    g, e = float(np.asarray(got)), float(np.asarray(expected))
    if not np.isfinite(g):
        return []
    known = axes.sizes(spec, arguments)
    if np.issubdtype(np.asarray(expected).dtype, np.integer) and g != round(g):
        return [Finding(NOT_AN_INTEGER, f"Your result {g:g} is not a whole number: true division "
                                        f"(/) where integer division (//) belongs?",
                        "use // (integer division) for counts and indices, or int(...) at the end.")]
    findings = []
    for bits in (32, 64):
        wrapped = (int(e) + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
        if e == int(e) and g == wrapped != e:
            findings.append(Finding(WRAPPED, (
                f"Your result {int(g)} is the expected {int(e)} wrapped around modulo 2**{bits}: a "
                f"product in int{bits} overflowed (int{bits} holds at most {2 ** (bits - 1) - 1})."),
                f"compute the product with Python ints (multiply the arguments with *), not in a "
                f"NumPy array of dtype int{bits} (np.prod(..., dtype=np.int{bits}) wraps around)."))
    ratio = _fraction(g / e) if e else None
    if ratio is not None and ratio != 1:
        p, q = ratio.numerator, ratio.denominator
        names = {value: name for name, value in known.items()}
        if q == 1 and p > 1:
            hint = f" ({names[p]} = {p}, counted twice?)" if p in names else ""
            findings.append(Finding(FACTOR_TOO_MANY, f"Your result is {p} times the expected "
                                                     f"{e:g}: a factor of {p} too many{hint}.",
                                    "write the product out factor by factor and check each one "
                                    "against the definition: each counted once, none extra."))
        elif p == 1 and q > 1:
            hint = f" ({names[q]} = {q}?)" if q in names else ""
            findings.append(Finding(FACTOR_MISSING, f"Your result is the expected {e:g} divided "
                                                    f"by {q}: a factor of {q} missing{hint}.",
                                    "write the product out factor by factor and check that none "
                                    "is missing."))
        elif p > 0:
            findings.append(Finding(FACTOR_REPLACED, (
                f"Your result is {p}/{q} of the expected {e:g}: one factor too many and one "
                f"missing, or a factor {q} replaced by {p}?"),
                f"look for a {p} where a {q} belongs (or a count one too high or too low)."))
    if abs(g - e) == 1:
        findings.append(Finding(OFF_BY_ONE, f"Your result is {g:g}, the expected {e:g} "
                                            f"{'plus' if g > e else 'minus'} one.",
                                "check where counting starts (0 or 1) and whether a bound is "
                                "included."))
    return findings


def _take(a, axis, index):
    return np.take(a, index, axis=axis)


def _along(spec, got, expected):
    """Transposes, shifts and reorderings along the axes of the result."""
    names = axes.named(axes.result_names(spec), expected.ndim)
    findings = []
    for a in range(expected.ndim):
        for b in range(a + 1, expected.ndim):
            if expected.shape[a] == expected.shape[b] > 1 and _close(np.swapaxes(got, a, b), expected):
                findings.append(Finding(TRANSPOSED, (
                    f"Your result is the expected one transposed, axes {a} and {b} swapped: "
                    f"{axes.words(names[a])} where the {axes.words(names[b])} belong, and the "
                    f"other way round."), "check the order of the axes: transpose where the text "
                                          "says, and only there."))
    for a, n in enumerate(expected.shape):
        if n < 3:  # two entries in another order are as often chance as a shift
            continue
        source = [[j for j in range(n) if _close(_take(got, a, i), _take(expected, a, j))]
                  for i in range(n)]
        word = axes.words(names[a], plural=False)
        for k in (1, 2, 3, -1, -2, -3):
            shifted = [i for i in range(n) if 0 <= i - k < n]
            if len(shifted) >= max(1, n - 3) and all(i - k in source[i] for i in shifted) and \
                    not all(i in source[i] for i in shifted):
                direction = "later" if k > 0 else "earlier"
                findings.append(Finding(SHIFTED, (
                    f"Your result is the expected one shifted by {abs(k)} along axis {a} "
                    f"({axes.words(names[a])}): your {word} i holds what the expected has at "
                    f"{word} i {'-' if k > 0 else '+'} {abs(k)} (everything {abs(k)} {direction})."),
                    "look for an index or a bound off by one (or by a few): a +1, a <= for <, "
                    "a slice that starts or stops one too early."))
                break
        else:
            if all(len(s) == 1 for s in source) and sorted(s[0] for s in source) == list(range(n)) \
                    and any(s[0] != i for i, s in enumerate(source)):
                order = [s[0] for s in source]
                findings.append(Finding(REORDERED, (
                    f"Along axis {a} ({axes.words(names[a])}) your result holds the right "
                    f"{axes.words(names[a])} in another order: your {word}s 0..{n - 1} are the "
                    f"expected {order}."), f"check how the {axes.words(names[a])} are indexed "
                                           f"(the order of a reshape, a transpose or a loop)."))
    return findings


def _boolean(spec, got, expected):
    if got.dtype != bool:
        return []
    findings = []
    if np.array_equal(got, ~expected):
        findings.append(Finding(INVERTED, "Your mask is True exactly where the expected one is "
                                          "False: the condition is inverted.",
                                "True means 'may attend': swap the condition (or drop the ~)."))
    findings += _along(spec, got, expected)
    missing, extra = int((expected & ~got).sum()), int((got & ~expected).sum())
    if missing and not extra:
        findings.append(Finding(TOO_FEW, f"Your mask is False at {missing} entries where it should "
                                         f"be True, and True nowhere it should not be: it "
                                         f"blocks too much.", "allow every entry the text allows."))
    if extra and not missing:
        findings.append(Finding(TOO_MANY, f"Your mask is True at {extra} entries where it should be "
                                          f"False, and False nowhere it should not be: it allows "
                                          f"too much.", "block every entry the text blocks."))
    return findings


def _per_row(spec, arguments, got, expected):
    """A factor or an offset per row (last axis), and what it is made of."""
    if expected.ndim < 1 or expected.shape[-1] < 2:
        return []
    findings = []
    with np.errstate(all="ignore"):
        c = (got * expected).sum(-1) / (expected * expected).sum(-1)
        d = (got - expected).mean(-1)
        prod = got * expected
    rows = [a for a in arguments.values() if isinstance(a, np.ndarray) and a.shape == expected.shape
            and np.issubdtype(a.dtype, np.floating)]
    if np.all(np.isfinite(c)) and _close(got, c[..., None] * expected) and not np.allclose(c, c.flat[0]):
        made = ""
        for x in rows:
            top = x.astype(float).max(-1)
            for form, value in (("exp(the row's maximum)", np.exp(top)), ("exp(-the row's maximum)", np.exp(-top))):
                if np.allclose(c, value, rtol=1e-6):
                    made = f": each factor is {form}"
        sums = got.astype(float).sum(-1)
        said = ", ".join(f"{v:.4g}" for v in np.ravel(c)[:4])
        findings.append(Finding(ROW_FACTOR, (
            f"Row by row your result is the expected one times its own factor ({said}"
            f"{', ...' if c.size > 4 else ''}){made}; your rows sum to "
            f"{', '.join(f'{v:.4g}' for v in np.ravel(sums)[:4])}."),
            "look at what each row is divided by (or multiplied by): the normaliser of a row is "
            "the sum over that row of the same terms that are in the numerator."))
    elif np.all(np.isfinite(d)) and _close(got, expected + d[..., None]) and not np.allclose(d, d.flat[0]):
        made = ""
        for x in rows:
            for form, value in (("minus the row mean", -x.mean(-1)), ("minus the row maximum", -x.max(-1)),
                                ("minus the row minimum", -x.min(-1))):
                if np.allclose(d, value, rtol=1e-6, atol=1e-9):
                    made = f": each shift is {form} of the input"
        findings.append(Finding(ROW_OFFSET, (
            f"Row by row your result is the expected one plus a constant of its own "
            f"({', '.join(f'{v:.4g}' for v in np.ravel(d)[:4])}{', ...' if d.size > 4 else ''})"
            f"{made}."), "nothing is added to or subtracted from a whole row here: remove the "
                         "shift."))
    elif np.all(np.isfinite(prod)) and np.all(prod > 0) and _close(
            prod, np.broadcast_to(prod.mean(-1, keepdims=True), prod.shape)):
        findings.append(Finding(NEGATED_EXPONENT, (
            "Row by row your entries are inversely proportional to the expected ones: largest "
            "where they should be smallest, as exp(-x) is to exp(x)."),
            "look for a sign flipped inside an exp: exp(s - m), not exp(m - s)."))
    return findings


def _array(spec, arguments, got, expected):
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(expected))):
        return []
    known = axes.sizes(spec, arguments)
    findings = []
    flat, ref = got.astype(float).ravel(), expected.astype(float).ravel()
    c = float(ref @ flat / (ref @ ref)) if ref.any() else 0.0
    if ref.any() and not np.isclose(c, 1) and _close(got, c * expected):
        if np.isclose(c, -1):
            findings.append(Finding(SIGN, "Your result is the negative of the expected one.",
                                    "look for a subtraction the wrong way round (b - a for a - b) "
                                    "or a minus sign too many."))
        else:
            findings.append(Finding(CONSTANT_FACTOR, (
                f"Right values times a constant factor: your result is the expected one times "
                f"{_factor_words(c, known)}, every entry by the same factor."),
                "look for a division or a product too many (or too few) applied to the whole "
                "result: by a size such as T_k, d_k or sqrt(d_k)."))
    if np.all(ref != 0):
        with np.errstate(all="ignore"):
            if _close(got, 1 / expected):
                findings.append(Finding(RECIPROCAL, "Your result is the reciprocal (1/x) of the "
                                                    "expected one.",
                                        "look for a division the wrong way round, or exp(-x) "
                                        "where exp(x) belongs."))
    offset = float((flat - ref).mean())
    if not np.isclose(offset, 0, atol=tolerances(expected)[1]) and _close(got, expected + offset):
        findings.append(Finding(OFFSET, f"Your result is the expected one plus {offset:.4g}: every "
                                        f"entry shifted by the same amount.",
                                "look for a term added to (or subtracted from) everything."))
    findings += _per_row(spec, arguments, got, expected)
    findings += _along(spec, got, expected)
    return findings


def how(spec, witness):
    """[Finding] of how the learner's result differs from the expected one, the most
    telling first; [] when no description of the whole fits."""
    got, expected = witness.got, witness.expected
    if isinstance(expected, tuple):  # several results, each read on its own
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return []
        findings = []
        for index, (mine, theirs) in enumerate(zip(got, expected)):
            if not same(mine, theirs):
                alone = replace(spec, axes={**spec.axes, "return": axes.result_names(spec, index)})
                findings += [Finding(f.headline, f"Result {index} of the tuple: {f.detail}", f.fix)
                             for f in how(alone, _alone(witness, mine, theirs))]
        return findings
    try:
        g, e = np.asarray(got), np.asarray(expected)
    except Exception:
        return []
    if g.shape != e.shape or g.dtype == object:
        return []
    if e.dtype == bool:
        return _boolean(spec, g, e) if e.ndim else []
    if not np.issubdtype(g.dtype, np.number):
        return []
    if e.ndim == 0:
        return _number(spec, witness.arguments, g, e)
    return _array(spec, witness.arguments, g, e)


def _alone(witness, got, expected):
    """The witness with one result of several in place of the whole."""
    from .witness import Witness

    outcome = type(witness.outcome)(returned=got)
    return Witness(witness.description, witness.arguments, expected, outcome, False)


def across(witnesses):
    """CONSTANT when the learner returned the same value for every case of the suite while
    the expected values differ, else None."""
    done = [w for w in witnesses if w.raised is None and w.outcome.stopped is None]
    if len(done) < 3 or any(not same(w.got, done[0].got) for w in done[1:]):
        return None
    if all(same(w.expected, done[0].expected) for w in done[1:]):
        return None
    shown = np.array2string(np.asarray(done[0].got), threshold=8) if not isinstance(
        done[0].got, tuple) else repr(done[0].got)
    return Finding(CONSTANT, (f"Your function returned {shown} for every one of the {len(done)} "
                              f"inputs of this test, whatever the arguments (always {shown})."),
                   "the result must depend on the arguments: follow one input through your code "
                   "by hand.")
