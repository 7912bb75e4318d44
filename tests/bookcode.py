"""For the tests of chapter 7 and its peers page: the book's own code (book/_ext/coursebook,
which the chapters import from beside them), the results files the tests pin by name, and a
renderer that runs a page's cells that read a results file on any results file."""
import ast
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from attncore import bench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from coursebook import method, rules  # noqa: E402

__all__ = ["ROOT", "RESULTS_TAG", "code_cells", "finite", "glue_calls", "method", "pinned", "render", "rules"]

RESULTS_TAG = "results-file"  # a cell that reads a results file and measures nothing (the pages' tag)
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
GLUE = re.compile(r"\{glue:text\}`(\w+?)(?::([^`]*))?`")


def pinned(name: str) -> dict:
    """A results file by name, from tests/results or else from the committed runs: the tests pin
    the runs whose words they know to flip, so that publishing a new run changes none of them."""
    path = ROOT / "tests" / "results" / name
    return {**json.loads(path.read_text()), "file": name} if path.exists() else bench.read(name)


def code_cells(chapter: str) -> list[tuple[list[str], str]]:
    """(tags, source) of every code cell of a chapter, its MyST options (":key:" lines, or a YAML
    block between "---" lines) taken off the source."""
    found = []
    for body in CELL.findall((ROOT / "book" / chapter).read_text()):
        options = re.match(r"(?:---\n.*?\n---\n|(?::[\w-]+:[^\n]*\n)+)?", body, re.S).group(0)
        tags = re.search(r"^:?tags:\s*\[(.*?)\]", options, re.M)
        found.append(([t.strip() for t in tags.group(1).split(",")] if tags else [], body[len(options):]))
    return found


def glue_calls(chapter: str) -> list[tuple[list[str], str, ast.expr]]:
    """(cell tags, name, value expression) of every g(name, value) call in a chapter's code cells.
    A name glued in a loop is its f-string with each {...} made a regular expression's .+."""
    calls = []
    for tags, source in code_cells(chapter):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "g":
                name = node.args[0]
                pattern = (re.escape(name.value) if isinstance(name, ast.Constant) else
                           "".join(re.escape(part.value) if isinstance(part, ast.Constant) else ".+"
                                   for part in name.values))
                calls.append((tags, pattern, node.args[1]))
    return calls


@dataclass
class Page:
    """What a page's results-file cells made of one results file."""
    glued: dict[str, object]        # name -> value, as {glue:text} reads it
    figures: list                   # the matplotlib figures its cells showed, in order
    namespace: dict                 # the cells' variables
    prose: str                      # the page's text outside its code cells, every glued value in place

    def text(self, name: str) -> str:
        return str(self.glued[name])


def _run(source: str, namespace: dict) -> None:
    """Run a cell as a notebook does; a last expression (a Markdown table) is evaluated too."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is not None:
        eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)


def render(chapter: str, published: dict[str, dict]) -> Page:
    """Run the cells of `chapter` tagged results-file, in order, with bench.published(kind)
    returning published[kind]; glued values are kept as the book would glue them. The prose
    gets each value in place, and "<name>" where a cell this renderer does not run (one that
    measures this build) glues it."""
    import matplotlib.pyplot as plt
    import myst_nb

    glued, figures, namespace = {}, [], {}
    with mock.patch.object(myst_nb, "glue", lambda name, value, display=True: glued.__setitem__(name, value)), \
            mock.patch.object(bench, "published", lambda kind="chapter7": published[kind]), \
            mock.patch.object(plt, "show", lambda *a, **k: figures.append(plt.gcf())), \
            mock.patch.dict(os.environ), mock.patch.object(sys, "path", list(sys.path)):
        cwd = os.getcwd()
        os.chdir(ROOT / "book")
        try:
            for tags, source in code_cells(chapter):
                if RESULTS_TAG in tags:
                    _run(source, namespace)
        finally:
            os.chdir(cwd)

    def value(match):
        name, spec = match.groups()
        if name not in glued:
            return f"<{name}>"
        return format(glued[name], spec or "")

    prose = GLUE.sub(value, CELL.sub("", (ROOT / "book" / chapter).read_text()))
    for figure in figures:
        plt.close(figure)
    return Page(glued, figures, namespace, prose)


def finite(value: object) -> bool:
    """Whether a glued value is text, an integer or a finite float (not NaN, not infinite)."""
    return not isinstance(value, float) or math.isfinite(value)
