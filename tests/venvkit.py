"""A fresh virtual environment with the wheel built from this checkout, for the tests that
use attncore as a learner who ran `pip install attncore` would."""
import os
import subprocess
import sys
import venv

from .gradekit import ROOT


def venv_with_wheel(base, extras="", *more):
    """The python of a new venv in base with the wheel (and [extras], and pip args more)."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(base / "dist"), str(ROOT)], check=True)
    (wheel,) = (base / "dist").glob("attncore-*.whl")
    venv.create(base / "venv", with_pip=True)
    python = base / "venv" / "bin" / "python"
    target = f"attncore[{extras}] @ {wheel.as_uri()}" if extras else str(wheel)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", target, *more], check=True)
    return python


def clean_env(python):
    """os.environ without this checkout's venv, with python's venv first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return env
