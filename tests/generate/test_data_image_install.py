"""The data image's install step, run as the Dockerfile runs it but in a fresh virtual
environment: rlgen.install from a Git commit really installs rlgen with its data extra (pip
clones and builds it), and that rlgen knows where it came from."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from support.repos import GIT_URL, REGISTRY, REPO, REQUIRED, one_error_line, run_rlgen

SKIP = shutil.ignore_patterns(".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", ".pytest_cache",
                              "demo", ".rlgen-cache")


def _commit_of_this_checkout(tmp_path: Path) -> tuple[Path, str]:
    """This project, uncommitted changes included, as one commit of a fresh Git repository."""
    src = tmp_path / "rlgen-src"
    shutil.copytree(REPO, src, symlinks=True, ignore=SKIP)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(src)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "rlgen"], check=True)
    return src, subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


def _pip_step(dockerfile: str) -> str:
    """The Dockerfile's `RUN pip install ...` command, up to the `&&` that adds the user."""
    lines = dockerfile.replace("\\\n", " ").splitlines()
    (run,) = [line for line in lines if line.startswith("RUN pip install ")]
    return run.removeprefix("RUN ").split(" && ")[0]


def _fresh_venv(tmp_path: Path) -> Path:
    """A new virtual environment without rlgen. The third-party packages the step pins are the
    ones the tests run with (DATA_PACKAGES), so they are lent from the test environment, rlgen
    left out: pip finds them satisfied and installs only rlgen, from the Git commit."""
    venv = tmp_path / "image"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    lent = tmp_path / "lent"
    lent.mkdir()
    for site in (Path(p) for p in sys.path if p.endswith("site-packages")):
        for entry in site.iterdir():
            if "rlgen" not in entry.name and not (lent / entry.name).exists():
                (lent / entry.name).symlink_to(entry)
    (next((venv / "lib").glob("python*/site-packages")) / "lent.pth").write_text(f"{lent}\n")
    return venv


def test_the_dockerfile_installs_rlgen_from_a_git_commit(tmp_path):
    src, commit = _commit_of_this_checkout(tmp_path)
    requirement = f"rlgen @ git+file://{src}@{commit}"
    repo = tmp_path / "repo"
    result = run_rlgen("new", str(repo), *REQUIRED, "--set", f"rlgen.install={requirement}", "--no-input")
    assert result.returncode == 0, result.stderr
    dockerfile = (repo / "images" / "data" / "Dockerfile").read_text()
    assert "apt-get install --yes --no-install-recommends git" in dockerfile

    venv = _fresh_venv(tmp_path)
    step = _pip_step(dockerfile).replace("pip install", f"{venv}/bin/python -m pip --disable-pip-version-check -q install", 1)
    installed = subprocess.run(["sh", "-c", step], capture_output=True, text=True, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    rlgen = venv / "bin" / "rlgen"
    version = subprocess.run([str(rlgen), "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stderr
    # The data extra is there: the Jobs' commands start.
    for command in (["data", "prepare", "--help"], ["data", "upload", "--help"]):
        assert subprocess.run([str(rlgen), *command], capture_output=True, cwd=tmp_path).returncode == 0
    # rlgen itself went into the new environment, not anywhere the tests run from.
    (info,) = (venv / "lib").glob("python*/site-packages/rlgen-*.dist-info")
    assert not list((tmp_path / "lent").glob("rlgen*"))
    direct = json.loads((info / "direct_url.json").read_text())
    assert direct["vcs_info"]["commit_id"] == commit

    # That rlgen, asked for a new repository without an answer, names a source only this
    # machine can reach and refuses it in one line.
    refused = subprocess.run([str(rlgen), "new", str(tmp_path / "again"), "--no-input",
                              "--set", f"rlgen.registry={REGISTRY}", "--set", f"rlgen.git_url={GIT_URL}", "--set", "rlgen.git_host=generic-hmac"],
                             capture_output=True, text=True, cwd=tmp_path)
    line = one_error_line(refused)
    assert "a local git repository" in line and "--set rlgen.install=" in line
