"""The code stays linted and its modules stay small.

ruff checks attncore/ and tests/ with the rules of [tool.ruff] in pyproject.toml (what
`make lint` runs). The line budget, after tinygrad's: a module of more than MAX_LINES
lines outside tests/ is a module to split (jit.py had 1,146 lines, suites/masking.py 871).
"""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 700
SOURCES = ("attncore", "benchmarks", "book")  # every .py outside tests/, with the files at the top


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is not installed: pip install -e '.[dev]'")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "attncore", "tests"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_module_outside_the_tests_is_over_the_line_budget():
    files = [*ROOT.glob("*.py"), *(path for folder in SOURCES for path in (ROOT / folder).rglob("*.py"))]
    assert any(path.name == "flash.py" for path in files)  # the scan sees the library
    sizes = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines()) for path in files}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
