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
