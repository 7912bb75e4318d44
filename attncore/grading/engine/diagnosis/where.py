"""Where a wrong result differs from the expected one: which rows, columns, heads, tiles
or masked entries, and what the wrong entries hold there.

where(spec, witness) -> Finding or None. It reads the entries that differ along each
axis of the result (named by FunctionSpec.axes), relates them to the tiles of a
block_size, to a mask among the arguments, and to the values of a per-row argument
(lengths[b] = t_k: no padding), and says what the learner's entries are there (0, NaN,
the expected entries of another row).
"""
import numpy as np

from ..compare import differing, same
from . import axes
from .witness import Finding

ONLY = "wrong only in part of the result"
MASKED_ONLY = "wrong only where the mask blocks"


def _ranges(indices):
    """'2', '2-4', '0, 3, 5-6' for sorted indices."""
    runs, start = [], None
    for i, index in enumerate(indices):
        if start is None:
            start = index
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            runs.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ", ".join(runs)


def _tiles(indices, n, block, plural):
    """'queries (rows) past the first tile (2-4)' or 'only the last tile (4-6)' when indices
    are whole tiles of block_size along an axis of n, else None."""
    if not block or block >= n:
        return None
    starts = list(range(0, n, block))
    whole = [s for s in starts if set(range(s, min(s + block, n))) <= set(indices)]
    covered = sorted(i for s in whole for i in range(s, min(s + block, n)))
    if covered != sorted(indices) or not whole:
        return None
    if whole == starts[1:]:
        return f"the {plural} past the first tile ({starts[1]}-{n - 1})"
    if whole == starts[-1:]:
        return f"only the last tile ({starts[-1]}-{n - 1})"
    if whole == starts[:1]:
        return f"only the first tile (0-{block - 1})"
    return "tiles starting at " + ", ".join(map(str, whole))


def _per_index(arguments, axis_size, indices, known):
    """What a 1-D argument of the axis's length holds at these indices ('lengths[1] = 4 =
    t_k'), or ''."""
    for name, value in arguments.items():
        if isinstance(value, np.ndarray) and value.ndim == 1 and len(value) == axis_size \
                and np.issubdtype(value.dtype, np.integer):
            told = []
            for i in indices[:4]:
                v = int(value[i])
                equal = [k for k, n in known.items() if n == v and k != name]
                told.append(f"{name}[{i}] = {v}" + (f" = {equal[0]}" if equal else "")
                            + (": nothing to block (no padding)" if equal and "t_k" in equal else "")
                            + (": no real key" if v == 0 else ""))
            return "; ".join(told)
    return ""


def _held(got, expected, mask):
    """What the learner's entries are where they differ: 0, NaN, inf, the opposite value."""
    mine = got[mask]
    if mine.dtype == bool:
        if np.all(mine) or not np.any(mine):
            return f"yours are all {bool(mine.flat[0])} there"
        return ""
    with np.errstate(all="ignore"):
        if np.all(np.isnan(mine)):
            return "yours are NaN there"
        if np.all(np.isinf(mine)):
            return "yours are inf there"
        if np.all(mine == 0):
            return "yours are 0 there"
    return ""


def _source_rows(got, expected, axis, indices, known):
    """'your 0 is the expected 3; your 1 is the expected 4: every one 3 further on (an
    offset of block_size = 3 forgotten?)': where the learner's wrong slices come from."""
    pairs = []
    for i in indices:
        mine = np.take(got, i, axis=axis)
        for j in range(expected.shape[axis]):
            if j != i and same(mine, np.take(expected, j, axis=axis)):
                pairs.append((i, j))
                break
    if not pairs:
        return ""
    told = "; ".join(f"your {i} is the expected {j}" for i, j in pairs[:3])
    shifts = {j - i for i, j in pairs}
    if len(shifts) == 1 and len(pairs) > 1:
        k = shifts.pop()
        names = [name for name, n in known.items() if n == abs(k)]
        told += (f": each is the one {abs(k)} {'further on' if k > 0 else 'before'}, an offset of "
                 f"{abs(k)}{' (' + ' or '.join(names) + ')' if names else ''} forgotten or added?")
    return told


def where(spec, witness):
    """Finding(ONLY or MASKED_ONLY, ...) when only part of the result is wrong, or None."""
    got, expected = witness.got, witness.expected
    if isinstance(expected, tuple):  # several results, each read on its own
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return None
        wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if not same(g, e)]
        found = [(i, where_in(spec, witness.arguments, got[i], expected[i], axes.result_names(spec, i)))
                 for i in wrong]
        said = [f"Result {i} of the tuple: {f.detail}" for i, f in found if f]
        right = [i for i in range(len(expected)) if i not in wrong]
        if right:
            said.insert(0, f"Result{'s' if len(right) > 1 else ''} {', '.join(map(str, right))} of "
                           f"the tuple {'are' if len(right) > 1 else 'is'} right; "
                           f"{', '.join(map(str, wrong))} not.")
        return Finding(ONLY, " ".join(said)) if said else None
    return where_in(spec, witness.arguments, got, expected, axes.result_names(spec))


