"""The images workflow run by nektos/act (support/act.py) against a local registry (the pinned
CNCF distribution, with logins): it installs crane as the workflow says and pushes exactly the
images the registry lacks. `docker buildx build` cannot run here (no Docker daemon, and verl's
bases are not reachable offline): the job runs with IMAGE_BUILD set to support/layer_build.py,
which lays each context as a layer onto a stand-in base (tests/generate/test_build_script.py);
every other step is the workflow's own. The free-disk step is for GitHub-hosted runners only and
is skipped on this self-hosted one."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.act import THIS_RLGEN
from support.oci_registry import crane, serve
from support.repos import GIT_URL, POOL, git, ok, run_rlgen
from support.toolchain import tool

BUILDER = Path(__file__).resolve().parents[1] / "support" / "layer_build.py"
USER, PASSWORD = "ci-pusher", "s3cret-for-the-act-test"


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("registry"), {USER: PASSWORD}) as host:
        yield host


def stand_in_base(registry: str, folder: Path) -> str:
    env = {**os.environ, "DOCKER_CONFIG": str(folder)}
    login = crane("auth", "login", registry, "-u", USER, "--password-stdin", env=env, input=PASSWORD.encode())
    assert login.returncode == 0, login.stderr
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tarfile.TarInfo("etc/stand-in-base")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"base\n"))
    (folder / "base.tar").write_bytes(layer.getvalue())
    base = f"{registry}/stand-in/base:1"
    assert crane("append", "--new_layer", str(folder / "base.tar"), "--new_tag", base, env=env).returncode == 0
    return base


def test_the_images_job_pushes_what_the_registry_lacks(runner, registry, tmp_path):
    # marketplace-sandbox: no sandbox-manager of its own to build (its build runs upstream's
    # make and docker); images.yaml is the default's byte for byte (tests/workflows/test_variants.py).
    repo = tmp_path / "repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={registry}/team",
                 "--set", f"rlgen.git_url={GIT_URL}", "--set", "rlgen.git_host=github", *THIS_RLGEN,
                 *POOL, "--set", "ak-storage.bucket=rl-tests-data", "--set", "ak-storage.region=cn-hangzhou",
                 "--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.rl-team.net"))
    full = runner.publish(repo, "rl-images")
    docker = tmp_path / "docker"
    docker.mkdir()
    base = stand_in_base(registry, docker)
    (docker / "config.json").unlink()  # the script logs in itself, from the secrets
    head = {"ref": "refs/heads/main", "after": git(repo, "rev-parse", "HEAD").strip(), "deleted": False}
    gopath = tmp_path / "gopath"
    modcache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    env = {"IMAGE_BUILD": f"{sys.executable} {BUILDER} {base}", "CRANE": "crane", "DOCKER_CONFIG": str(docker),
           # crane is installed where the workflow says ($(go env GOPATH)/bin), not into this
           # machine's GOPATH; modules come from the module cache the toolchain filled.
           "GOPATH": str(gopath), "GOMODCACHE": modcache}
    job = runner.run(repo / ".github/workflows/images.yaml", "push", full, head,
                     secrets={"REGISTRY_USERNAME": USER, "REGISTRY_PASSWORD": PASSWORD}, env=env)
    assert job.passed, job.log[-5000:]
    steps = job.step_results()
    assert "Free disk space for the training image" not in steps, steps
    assert (gopath / "bin" / "crane").is_file()
    listed = subprocess.run(["bash", "images/build.sh", "--list"], cwd=repo, capture_output=True, text=True,
                            env={**os.environ, "PATH": f"{Path(tool('crane')).parent}{os.pathsep}{os.environ['PATH']}",
                                 "DOCKER_CONFIG": str(docker), "REGISTRY_USERNAME": USER,
                                 "REGISTRY_PASSWORD": PASSWORD})
    assert listed.returncode == 0 and listed.stdout == "Every image is in its registry.\n", listed.stdout + listed.stderr
    assert job.log.count("Pushed ") >= 2, job.log[-3000:]
