"""Diagnosis that reads the error: what a wrong result is, before (and apart from) the
catalogue of misconceptions.

For the first case a learner's function fails, it says in the course's terms

- where the result differs (where.py): only some rows, columns, heads or tiles, only the
  entries a mask blocks, with what the wrong entries hold;
- how (shape.py): a constant factor or offset, a factor per row, a sign, the reciprocal,
  a transpose, a shift or an order along an axis, an integer that wrapped around;
- which promise breaks (promises.py): rows that sum to 1, nothing on blocked keys,
  independence from blocked scores and from the order of the keys;
- what a raw NumPy error means (errors.py): which arrays met with which shapes.

When no catalogued misconception names the mistake, every case of the suite is run, and
a derived mistake (derived.py: a right answer with one thing changed, in its code or in
its input) that does what the learner's function did on all of them names it; failing
that, the most telling of the descriptions above does.
"""
import numpy as np

from ..compare import same
from . import errors, promises, shape, where
from .derived import _run as derived_run
from .derived import derive
from .generic import generic
from .witness import Finding, Witness, guarded

__all__ = ["Finding", "Witness", "describe", "explain"]
MAX_LINES = 3  # sentences of description added under a named mistake


def _safe(default, function, *arguments):
    """function(*arguments), or default when it raises (diagnosis.witness.guarded)."""
    with guarded():
        return function(*arguments)
    return default


def describe(spec, witness):
    """[Finding] that describe how, where and which promise a returned result breaks, the
    most telling first (each headline once)."""
    relocated = _safe(None, where.moved, spec, witness)
    how = [f for f in _safe([], shape.how, spec, witness)
           if not (relocated and f.headline in (shape.ROW_OFFSET, shape.OFFSET))]
    found = [relocated, *how[:2], _safe(None, where.where, spec, witness),
             *_safe([], promises.broken, spec, witness)[:2]]
    seen, kept = set(), []
    for finding in found:
        if finding is not None and finding.headline not in seen:
            seen.add(finding.headline)
            kept.append(finding)
    return kept


def _with_lines(detail, findings, skip=""):
    lines = [f.detail for f in findings if f.detail and f.detail != skip][:MAX_LINES]
    return "\n".join(filter(None, [detail, *lines]))


def explain(spec, witnesses, failure, more, call):
    """(headline, detail, fix) for the last witness, which failed.

    failure: what the engine found there (probe.Failure: a catalogued misconception, a
    generic finding, or a problem that needs no diagnosis); more() runs the rest of the
    suite's cases and returns their witnesses; call(arguments, measure_memory) calls the
    learner's function again, for the metamorphic checks.
    """
    witness = witnesses[-1]
    if failure.kind == "raised":
        return _raised(spec, witnesses, failure, more)
    if failure.kind != "values":
        return failure.headline, failure.detail, failure.fix
    found = describe(spec, witness)
    everything = None
    if failure.named and _number(witness.got) and failure.misconception is not None:
        everything = witnesses + more()  # one number matches a variant by chance: check all
        if _contradicted(spec, failure.misconception, everything):
            return _unnamed(spec, witness, everything, found, call)
    if failure.named and failure.generic:  # NaN, a shape, a rounding: a derived mistake says more
        derived = _safe(None, derive, spec, everything or witnesses + more())
        said = f"{failure.headline[0].upper()}{failure.headline[1:]}: {failure.detail}"
        if derived is not None:
            return derived.headline, _with_lines(f"{derived.detail}\n{said}", found), derived.fix
    if failure.named:
        return failure.headline, _with_lines(failure.detail, found), failure.fix
    return _unnamed(spec, witness, everything or witnesses + more(), found, call)


def _number(value):
    """Is value one number (not a bool: a bool's cases are built to be answered wrongly by
    one misconception each)?"""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _contradicted(spec, misconception, witnesses):
    """Does a failing witness show that the learner's function is not the misconception's
    (its variants apply there, and none returns what the learner returned)?"""
    for w in witnesses:
        if w.passed or w.raised is not None or w.costly or not misconception.variants:
            continue
        outputs = [out for out in (_variant_output(v, w.arguments) for v in misconception.variants)
                   if out is not None]
        if outputs and not any(same(w.got, out, spec.rtol) for out in outputs):
            return True
    return False


def _variant_output(variant, arguments):
    with guarded():
        return derived_run(variant, arguments)[0]
    return None


def _unnamed(spec, witness, everything, found, call):
    """(headline, detail, fix) when no catalogued misconception names the mistake."""
    constant = _safe(None, shape.across, everything)
    found = ([constant] if constant else []) + found
    derived = _safe(None, derive, spec, everything)
    if derived is not None:
        return derived.headline, _with_lines(derived.detail, found), derived.fix
    if not found and not witness.costly:
        found = _safe([], promises.metamorphic, spec, witness, call)
    if found:
        lead = found[0]
        return lead.headline, _with_lines(lead.detail, found[1:], skip=lead.detail), lead.fix
    return generic(witness.got, witness.expected)


def _raised(spec, witnesses, failure, more):
    """A call that raised: the catalogue's name, else a derived mistake that raises the
    same, else the error translated."""
    witness = witnesses[-1]
    error_type, error_message = witness.raised
    said = _safe(None, errors.translate, spec, witness.arguments, error_type, error_message)
    raised = f"Your function raised {error_type}: {error_message}"
    if failure.named:
        extra = [Finding("", said[1])] if said else []
        return failure.headline, _with_lines(failure.detail, extra), failure.fix
    derived = _safe(None, derive, spec, witnesses + more())
    if derived is not None and derived.headline:
        return derived.headline, "\n".join(filter(None, [raised, derived.detail,
                                                          said[1] if said else ""])), derived.fix
    guess = derived.detail if derived is not None else ""
    if said is not None:
        return said[0], "\n".join(filter(None, [raised, said[1], guess])), said[2]
    return failure.headline, failure.detail, failure.fix

