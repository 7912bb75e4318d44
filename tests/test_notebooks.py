"""Every page has a paired notebook for the launch buttons, it is current, and it reads
as plain Markdown on Colab and Binder (no MyST syntax left)."""
import ast
import re
import sys
from pathlib import Path

import nbformat
import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
sys.path.insert(0, str(BOOK / "_ext"))
import launch_notebooks  # noqa: E402 (book/_ext is not a package)

PAGES = sorted(BOOK.rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BOOK)))
def test_paired_notebook_matches_its_page(page):
    paired = page.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired.name} is missing: run `make notebooks` and commit it"
    notebook = nbformat.read(paired, as_version=4)
    nbformat.validate(notebook)
    # The values looked up from the build (glued numbers, reference texts) may differ
    # from machine to machine; everything else must be what the page makes.
    current, mismatch = launch_notebooks.matches(notebook, page)
    assert current, (f"{paired.name} is out of date with {page.name} ({mismatch}): "
                     "run `make book`, then `make notebooks`, and commit it")
    assert notebook.metadata.kernelspec.name == "python3"
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


def test_a_looked_up_value_may_be_empty_or_long():
    """A glued clause a run has nothing to say in renders empty: the check of the paired
    notebook takes it, as it takes any other value."""
    page = BOOK / "07-peers.md"
    for value in ("", "a long\nclause of two lines"):
        notebook = launch_notebooks.launch_notebook(page, launch_notebooks.Placeholders())
        for cell in notebook.cells:
            cell.source = cell.source.replace(launch_notebooks.Placeholders.PLACEHOLDER, value)
        assert launch_notebooks.matches(notebook, page) == (True, None), repr(value)


def install_cell_needs(page):
    """The launch notebook's install cell, and its NEEDED table: {module: requirement}."""
    first = nbformat.read(page.with_suffix(".ipynb"), as_version=4).cells[0]
    python = re.sub(r"^(\s*)%.*$", r"\1pass", first.source, flags=re.M)  # a magic: a statement
    (table,) = [node.value for node in ast.parse(python).body
                if isinstance(node, ast.Assign) and node.targets[0].id == "NEEDED"]
    return first, ast.literal_eval(table)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BOOK)))
def test_launch_notebook_starts_with_a_harmless_install_cell(page):
    first, needed = install_cell_needs(page)
    assert first.cell_type == "code" and "launch-install" in first.metadata["tags"]
    assert "if importlib.util.find_spec(module) is None]\nif missing:\n" in first.source  # only what is missing
    assert needed.get("attncore", "") in ("", f"attncore @ git+{launch_notebooks.repository_url()}")


# What Jupyter's Markdown (CommonMark) would print as it stands: roles, targets, directive
# fences and their options, MyST comments, colon fences, equation labels.
MYST = {
    "role": re.compile(r"\{[a-zA-Z][\w:.-]*\}`"),
    "target": re.compile(r"^[ \t]*\([^()\s]+\)=[ \t]*$", re.M),
    "directive": re.compile(r"^\s*(?:>\s*)*(?:`{3,}|~{3,}|:{3,})\s*\{", re.M),
    "directive option": re.compile(r"^\s*(?:>\s*)*:(?:label|class|tags|name|sorted|nonumber|open):", re.M),
    "colon fence": re.compile(r"^\s*(?:>\s*)*:::", re.M),
    "comment": re.compile(r"^%", re.M),
    "equation label": re.compile(r"\$\$\s*\([\w-]+\)\s*$", re.M),
    "substitution": re.compile(r"\{\{[^}]*\}\}"),
}


def prose(markdown):
    """A Markdown cell without its code blocks and inline code: what must be plain text."""
    kept, fence = [], None
    for line in markdown.split("\n"):
        stripped = re.sub(r"^\s*(?:>\s*)*", "", line)
        opener = re.match(r"(`{3,}|~{3,})", stripped)
        if fence is None and opener and "{" not in stripped:
            fence = opener.group(1)
        elif fence is not None and stripped.startswith(fence) and not stripped.strip(fence[0]).strip():
            fence = None
        elif fence is None:
            kept.append(line)
    return re.sub(r"(`+)(?!\{).*?\1", "", "\n".join(kept), flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BOOK)))
def test_launch_notebook_markdown_has_no_myst(page):
    notebook = nbformat.read(page.with_suffix(".ipynb"), as_version=4)
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        text = prose(cell.source)
        for name, pattern in MYST.items():
            found += [f"cell {index}: {name} {m.group(0)!r}" for m in pattern.finditer(text)]
    assert not found, "MyST syntax a launched notebook would show raw:\n" + "\n".join(found[:20])


def test_the_translation_reads_as_the_site_does():
    """A made-up page through the translator: every construct the book uses."""
    site = launch_notebooks.Placeholders()
    page = BOOK / "intro.md"
    source = "\n".join([
        "(sec-x)=",
        "## Title",
        "",
        "See {ref}`the proof <thm-x>`, {term}`KV cache` and {term}`heads <head>`; `{ref}` stays.",
        "",
        "```{prf:theorem} Shift",
        ":label: thm-x",
        "",
        "$x + c$",
        "```",
        "",
        "````{dropdown} Why?",
        "Because.",
        "```python",
        "{glue:text}`not_a_role`",
        "```",
        "````",
        "",
        "```{glossary}",
        "b term",
        "  Second.",
        "a term",
        "  First {cite}`vaswani2017attention`.",
        "```",
    ])
    out = launch_notebooks.markdown(source, page, site)
    P = site.PLACEHOLDER
    assert out.startswith("## Title\n\nSee the proof, KV cache and heads; `{ref}` stays.")
    assert f"> **{P} (Shift).**\n>\n> $x + c$" in out
    assert "> **Why?**\n>\n> Because.\n> ```python\n> {glue:text}`not_a_role`\n> ```" in out
    assert "- **b term**: Second." in out
    with pytest.raises(launch_notebooks.MystError):
        launch_notebooks.markdown("{unknown}`x`", page, site)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BOOK)))
def test_install_cell_installs_only_what_the_notebook_runs(page):
    """What the page's code imports (tests/test_launch_notebooks.py checks it against what the
    notebook loads), at pyproject.toml's versions, and never the site's build tools."""
    first, needed = install_cell_needs(page)
    cells = nbformat.read(page.with_suffix(".ipynb"), as_version=4).cells[1:]
    expected = launch_notebooks.needs([c.source for c in cells if c.cell_type == "code"])
    model = expected.pop(launch_notebooks.MODEL_MODULE, None)
    assert needed == expected
    assert (f"--no-deps {launch_notebooks.MODEL_REQUIREMENT}" in first.source) == (model is not None)
    installs = " ".join(needed.values()).lower()
    for tool in ("jupyter-book", "jupyter_book", "sphinx", "myst", "jupytext"):
        assert tool not in installs, installs


def test_the_install_cell_of_a_page_that_runs_kernels_says_the_first_run_compiles():
    says = "the first run in a fresh environment compiles"
    compiling = [page.name for page in PAGES if says in install_cell_needs(page)[0].source]
    assert compiling == ["07-peers.md", "07-performance.md"]
