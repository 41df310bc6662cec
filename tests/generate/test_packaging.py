"""The distribution users install (a wheel, not this checkout) carries everything rlgen
reads at run time: the kustomize sources, templates and schemas."""
from __future__ import annotations

import os
import subprocess
import sys

from support.repos import REPO, repo_files


def test_a_wheel_install_generates_the_same_repository(tmp_path, generate):
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(REPO)], check=True, capture_output=True)
    wheel = next(wheels.glob("rlgen-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True,
                   capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import rlgen; print(rlgen.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target))
    out = tmp_path / "repo"
    result = subprocess.run([sys.executable, "-m", "rlgen", "new", str(out), "--no-input"], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert repo_files(out) == repo_files(generate())
