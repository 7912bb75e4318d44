"""Every page has a paired notebook for the launch buttons, and it is current."""
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
    assert launch_notebooks.contents(notebook) == launch_notebooks.contents(
        launch_notebooks.launch_notebook(page)), (
        f"{paired.name} is out of date with {page.name}: run `make notebooks` and commit it")
    assert notebook.metadata.kernelspec.name == "python3"
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(BOOK)))
def test_launch_notebook_starts_with_a_harmless_install_cell(page):
    first = nbformat.read(page.with_suffix(".ipynb"), as_version=4).cells[0]
    assert first.cell_type == "code" and "launch-install" in first.metadata["tags"]
    assert 'if importlib.util.find_spec("attncore") is None:' in first.source
    assert launch_notebooks.repository_url() in first.source
