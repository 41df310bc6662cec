"""The generated README's *First sync* followed to the letter on an empty cluster: its numbered
steps' ``sh`` blocks, read from the README (support.runbook), run in order in the new repository
with bash, as a user runs them, the local Git server standing in for the Git host. The blocks
that cannot run here are named, each with why, and that list is asserted: it cannot grow
silently. The last block, ``rlgen status --wait``, ends with every stage Ready.

The cluster is in mainland China (cn-shanghai), the case with the most to follow: the upstream
repositories from the team's Git mirror (the local Git server), Flux's own images from the
team's registry mirror (bootstrap's ``--registry``), the model and the dataset from ModelScope."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from rlgen.e2e.cluster import KUBERAY, OPERATOR, OPERATOR_NAMESPACE
from rlgen.e2e.programs import pinned
from support.flux import REGISTRY, fetched_revision, kustomizations, post_push, ready
from support.repos import BUCKET, POOL, INSTALL, ok, run_rlgen
from support.runbook import PLACEHOLDER, run_order
from support.toolchain import tool

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

#: The blocks this control plane cannot run, by how they start, and why.
NOT_HERE = {
    "helm install kuberay-operator ": "no Helm nor chart repository here: KubeRay's operator runs as a process "
                                      "beside the API server (kwok runs no container), at the release the block "
                                      "installs, in its namespace",
    "bash images/build.sh --list": "docker buildx and the base images' registries; kwok pulls no image",
}
#: The local Git server is plain HTTP: flux refuses it without this flag (a Git host is HTTPS).
FLUX = f'flux() {{ "{tool("flux")}" "$@" --allow-insecure-http; }}\n'
RLGEN = f'rlgen() {{ "{sys.executable}" -m rlgen "$@"; }}\n'
REGION = "cn-shanghai"
FLUX_IMAGES = "registry.cn-shanghai.aliyuncs.com/rl-mirrors/fluxcd"


def exported(blocks) -> dict[str, str]:
    """What the user exports before running the blocks: a value for each ``$NAME`` they read
    (a credential, a token: nothing rlgen knows)."""
    return {m[3]: f"{m[3].lower()}-e2e" for b in blocks for m in PLACEHOLDER.finditer(b.text) if m[3]}


@pytest.fixture(scope="module")
def followed(second_control_plane, git_server, tmp_path_factory):
    """A repository generated with a user's answers, its README's First sync run block by block:
    the blocks not run, and each block run with what it printed."""
    cp = second_control_plane
    # The Git host's side of step 1: an empty repository.
    url = git_server.create("team/rl-repo-first-sync.git")
    repo = tmp_path_factory.mktemp("first-sync") / "rl-repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 "--set", f"ak-storage.bucket={BUCKET}", "--set", f"ak-storage.region={REGION}",
                 "--set", f"rlgen.region={REGION}", "--set", f"rlgen.upstream_mirror={git_server.base}",
                 "--set", f"flux.image_registry={FLUX_IMAGES}"))
    blocks = run_order((repo / "README.md").read_text())
    env = {**os.environ, **cp.env(), **exported(blocks)}
    ran, not_run = [], []
    for block in blocks:
        if any(block.first_line.startswith(start) for start in NOT_HERE):
            not_run.append(block)
            continue
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", FLUX + RLGEN + block.text], cwd=repo, env=env,
                                capture_output=True, text=True)
        assert result.returncode == 0, (f"step {block.step!r} ({block.section}) fails:\n{block.text}\n"
                                        f"{result.stdout}{result.stderr}")
        ran.append((block, result.stdout))
    return {"repo": repo, "ran": ran, "not_run": not_run, "env": env}


def test_every_block_runs_in_order_and_ends_with_every_stage_ready(second_control_plane, followed):
    # Only the blocks named in NOT_HERE were left out, each once, in the README's order.
    assert [next(s for s in NOT_HERE if b.first_line.startswith(s)) for b in followed["not_run"]] == list(NOT_HERE)
    steps = [b.step for b, _ in followed["ran"]]
    assert steps[0] == "Create the remote and push" and steps[-1] == "Watch it come up", steps
    assert {"Give the Secrets their values", "Bootstrap the sync engine"} <= set(steps)
    stages = kustomizations(second_control_plane)
    assert {"platform", "runs"} <= set(stages) and len(stages) > 3
    assert all(ready(k)["status"] == "True" for k in stages.values()), {n: ready(k) for n, k in stages.items()}
    # What bootstrap committed is in the clone (the block's git pull): a next push builds on it.
    repo = followed["repo"]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert fetched_revision(second_control_plane).endswith(head)


def test_what_the_blocks_not_run_install_is_what_this_control_plane_runs(second_control_plane, followed):
    (helm,) = [b for b in followed["not_run"] if b.first_line.startswith("helm install kuberay-operator ")]
    assert f"--version {pinned(KUBERAY).removeprefix('v')} " in helm.text
    assert f"--namespace {OPERATOR_NAMESPACE} " in helm.text
    second_control_plane.kubectl("get", "deployment", OPERATOR, "-n", OPERATOR_NAMESPACE)


def test_the_receiver_path_the_readme_prints_takes_the_git_hosts_push(second_control_plane, followed):
    cp = second_control_plane
    (path,) = [out.strip() for b, out in followed["ran"] if "get receiver git-push" in b.text]
    assert path.startswith("/hook/"), path
    # The exposing block's Service and NetworkPolicy are there (no CLB here gives it an address).
    cp.kubectl("get", "service", "webhook-receiver-public", "-n", "flux-system")
    cp.kubectl("get", "networkpolicy", "allow-webhook-receiver-from-outside", "-n", "flux-system")
    head = fetched_revision(cp).rpartition(":")[2]
    token = followed["env"]["GIT_WEBHOOK_TOKEN"]
    assert post_push(cp, path, token, head) == 200
    assert post_push(cp, path, token + "-not-it", head) == 400


def test_flux_runs_the_images_of_the_teams_mirror(second_control_plane, followed):
    deployments = second_control_plane.objects("deployments", "-n", "flux-system")
    images = {c["image"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"]}
    assert images and all(i.startswith(FLUX_IMAGES + "/") for i in images), images
