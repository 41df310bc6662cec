"""The data image's install step, run as the Dockerfile runs it but in a fresh virtual
environment: rlgen.install from a Git commit really installs rlgen with its data extra (pip
clones and builds it, versioned by the commit's tag), and that rlgen knows where it came from."""
from __future__ import annotations

import json
import subprocess

from support.checkout import commit_of_this_checkout, fresh_venv, pip_step
from support.repos import POOL, GIT_URL, REGISTRY, REQUIRED, error_list, run_rlgen


def _pip_step(dockerfile: str) -> str:
    """The Dockerfile's `RUN pip install ...` command, up to the `&&` that adds the user."""
    lines = dockerfile.replace("\\\n", " ").splitlines()
    (run,) = [line for line in lines if line.startswith("RUN pip install ")]
    return run.removeprefix("RUN ").split(" && ")[0]


def test_the_dockerfile_installs_rlgen_from_a_git_commit(tmp_path):
    src, commit = commit_of_this_checkout(tmp_path, tag="v9.8.7")
    requirement = f"rlgen @ git+file://{src}@{commit}"
    repo = tmp_path / "repo"
    result = run_rlgen("new", str(repo), *REQUIRED, "--set", f"rlgen.install={requirement}", "--no-input")
    assert result.returncode == 0, result.stderr
    dockerfile = (repo / "images" / "data" / "Dockerfile").read_text()
    assert "apt-get install --yes --no-install-recommends git" in dockerfile

    venv = fresh_venv(tmp_path)
    step = pip_step(venv, _pip_step(dockerfile))
    installed = subprocess.run(["sh", "-c", step], capture_output=True, text=True, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    rlgen = venv / "bin" / "rlgen"
    version = subprocess.run([str(rlgen), "--version"], capture_output=True, text=True, cwd=tmp_path)
    # Its version is the tag's (setuptools-scm), as the release workflow builds it.
    assert version.returncode == 0 and version.stdout.split() == ["rlgen,", "version", "9.8.7"], version.stdout
    # The data extra is there: the Jobs' commands start.
    for command in (["data", "prepare", "--help"], ["data", "upload", "--help"]):
        assert subprocess.run([str(rlgen), *command], capture_output=True, cwd=tmp_path).returncode == 0
    # rlgen itself went into the new environment, not anywhere the tests run from.
    (info,) = (venv / "lib").glob("python*/site-packages/rlgen-*.dist-info")
    assert not list((tmp_path / "image-lent").glob("rlgen*"))
    direct = json.loads((info / "direct_url.json").read_text())
    assert direct["vcs_info"]["commit_id"] == commit

    # That rlgen, asked for a new repository without an answer, names a source only this
    # machine can reach and refuses it in one line.
    refused = subprocess.run([str(rlgen), "new", str(tmp_path / "again"), "--no-input",
                              "--set", f"rlgen.registry={REGISTRY}", *POOL, "--set", f"rlgen.git_url={GIT_URL}",
                              "--set", "rlgen.git_host=generic-hmac"],
                             capture_output=True, text=True, cwd=tmp_path)
    _, items = error_list(refused)
    assert items[0].startswith("--set rlgen.install=VALUE (") and "a local git repository" in items[0]
