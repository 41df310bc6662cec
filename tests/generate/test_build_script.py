"""images/build.sh, the script the generated images workflow runs, against a local OCI registry
(the pinned CNCF distribution, with logins) and the pinned crane: it builds and pushes exactly
the images whose tag the registry lacks, each pullable by its digest with its folder's files; a
change rlgen makes (a plugin adding packages to the training image) rebuilds that image alone,
under the tag the RayJob now names; a folder edited by hand, or a refused login, stops it."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.oci_registry import crane, serve
from support.repos import INSTALL, GIT_URL, ok, run_rlgen, storage_answers
from support.toolchain import tool

BUILDER = Path(__file__).resolve().parents[1] / "support" / "layer_build.py"
USER, PASSWORD = "ci-pusher", "s3cret-for-the-test"


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with serve(tmp_path_factory.mktemp("registry"), {USER: PASSWORD}) as host:
        yield host


@pytest.fixture
def env(tmp_path, registry):
    """The environment of a CI job: crane on PATH, a docker config of its own, the stand-in base
    image in the registry and the builder that appends the context to it."""
    config = tmp_path / "docker-config"
    config.mkdir()
    env = {**os.environ, "DOCKER_CONFIG": str(config), "CRANE": tool("crane"),
           "PATH": f"{Path(tool('crane')).parent}{os.pathsep}{os.environ['PATH']}"}
    login = crane("auth", "login", registry, "-u", USER, "--password-stdin", env=env, input=PASSWORD.encode())
    assert login.returncode == 0, login.stderr
    base = f"{registry}/stand-in/base:1"
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tarfile.TarInfo("etc/stand-in-base")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"base\n"))
    (tmp_path / "base.tar").write_bytes(layer.getvalue())
    pushed = crane("append", "--new_layer", str(tmp_path / "base.tar"), "--new_tag", base, env=env)
    assert pushed.returncode == 0, pushed.stderr
    (config / "config.json").unlink()  # the script logs in itself, from the secrets
    return {**env, "IMAGE_BUILD": f"{sys.executable} {BUILDER} {base}",
            "REGISTRY_USERNAME": USER, "REGISTRY_PASSWORD": PASSWORD}


def new_repo(tmp_path: Path, registry: str) -> tuple[Path, str]:
    target = tmp_path / "repo"
    out = ok(run_rlgen("new", str(target), "--set", f"rlgen.registry={registry}/team", "--set",
                       f"rlgen.git_url={GIT_URL}", "--set", f"rlgen.install={INSTALL}", *storage_answers(), "--no-input",
                       "--output", "table"))
    return target, out


def build(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "images/build.sh", *args], cwd=repo, env=env, capture_output=True, text=True)


def refs(repo: Path) -> dict[str, str]:
    """Each image's reference as the cluster pulls it: the RayJob's (kustomize images) and the Jobs'."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe")
    image = yaml.load((repo / "base/training/kustomization.yaml").read_text())["images"][0]
    job = yaml.load((repo / "base/platform/dataset-job.yaml").read_text())
    return {"images/training": f"{image['newName']}:{image['newTag']}",
            "images/data": job["spec"]["template"]["spec"]["containers"][0]["image"]}


def files_of(reference: str, env: dict) -> dict[str, bytes]:
    """The files of the image ``reference`` names, as a runtime would unpack them (crane export)."""
    exported = subprocess.run([tool("crane"), "export", reference, "-"], env=env, capture_output=True)
    assert exported.returncode == 0, exported.stderr
    with tarfile.open(fileobj=io.BytesIO(exported.stdout)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_pushes_what_the_registry_lacks_and_only_that(tmp_path, registry, env):
    repo, created = new_repo(tmp_path, registry)
    wanted = refs(repo)
    assert f"Images to build before the first sync: {wanted['images/training']}, {wanted['images/data']} " in created

    listed = build(repo, env, "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"{wanted['images/training']} (images/training)",
                                          f"{wanted['images/data']} (images/data)"]

    first = build(repo, env)
    assert first.returncode == 0, first.stdout + first.stderr
    for context, ref in wanted.items():
        digest = crane("digest", ref, env=env).stdout.decode().strip()
        assert f"Pushed {ref} ({digest})" in first.stdout
        # Pulled by digest, the image holds the stand-in base and exactly its folder's files.
        files = files_of(f"{ref.rpartition(':')[0]}@{digest}", env)
        assert files["etc/stand-in-base"] == b"base\n"
        assert {p.removeprefix("context/"): b for p, b in files.items() if p.startswith("context/")} == {
            p.relative_to(repo / context).as_posix(): p.read_bytes()
            for p in (repo / context).rglob("*") if p.is_file()}

    again = build(repo, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Every image is in its registry.\n"

    # A plugin adds packages to the training image: a new training tag, the RayJob renamed, the
    # data image untouched; the script builds the training image alone.
    updated = ok(run_rlgen("update", "--no-branch", "--plugin", "mlflow", "--set",
                           "mlflow.tracking_uri=http://mlflow.rl-training.svc:5000", "--output", "table", cwd=repo))
    now = refs(repo)
    assert now["images/data"] == wanted["images/data"] and now["images/training"] != wanted["images/training"]
    assert f"Images to build before the merge syncs: {now['images/training']} " in updated
    assert "Run baseline: RayJob " in updated
    second = build(repo, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert [line for line in second.stdout.splitlines() if line.startswith("Building")] == [
        f"Building {now['images/training']} from images/training"]
    assert b"mlflow" in files_of(now["images/training"], env)["context/Dockerfile"]


def test_refuses_a_folder_edited_by_hand_and_a_refused_login(tmp_path, registry, env):
    repo, _ = new_repo(tmp_path, registry)
    tag = refs(repo)["images/data"].rpartition(":")[2]

    refused = build(repo, {**env, "REGISTRY_PASSWORD": "wrong"})
    assert refused.returncode == 1
    assert "cannot read" in refused.stderr and "UNAUTHORIZED" in refused.stderr
    assert "Building" not in refused.stdout

    with (repo / "images/data/Dockerfile").open("a") as dockerfile:
        dockerfile.write("RUN pip install something-else\n")
    edited = build(repo, env)
    assert edited.returncode == 1
    assert f"images/data no longer matches its tag {tag}" in edited.stderr
    assert "Building" not in edited.stdout
