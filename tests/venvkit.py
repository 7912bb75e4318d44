"""A fresh virtual environment with the wheel built from this checkout, for the tests that
use attncore as a learner who ran `pip install attncore` would."""
import os
import shutil
import subprocess
import sys
import venv

from .gradekit import ROOT


def venv_with_wheel(base, extras="", *more):
    """The python of a new venv in base with the wheel (and [extras], and pip args more)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(base / "dist"), str(_source_copy(base))], check=True)
    (wheel,) = (base / "dist").glob("attncore-*.whl")
    venv.create(base / "venv", with_pip=True)
    python = base / "venv" / "bin" / "python"
    target = f"attncore[{extras}] @ {wheel.as_uri()}" if extras else str(wheel)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", target, *more], check=True)
    return python


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
