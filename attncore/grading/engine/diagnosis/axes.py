"""Sizes and axes in the course's terms: which size is T_q, which axis holds the keys.

A FunctionSpec's axes map each array argument, and "return" (the result; one tuple per
result for a function that returns several), to the names of its axes, the last axis
last: {"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "return": ("T_q", "T_k")}. A leading
"..." stands for any number of leading axes. Integer arguments name a size by their own
name (block_size, t_k, n_heads).
"""
import numpy as np

# What the entries along an axis are, in the words of the text (plural, then one of them).
WORDS = {
    "T_q": ("queries (rows)", "query"), "T_k": ("keys (columns)", "key"),
    "t_q": ("queries (rows)", "query"), "t_k": ("keys (columns)", "key"),
    "t": ("positions", "position"), "n": ("entries of a row", "entry"),
    "d_k": ("key features", "key feature"), "d_v": ("value features", "value feature"),
    "d": ("features of a head (the head size)", "feature"), "D": ("hidden features", "hidden feature"),
    "H": ("heads", "head"), "H_q": ("query heads", "query head"), "H_kv": ("kv heads", "kv head"),
    "B": ("sequences", "sequence"), "T": ("tokens", "token"),
}


def named(names, ndim):
    """The names of the ndim axes of an array whose axes are `names` ("..." first: any
    number of leading axes, called "axis 0", "axis 1", ...)."""
    names = tuple(names)
    if names and names[0] == "...":
        rest = names[1:]
        lead = ndim - len(rest)
        return [f"axis {a}" for a in range(max(lead, 0))] + list(rest)[max(-lead, 0):]
    return list(names) if len(names) == ndim else [f"axis {a}" for a in range(ndim)]


def result_names(spec, index=None):
    """The axis names of the result (index: of result `index` of several), or ()."""
    names = spec.axes.get("return", ())
    if index is not None:
        return names[index] if index < len(names) and isinstance(names[index], tuple) else ()
    return names if not names or isinstance(names[0], str) else ()


def sizes(spec, arguments):
    """{size name: size} of the arguments: their axes (spec.axes) and their integers."""
    found = {}
    for name, value in arguments.items():
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            found[name] = int(value)
        elif isinstance(value, np.ndarray) and name in spec.axes:
            for axis, size in zip(named(spec.axes[name], value.ndim), value.shape):
                if not axis.startswith("axis"):
                    found.setdefault(axis, int(size))
    if "n_q_heads" in found and "n_kv_heads" in found and found["n_kv_heads"]:
        found.setdefault("G", found["n_q_heads"] // found["n_kv_heads"])
    if "H_q" in found and "H_kv" in found and found["H_kv"]:
        found.setdefault("G", found["H_q"] // found["H_kv"])
    if "D" in found and found.get("n_heads"):
        found.setdefault("d", found["D"] // found["n_heads"])
    return found


def names_of(size, known):
    """The names of the sizes equal to size."""
    return [name for name, value in known.items() if value == size]


def size(size, known):
    """'T_k = 5', '2 (H_kv or G)' or '7': a size with the names it may be."""
    names = names_of(size, known)
    if len(names) == 1:
        return f"{names[0]} = {size}"
    return f"{size} ({' or '.join(names)})" if names else str(size)


def shape(dims, known):
    """'(T_q, T_k) = (3, 5)' when every size has one name, else '(3, 5)' with the names
    the sizes may be."""
    dims = tuple(int(n) for n in dims)
    names = [names_of(n, known) for n in dims]
    numbers = f"({', '.join(map(str, dims))}{',' if len(dims) == 1 else ''})"
    if all(len(n) == 1 for n in names):
        return f"({', '.join(n[0] for n in names)}{',' if len(dims) == 1 else ''}) = {numbers}"
    told = [f"{n} = {' or '.join(m)}" for n, m in zip(dims, names) if m]
    return numbers + (f" ({'; '.join(dict.fromkeys(told))})" if told else "")


def words(axis, plural=True):
    """'keys (columns)', or 'key', for an axis name; the name itself when the text has no
    word for it."""
    pair = WORDS.get(axis)
    return (pair[0] if plural else pair[1]) if pair else axis


def mask_of(arguments, shape):
    """The first boolean argument that broadcasts to shape, broadcast to it, or None."""
    for value in arguments.values():
        if isinstance(value, np.ndarray) and value.dtype == bool:
            try:
                return np.broadcast_to(value, shape)
            except ValueError:
                continue
    return None


def argument_shapes(spec, arguments):
    """{argument name: its named shape} for the array arguments, e.g. {"Q": "(T_q, d_k)"}."""
    return {name: "(" + ", ".join(named(spec.axes.get(name, ()), value.ndim)) + ")"
            for name, value in arguments.items()
            if isinstance(value, np.ndarray) and name in spec.axes}
