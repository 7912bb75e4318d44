"""For the tests of chapter 7 and its peers page: the book's own code (book/_ext/coursebook,
which the chapters import from beside them) and the results files the tests pin by name."""
import json
import sys
from pathlib import Path

from attncore import bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from coursebook import method, rules  # noqa: E402

__all__ = ["ROOT", "method", "pinned", "rules"]


def pinned(name: str) -> dict:
    """A results file by name, from tests/results or else from the committed runs: the tests pin
    the runs whose words they know to flip, so that publishing a new run changes none of them."""
    path = ROOT / "tests" / "results" / name
    return {**json.loads(path.read_text()), "file": name} if path.exists() else bench.read(name)
