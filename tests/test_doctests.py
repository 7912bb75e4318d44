"""The Examples in the core docstrings run, and print what they say they print.

Each module's examples run with nothing but `np` (numpy) in scope, as a learner would
paste them after `import numpy as np`: an example that leans on a module's private
names fails here. A module whose examples disappear fails too (attempted == 0), so
the docstrings cannot quietly lose what this test checks.
"""
import doctest
import importlib

import numpy as np
import pytest

# importlib, not `import attncore.attention`: attncore.attention, .softmax and
# .flash_attention are the functions that attncore/__init__.py re-exports, so the
# attribute is the function, while sys.modules holds the module.
MODULES = [
    "attncore._checks",
    "attncore.attention",
    "attncore.bfloat16",
    "attncore.feature_maps",
    "attncore.flash",
    "attncore.invariants",
    "attncore.masks",
    "attncore.softmax",
]

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


@pytest.mark.parametrize("name", MODULES)
def test_examples_run_as_written(name):
    module = importlib.import_module(name)
    assert module.__name__ == name, f"{name} resolved to {module!r}, not the module"
    tests = doctest.DocTestFinder().find(module, name, globs={"np": np})
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0, f"{name} has no doctest examples left"
    assert failed == 0, "".join(report)


def test_the_public_api_is_what_the_book_and_exercises_use():
    """attncore's __all__ is the names the book, the README and the exercises use (attncore.NAME,
    ac.NAME or `from attncore import NAME`): every exported name is used there, and every name
    used there is exported or a submodule. Internals (prepare_attention, Prepared) stay out."""
    import re
    from pathlib import Path

    import attncore

    root = Path(__file__).parents[1]
    texts = [path.read_text() for pattern in ("book/*.md", "book/appendix/*.md", "README.md", "solutions/*/*.ipynb")
             for path in root.glob(pattern)]
    used = set()
    for text in texts:
        used.update(re.findall(r"\b(?:attncore|ac)\.([A-Za-z]\w*)", text))
        for names in re.findall(r"from attncore import ([\w, ]+)", text):
            used.update(name.strip() for name in names.split(","))
    submodules = {path.stem for path in (root / "attncore").iterdir() if path.suffix == ".py" or path.is_dir()}
    exported = set(attncore.__all__) - {"__version__"}
    assert exported - used == set(), "exported, but no page or exercise uses it"
    assert used - exported - submodules == set(), "used on a page or in an exercise, but not exported"
    assert not {"prepare_attention", "Prepared"} & set(dir(attncore))
