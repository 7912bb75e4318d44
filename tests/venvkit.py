"""A fresh virtual environment with the wheel built from this checkout, for the tests that
use attncore as a learner who ran `pip install attncore` would.

The wheel is built, and the new venv installs, from WHEELHOUSE only (pip --no-index): wheels
of the versions this checkout's venv runs (constraints.txt) and of the build backend, kept in
that venv. A run asks the package index
only for what the wheelhouse lacks, so once it is filled the tests need no network.
"""
import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

from .gradekit import ROOT

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
OFFLINE = ("--no-index", "--find-links", str(WHEELHOUSE))


def build_wheel(base):
    """The wheel of this checkout, built in base/dist."""
    fill_wheelhouse(*tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"])
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *OFFLINE,
                    "--wheel-dir", str(base / "dist"), str(_source_copy(base))], check=True)
    (wheel,) = (base / "dist").glob("attncore-*.whl")
    return wheel


def venv_with_wheel(base, extras="", *more):
    """The python of a new venv in base with the wheel (and [extras], and the requirements more)."""
    wheel = build_wheel(base)
    venv.create(base / "venv", with_pip=True)
    python = base / "venv" / "bin" / "python"
    pip_install(python, f"attncore[{extras}] @ {wheel.as_uri()}" if extras else str(wheel), *more)
    return python


def resolve(requirement):
    """The names of the distributions `pip install requirement` would install in an empty
    venv, resolved from WHEELHOUSE (filled first), installing nothing."""
    fill_wheelhouse(requirement)
    report = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed",
                             "--report", "-", *OFFLINE, requirement], check=True, capture_output=True, text=True)
    return {item["metadata"]["name"].lower().replace("_", "-") for item in json.loads(report.stdout)["install"]}


def pip_install(python, *args):
    """pip install args (requirements, and options such as --no-deps) into python's venv, from WHEELHOUSE only."""
    fill_wheelhouse(*args)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *OFFLINE, *args], check=True)


def fill_wheelhouse(*requirements):
    """Put wheels of requirements and their dependencies (unless --no-deps is among them) into
    WHEELHOUSE, at the versions of constraints.txt; from the package index only if the
    wheelhouse cannot resolve them."""
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary", ":all:",
                "--constraint", str(ROOT / "constraints.txt"), "--dest", str(WHEELHOUSE), *requirements]
    offline = subprocess.run([*download, "--no-index", "--find-links", str(WHEELHOUSE)], capture_output=True)
    if offline.returncode != 0:
        subprocess.run(download, check=True)
    # pip download copies the wheel of this checkout in too; left there, a later resolve of
    # attncore[extra] would take it, though it was built from an earlier state of the tree
    for stale in WHEELHOUSE.glob("attncore-*"):
        stale.unlink()


def _source_copy(base):
    """The checkout's files (tracked, or new and not ignored) copied into base/source: the
    wheel is built there, so that builds running side by side (pytest -n) never share
    setuptools' build/ folder in the checkout."""
    target = base / "source"
    try:
        files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                                "-z"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: all but the outputs
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
            ".git", ".venv", "_build", "build", "__pycache__", ".numba-cache", ".*_cache"))
        return target
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def clean_env(python):
    """os.environ without this checkout's venv, with python's venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return env
