"""What a learner's graded functions may use of attncore, per assignment: nothing else.

The names are attncore's ("softmax", "invariants.default_atol"), "module.*" for a whole
module; each notebook's Rules say the same in words. They are held in two places:

- the sandbox's file system (the first line, which no code in the worker can reach): a
  graded notebook's sandbox keeps only the attncore modules these names live in and
  what those import (kept_modules); every other module of the library is left out, a
  stand-in whose names raise ForbiddenCall (course.sandbox, course.left_out);
- the worker's tripwires (the second line): once the cells have run, every attncore
  function the worker still holds but these and what they call raises ForbiddenCall
  (observe.seal_library), so that within a kept module an exercise forbids what
  computes its answer, whatever its name: in 02-simplex, invariants.check_rows.
"""
import ast
import importlib.util
from collections.abc import Iterable
from pathlib import Path

import attncore

ALLOWED = {
    "01-convention": ("softmax",),  # "You may call attncore.softmax"
    "02-simplex": ("invariants.default_atol",),  # the tolerance the exercise points to
    "03-masking": (),  # NumPy only
    "04-heads": ("softmax",),
    "05-flash": (),
    "06-variants": ("feature_maps.*",),  # the feature maps linear_attention is given
    "07-real-model": ("softmax", "bert.linear"),
}
PACKAGE = Path(attncore.__file__).resolve().parent
GRADING = "grading"  # the worker's own package: always kept (its engine never is)


def kept_modules(allowed: Iterable[str]) -> frozenset[str]:
    """The top-level modules of attncore ("softmax", "_checks"; a subpackage such as "jit"
    whole) that the names allowed live in, and every one they import, directly or not."""
    kept, todo = set(), [_module_of(name) for name in allowed]
    while todo:
        module = todo.pop()
        if module not in kept:
            kept.add(module)
            todo += _imported_by(module)
    return frozenset(kept)


def library_modules() -> frozenset[str]:
    """Every top-level module and subpackage of attncore but the grading package."""
    return frozenset(path.stem for path in PACKAGE.glob("*.py") if path.name != "__init__.py") | \
        frozenset(path.name for path in PACKAGE.iterdir()
                  if (path / "__init__.py").is_file() and path.name != GRADING)


def _module_of(name):
    """The top-level module a name allowed lives in: "bert" for "bert.linear" and
    "feature_maps.*", the defining module for a name attncore exports ("softmax")."""
    head, dotted, _ = name.partition(".")
    return head if dotted else getattr(attncore, name).__module__.split(".")[1]


def _imported_by(module):
    """The top-level attncore modules that a module's source imports anywhere in it."""
    folder = PACKAGE / module
    files = sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{module}.py"]
    found = set()
    for path in files:
        package = ".".join(path.relative_to(PACKAGE.parent).parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else node.module or ""
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            found.update(target.split(".")[1] for target in targets if target.startswith("attncore."))
    return found & library_modules()
