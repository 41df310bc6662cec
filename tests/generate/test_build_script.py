"""images/build.sh, the script the generated images workflow runs, against a local OCI registry
(the pinned CNCF distribution, with logins) and the pinned crane: it builds and pushes exactly
the images whose tag the registry lacks, each pullable by its digest with its folder's files; a
change rlgen makes (a plugin adding packages to the training image) rebuilds that image alone,
under the tag the RayJob now names; a folder edited by hand, or a refused login, stops it. The
sandbox-manager, which its own build script builds from upstream's source, is built by that
script under the tag the cluster's manifests name (git, make and docker stand-ins: no network
and no Docker daemon here)."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.oci_registry import crane, serve
from support.repos import POOL, INSTALL, GIT_URL, ok, run_rlgen, storage_answers
from support.toolchain import tool

BUILDER = Path(__file__).resolve().parents[1] / "support" / "layer_build.py"
USER, PASSWORD = "ci-pusher", "s3cret-for-the-test"
#: Stand-ins on PATH for what images/sandbox-manager/build.sh runs: the clone of openkruise/agents
#: gives the key store's lines as upstream writes them (the rest of git is git), make records its
#: arguments, and docker push lays the edited key store onto the stand-in base (crane append).
STUBS = {
    "git": """#!/bin/sh
case "$1" in
  clone) mkdir -p "$4/pkg/servers/e2b/keys" && echo "clone $3" >> "$STUB_LOG"
         printf '\\t\\tlog.Info("create admin key success", "key", adminKey.Key)\\n\\tlog.Info("api-key generated", "key", apiKey)\\n' \\
           > "$4/pkg/servers/e2b/keys/secret.go" ;;
  fetch|checkout) echo "$*" >> "$STUB_LOG" ;;
  *) exec "$REAL_GIT" "$@" ;;
esac
""",
    "make": """#!/bin/sh
echo "make $*" >> "$STUB_LOG"
""",
    "docker": """#!/bin/sh
[ "$1" = push ] || { echo "docker stand-in: only push" >&2; exit 1; }
tar -cf "$STUB_DIR/layer.tar" pkg/servers/e2b/keys/secret.go
exec crane append --base "$STUB_BASE" --new_layer "$STUB_DIR/layer.tar" --new_tag "$2"
""",
}


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
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in STUBS.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    return {**env, "IMAGE_BUILD": f"{sys.executable} {BUILDER} {base}",
            "REGISTRY_USERNAME": USER, "REGISTRY_PASSWORD": PASSWORD,
            "PATH": f"{stubs}{os.pathsep}{env['PATH']}", "REAL_GIT": shutil.which("git"),
            "STUB_DIR": str(stubs), "STUB_LOG": str(stubs / "log"), "STUB_BASE": base}


def new_repo(tmp_path: Path, registry: str, namespace: str = "team") -> tuple[Path, str]:
    target = tmp_path / "repo"
    out = ok(run_rlgen("new", str(target), "--set", f"rlgen.registry={registry}/{namespace}", *POOL, "--set",
                       f"rlgen.git_url={GIT_URL}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}", *storage_answers(), "--no-input",
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


def manager_ref(repo: Path) -> str:
    """The sandbox-manager the cluster runs: the image the sync engine sets on upstream's root."""
    from ruamel.yaml import YAML

    for doc in YAML(typ="safe").load_all((repo / "infrastructure/upstream/openkruise-agents.yaml").read_text()):
        for image in (doc or {}).get("spec", {}).get("images", []):
            if image["name"] == "sandbox-manager":
                return f"{image['newName']}:{image['newTag']}"
    raise AssertionError("no sandbox-manager image")


def files_of(reference: str, env: dict) -> dict[str, bytes]:
    """The files of the image ``reference`` names, as a runtime would unpack them (crane export)."""
    exported = subprocess.run([tool("crane"), "export", reference, "-"], env=env, capture_output=True)
    assert exported.returncode == 0, exported.stderr
    with tarfile.open(fileobj=io.BytesIO(exported.stdout)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_pushes_what_the_registry_lacks_and_only_that(tmp_path, registry, env):
    repo, created = new_repo(tmp_path, registry)
    wanted, manager = refs(repo), manager_ref(repo)
    assert (f"Images to build before the first sync: {wanted['images/training']}, {wanted['images/data']}, "
            f"{manager} ") in created

    listed = build(repo, env, "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [f"{wanted['images/training']} (images/training)",
                                          f"{wanted['images/data']} (images/data)",
                                          f"{manager} (images/sandbox-manager)"]

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


def test_the_sandbox_manager_is_built_by_its_own_script_under_the_tag_the_cluster_runs(tmp_path, registry, env):
    # A namespace of its own: the module's registry already holds the other tests' images.
    repo, _ = new_repo(tmp_path, registry, "sandbox")
    manager = manager_ref(repo)
    assert manager.startswith(f"{registry}/sandbox/sandbox-manager:mcp-136236a8-")

    built = build(repo, env)
    assert built.returncode == 0, built.stdout + built.stderr
    assert f"Building {manager} from images/sandbox-manager" in built.stdout
    log = (Path(env["STUB_DIR"]) / "log").read_text().splitlines()
    assert log[0] == "clone https://github.com/openkruise/agents.git"
    assert f"make docker-build-manager MANAGER_IMG={manager}" in log
    # The pushed image holds the key store as the script edited it: key ids, never keys.
    secret_go = files_of(manager, env)["pkg/servers/e2b/keys/secret.go"].decode()
    assert '"id", adminKey.ID)' in secret_go and '"key",' not in secret_go

    # A hand edit of the script is refused like a Dockerfile's: the cluster would run the old image.
    with (repo / "images/sandbox-manager/build.sh").open("a") as script:
        script.write("echo patched by hand\n")
    edited = build(repo, env)
    assert edited.returncode == 1
    assert f"images/sandbox-manager no longer matches its tag {manager.rpartition(':')[2]}" in edited.stderr