def where_in(spec, arguments, got, expected, names):
    """where() for one result array."""
    try:
        got, expected = np.asarray(got), np.asarray(expected)
    except Exception:
        return None
    if got.shape != expected.shape or expected.ndim == 0 or got.dtype == object:
        return None
    wrong = differing(got, expected, spec.rtol)
    if not wrong.any() or wrong.all():
        return None
    names = axes.named(names, expected.ndim)
    known = axes.sizes(spec, arguments)
    said = []
    mask = axes.mask_of(arguments, expected.shape)
    if mask is not None and not wrong[mask].any():
        blocked = int((~mask).sum())
        scope = "every entry" if wrong[~mask].all() else f"{int(wrong.sum())} of the {blocked} entries"
        return Finding(MASKED_ONLY, (
            f"Your result is right wherever the mask is True, and wrong at {scope} where the mask "
            f"is False (the blocked keys){': ' + _held(got, expected, wrong) if _held(got, expected, wrong) else ''}."),
            "a blocked key gets weight exactly 0: set its score to -inf before the exp (or zero "
            "its weight), and normalise over the allowed keys only.")
    if mask is not None:
        empty = ~mask.any(axis=-1)
        if empty.any() and np.array_equal(wrong.any(axis=-1), empty):
            said.append(f"only the rows with no allowed key (every key masked) are wrong"
                        f"{': ' + _held(got, expected, wrong) if _held(got, expected, wrong) else ''}")
    for axis, n in enumerate(expected.shape):
        others = tuple(a for a in range(expected.ndim) if a != axis)
        hit = sorted(int(i) for i in np.flatnonzero(wrong.any(axis=others)))
        if len(hit) == n or len(said) >= 2:
            continue
        word = axes.words(names[axis])
        block = arguments.get("block_size") if names[axis] in ("T_q", "T_k") else None
        tiles = _tiles(hit, n, block, word)
        one = axes.words(names[axis], plural=False)
        place = (f"the last {one} ({n - 1} of 0-{n - 1})" if hit == [n - 1] else
                 f"the first {one} (0 of 0-{n - 1})" if hit == [0] else
                 f"{word} {_ranges(hit)} (of 0-{n - 1})")
        if tiles:
            place = f"{word} {_ranges(hit)}: {tiles} of block_size = {block}"
        sentence = f"only {place} differ{'s' if len(hit) == 1 else ''} (axis {axis})"
        told = _per_index(arguments, n, hit, known)
        if told:
            sentence += f": {told}"
        source = _source_rows(got, expected, axis, hit, known)
        if source:
            sentence += f"; along that axis {source}"
        held = _held(got, expected, wrong)
        slab = np.take(got, hit, axis=axis)
        if slab.dtype == bool and slab.size and (slab.all() or not slab.any()) and expected.ndim > 1:
            every = " and every ".join(axes.words(names[a], plural=False) for a in others)
            held = f"your {word} {_ranges(hit)} are {bool(slab.flat[0])} for every {every}"
        said.append(sentence + (f"; {held}" if held else ""))
    if not said:
        return None
    return Finding(ONLY, "Where it differs: " + "; ".join(said) + ".",
                   "follow the input above through the part of your code that produces those "
                   "entries: the rest is right.")


MOVED = "the right numbers in the wrong places"


def moved(spec, witness):
    """Finding(MOVED) for a result whose entries are all copied from one array argument of
    distinct entries (a reshape, a transpose, a split), as the expected result's are: where
    the learner's wrong entries come from, and where they should; None otherwise."""
    try:
        got, expected = np.asarray(witness.got), np.asarray(witness.expected)
    except Exception:
        return None
    if got.shape != expected.shape or not np.issubdtype(got.dtype, np.floating):
        return None
    for name, x in witness.arguments.items():
        if not (isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating)
                and x.ndim >= 2 and np.unique(x).size == x.size):
            continue
        place = {value: i for i, value in enumerate(x.ravel().tolist())}
        mine = [place.get(v) for v in got.ravel().tolist()]
        theirs = [place.get(v) for v in expected.ravel().tolist()]
        if None in mine or None in theirs:
            continue
        wrong = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
        if not wrong:
            return None
        at = [tuple(int(k) for k in np.unravel_index(i, got.shape)) for i in wrong]
        src = [tuple(int(k) for k in np.unravel_index(mine[i], x.shape)) for i in wrong]
        dst = [tuple(int(k) for k in np.unravel_index(theirs[i], x.shape)) for i in wrong]
        told = "; ".join(f"your entry {a} is {name}{list(s)}, where {name}{list(d)} belongs"
                         for a, s, d in list(zip(at, src, dst))[:3])
        mixed = [axis for axis in range(x.ndim) if any(s[axis] != d[axis] for s, d in zip(src, dst))]
        names = axes.named(spec.axes.get(name, ()), x.ndim)
        kept = [axes.words(names[a]) for a in range(x.ndim) if a not in mixed]
        mixing = ("; your result mixes entries of different "
                  f"{' and '.join(axes.words(names[a]) for a in mixed)}"
                  + (f" (the {' and '.join(kept)} stay right)" if kept else ""))
        return Finding(MOVED, (
            f"Every entry of your result is a number of {name}, as it should be, but "
            f"{len(wrong)} of the {got.size} come from the wrong place: {told}{mixing}."),
            "write the index of one entry of the result and the index of the number of the "
            "input it must hold; then check each reshape, transpose and slice against that.")
    return None
