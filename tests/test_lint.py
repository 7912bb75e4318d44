"""The code stays linted: ruff checks attncore/, tests/, benchmarks/ and book/_ext/ with the
rules of [tool.ruff] in pyproject.toml, as `make lint` does (the line budget is
tests/test_architecture.py's)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINTED = ("attncore", "tests", "benchmarks", "book/_ext")


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is not installed: pip install -e '.[dev]'")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", *LINTED],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_make_lint_checks_the_same_folders():
    line = re.search(r"^LINTED := (.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert line and tuple(line.group(1).split()) == LINTED

