"""This project as a source a runner installs rlgen from: its files (uncommitted changes
included) as one tagged commit of a fresh Git repository, and a fresh virtual environment to
install into."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from support.repos import REPO

SKIP = shutil.ignore_patterns(".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".pytest_cache",
                              "demo", ".rlgen-cache", ".toolchain", ".verl", "_version.py")
GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@t")


def commit_of_this_checkout(tmp_path: Path, tag: str | None = None) -> tuple[Path, str]:
    """(the repository, its one commit): this project's files, tagged ``tag`` when given (its
    version, as setuptools-scm reads it)."""
    src = tmp_path / "rlgen-src"
    shutil.copytree(REPO, src, symlinks=True, ignore=SKIP)
    git = [*GIT, "-C", str(src)]
    subprocess.run([*git, "init", "-q", "--initial-branch=main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "rlgen"], check=True)
    if tag:
        subprocess.run([*git, "tag", tag], check=True)
    return src, subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def fresh_venv(tmp_path: Path, name: str = "image") -> Path:
    """A new virtual environment without rlgen. The third-party packages an install step needs
    are the ones the tests run with, lent from the test environment, rlgen left out: pip finds
    them satisfied and installs only rlgen, from the source under test."""
    venv = tmp_path / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    lent = tmp_path / f"{name}-lent"
    lent.mkdir()
    for site in (Path(p) for p in sys.path if p.endswith("site-packages")):
        for entry in site.iterdir():
            if "rlgen" not in entry.name and not (lent / entry.name).exists():
                (lent / entry.name).symlink_to(entry)
    (next((venv / "lib").glob("python*/site-packages")) / "lent.pth").write_text(f"{lent}\n")
    return venv


def pip_step(venv: Path, command: str) -> str:
    """``command`` (a generated ``pip install ...``) run by ``venv``'s pip, quietly."""
    return command.replace("pip install", f"{venv}/bin/python -m pip --disable-pip-version-check -q install", 1)
