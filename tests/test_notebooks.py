"""Every chapter has a paired notebook for the launch buttons, and it is current."""
from pathlib import Path

import jupytext
import nbformat
import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.rglob("*.md"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: str(p.relative_to(BOOK)))
def test_paired_notebook_matches_its_chapter(chapter):
    paired = chapter.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired.name} is missing: run `make notebooks` and commit it"
    notebook = nbformat.read(paired, as_version=4)
    nbformat.validate(notebook)
    expected = jupytext.read(chapter)
    assert cell_contents(notebook) == cell_contents(expected), (
        f"{paired.name} is out of date with {chapter.name}: run `make notebooks` and commit it"
    )
    assert notebook.metadata.kernelspec.name == "python3"
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


def cell_contents(notebook):
    """What a reader sees of each cell (jupytext gives new random cell ids on each run)."""
    return [(c.cell_type, c.source, dict(c.metadata)) for c in notebook.cells]
