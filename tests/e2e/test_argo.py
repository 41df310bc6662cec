"""The argo variant on a control plane of its own, synced by the real Argo CD: the pinned
release's application controller and repo-server (toolchain/argocd), installed and started as
the README says. Its objects share names with the default repository's (``rl-training``, the
volumes), so it cannot sync beside it on the shared API server.

KubeRay arrives after the first sync, as an add-on installed late does: the runs Application's
first sync fails on the unknown RayJob kind, and the generated retry policy finishes it.
"""
from __future__ import annotations

import json
import subprocess
from datetime import datetime

import pytest
from rlgen.e2e.cluster import start_kuberay
from support.argocd import (NAMESPACE as ARGOCD, applications, describe, install_as_the_readme_says, refresh,
                            state, synced_at)
from support.controlplane import wait_until
from support.flux import NAMESPACE, REGISTRY
from support.repos import INSTALL, ok, run_rlgen, storage_answers

pytestmark = pytest.mark.usefixtures("dump_argo_on_failure")

#: The Applications of the default argo repository, by the sync wave each carries.
WAVES = {"sandbox-operator": 0, "sandbox-manager": 1, "platform": 2, "runs": 3}


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=e2e", "-c", "user.email=e2e@rl-team.cn", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def merge_and_push(repo, branch: str) -> str:
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")
    return git(repo, "rev-parse", "HEAD")


def rayjobs(cp) -> dict[str, dict]:
    return {j["metadata"]["name"]: j for j in cp.objects("rayjobs", "-n", NAMESPACE)}


def run_names(repo) -> dict[str, str]:
    return {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}


def rlgen(cp, repo, *args: str):
    result = run_rlgen(*args, "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    assert result.returncode != 70, result.stderr
    return result


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def argo(argo_control_plane, git_server, create_readme_secrets, tmp_path_factory):
    """The argo repository generated with a user's answers, pushed, its Secrets created and Argo CD
    installed and its root applied by the README's commands, with KubeRay not installed yet."""
    cp = argo_control_plane
    url = git_server.create("team/rl-argo.git")
    repo = tmp_path_factory.mktemp("argo") / "rl-argo"
    ok(run_rlgen("new", str(repo), "--no-input", "--plugin", "argo", "--set", f"rlgen.registry={REGISTRY}",
                 "--set", f"rlgen.git_url={url}", "--set", f"rlgen.install={INSTALL}", *storage_answers(),
                 "--set", f"rlgen.upstream_mirror={git_server.base}"))
    git(repo, "remote", "add", "origin", url)
    git(repo, "push", "--quiet", "-u", "origin", "HEAD:main")
    create_readme_secrets(cp, repo)
    install_as_the_readme_says(cp, repo)
    return {"repo": repo, "url": url}


def test_a_first_sync_without_kuberay_is_retried_and_every_wave_syncs_in_order(argo_control_plane, argo):
    cp = argo_control_plane
    # Every wave before runs syncs and is healthy; runs fails on the RayJob kind and retries.
    def runs_retrying():
        apps = applications(cp)
        if set(apps) != set(WAVES) | {"root"}:
            return None
        earlier = all(state(apps[n]) == ("Synced", "Healthy") for n in WAVES if n != "runs")
        operation = apps["runs"].get("status", {}).get("operationState", {})
        return earlier and operation.get("retryCount", 0) >= 1 and operation
    operation = wait_until("the runs Application retrying its first sync", runs_retrying, timeout=300,
                           interval=2, on_timeout=lambda: describe(cp))
    assert "ray.io/v1" in operation["message"], operation

    start_kuberay(cp)
    apps = synced_at(cp, git(argo["repo"], "rev-parse", "HEAD"))
    assert apps["runs"]["status"]["operationState"]["phase"] == "Succeeded"
    # A wave starts once the one before is healthy: each Application was created after the sync of
    # the one a wave lower had finished.
    ordered = sorted(WAVES, key=WAVES.get)
    for lower, higher in zip(ordered, ordered[1:]):
        finished = apps[lower]["status"]["operationState"]["finishedAt"]
        assert when(apps[higher]["metadata"]["creationTimestamp"]) >= when(finished), (lower, higher)
    assert rayjobs(cp), "the baseline run's RayJob"


def test_the_rayjob_health_check_runs_in_the_controller(argo_control_plane, argo):
    cp = argo_control_plane
    name = run_names(argo["repo"])["baseline"]

    def rayjob_health():
        resources = applications(cp)["runs"].get("status", {}).get("resources", [])
        found = next((r for r in resources if r["kind"] == "RayJob" and r["name"] == name), None)
        return found and found.get("health")
    health = wait_until("the RayJob's health from the Lua check", rayjob_health, timeout=120)
    assert health["status"] == "Progressing", health
    # The root waits for no run: it stays Healthy while the run is Progressing.
    assert state(applications(cp)["root"])[1] == "Healthy"
