"""The distribution users install (a wheel, not this checkout) carries everything rlgen
reads at run time: the kustomize sources, templates and schemas."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from rlgen import __version__
from support.repos import REPO, REQUIRED, repo_files


#: A build of this checkout gets the version of the rlgen under test, not a newer one from Git:
#: setuptools-scm rewrites rlgen/_version.py in the checkout as it builds, which every test reads.
SAME_VERSION = {**os.environ, "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_RLGEN": __version__}


def test_a_wheel_install_generates_the_same_repository(tmp_path, generate):
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(REPO)], check=True, capture_output=True,
                   env=SAME_VERSION)
    wheel = next(wheels.glob("rlgen-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True,
                   capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import rlgen; print(rlgen.__file__)"], env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target))
    out = tmp_path / "repo"
    result = subprocess.run([sys.executable, "-m", "rlgen", "new", str(out), *REQUIRED, "--no-input"], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert repo_files(out) == repo_files(generate())


@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_an_editable_install_generates_the_same_repository(tmp_path, generate, mode):
    """``pip install -e .`` in its default (lenient) mode and in strict mode: both find the
    kustomize sources and templates through the same package layout a wheel has."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    # The dependencies come from the test environment; rlgen itself from this install only.
    (site / "deps.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    python = venv / "bin" / "python"
    settings = ["--config-settings", "editable_mode=strict"] if mode == "strict" else []
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
                    "-e", str(REPO), *settings], check=True, capture_output=True, env=SAME_VERSION)
    out = tmp_path / "repo"
    result = subprocess.run([str(python), "-m", "rlgen", "new", str(out), *REQUIRED, "--no-input"], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert repo_files(out) == repo_files(generate())
