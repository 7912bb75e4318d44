"""Keep grading honest: learners write the function, and cannot rewrite the grader.

Three defences, from cheapest to strongest:
- forbid: while the learner's function runs, the attncore functions it is asked
  to write raise instead of answering (in attncore and in the notebook's globals);
- verify_integrity: before every check, the grader's own functions, numpy's testing
  helpers and the builtins must be the objects they were when attncore.grading was
  first imported;
- tampering_in_source: a static scan of the solution cells, run by nbgrader after
  execution (attncore.grading.nbgrader_plugins), so that replacing the checker from
  a solution cell cannot earn points even if it defeats the runtime check.
"""
import ast
import builtins
import contextlib
import sys

import numpy as np
import numpy.testing

from .feedback import FeedbackError

_GUARDED_MODULES = ("attncore.grading", "attncore.grading.probe", "attncore.grading.guard",
                    "attncore.grading.feedback", "numpy.testing")


# The builtins the grader relies on (not input/print: the kernel swaps those itself).
_GUARDED_BUILTINS = ("abs", "all", "any", "bool", "callable", "dict", "float", "getattr",
                     "int", "isinstance", "len", "list", "max", "min", "next", "range", "repr",
                     "setattr", "sorted", "str", "sum", "tuple", "type", "zip", "AssertionError",
                     "Exception", "ValueError")


def _snapshot():
    """Identity of every public callable in the guarded modules and of key builtins."""
    objects = {f"builtins.{n}": getattr(builtins, n) for n in _GUARDED_BUILTINS}
    for module_name in _GUARDED_MODULES:
        module = sys.modules.get(module_name)
        if module is not None:
            objects.update({f"{module_name}.{n}": v for n, v in vars(module).items()
                            if callable(v) and not n.startswith("__")})
    for name in ("allclose", "isclose", "array_equal", "asarray", "isfinite", "all", "any"):
        objects[f"numpy.{name}"] = getattr(np, name)
    return objects


_ORIGINAL = {}


def record_originals():
    """Remember the grader's objects; called once attncore.grading is fully imported."""
    if not _ORIGINAL:
        _ORIGINAL.update(_snapshot())


def verify_integrity():
    """Raise FeedbackError when a guarded object was replaced since the first import."""
    current = _snapshot()
    replaced = sorted(name for name, obj in _ORIGINAL.items() if current.get(name) is not obj)
    if replaced:
        raise FeedbackError(
            "tampering with the grader detected: "
            f"{', '.join(replaced[:5])} {'was' if len(replaced) == 1 else 'were'} replaced "
            "after the grader loaded. Checks cannot be trusted in this kernel, so this test "
            "gives no points. Remove the code that reassigns them, restart the kernel and run "
            "all cells."
        )


@contextlib.contextmanager
def forbid(graded, names, function):
    """While the block runs, attncore.<name> and the function's global copies raise.

    names are attributes of attncore, dotted for submodules ("masks.causal").
    """
    import attncore

    def owner_and_attribute(name):
        *path, attribute = name.split(".")
        owner = attncore
        for part in path:
            owner = getattr(owner, part)
        return owner, attribute

    def tripwire(name):
        def refuse(*args, **kwargs):
            raise FeedbackError(
                f"{graded}: you called attncore.{name}, which this exercise does not allow "
                f"(it is what you are asked to write, or it would do the work for you). Use "
                f"NumPy and the helpers the exercise allows instead."
            )
        return refuse

    originals = {name: getattr(*owner_and_attribute(name)) for name in names}
    namespace = getattr(function, "__globals__", {})
    aliases = {key: name for key, value in namespace.items()
               for name, original in originals.items() if value is original}
    try:
        for name in names:
            setattr(*owner_and_attribute(name), tripwire(name))
        for key, name in aliases.items():
            namespace[key] = tripwire(name)
        yield
    finally:
        for name, original in originals.items():
            setattr(*owner_and_attribute(name), original)
        for key, name in aliases.items():
            namespace[key] = originals[name]


_PROTECTED_ROOTS = {"attncore", "numpy", "np", "builtins", "__builtins__", "sys", "importlib",
                    "nbgrader", "IPython"}
_FORBIDDEN_CALLS = {"setattr", "delattr", "__import__", "exec", "eval", "compile",
                    "get_ipython", "globals", "vars"}


def tampering_in_source(source):
    """Reasons why a solution cell's source touches the grader or the interpreter ([] if none)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # a syntax error fails the learner's own cell; nothing to guard
    roots = set(_PROTECTED_ROOTS)
    for node in ast.walk(tree):  # names the cell binds to protected modules
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                if (module or alias.name).split(".")[0] in _PROTECTED_ROOTS:
                    roots.add(alias.asname or alias.name.split(".")[0])
    reasons = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in roots:
                reasons.append(f"line {node.lineno}: assigns to {ast.unparse(target)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FORBIDDEN_CALLS:
            reasons.append(f"line {node.lineno}: calls {node.func.id}()")
        if isinstance(node, ast.Name) and node.id in ("__builtins__", "builtins"):
            reasons.append(f"line {node.lineno}: uses {node.id}")
        if isinstance(node, ast.Attribute) and node.attr in ("modules", "set_custom_exc") \
                and _root(node) in roots | {"sys"}:
            reasons.append(f"line {node.lineno}: uses {ast.unparse(node)}")
    return sorted(set(reasons), key=lambda r: int(r.split()[1].rstrip(":")))


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
