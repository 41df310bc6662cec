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
from support.argocd import applications, describe, install_as_the_readme_says, refresh, state, synced_at
from support.controlplane import wait_until
from support.flux import NAMESPACE, REGISTRY
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

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
    ok(run_rlgen("new", str(repo), "--no-input", "--plugin", "argo", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=github", "--set", f"rlgen.install={INSTALL}", *storage_answers(),
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
        if earlier and operation.get("retryCount", 0) >= 1:
            return operation
        refresh(cp)
        return None
    operation = wait_until("the runs Application retrying its first sync", runs_retrying, timeout=300,
                           interval=10, on_timeout=lambda: describe(cp))
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


def runs_health(cp) -> dict:
    return applications(cp)["runs"].get("status", {}).get("health", {})


def push_and_sync(cp, repo, branch: str) -> str:
    """The pull request merged and pushed, and Argo CD told to look (the push webhook's work)."""
    revision = merge_and_push(repo, branch)
    refresh(cp)
    synced_at(cp, revision)
    return revision


def test_the_rayjob_health_check_runs_in_the_controller(argo_control_plane, argo):
    """The RayJob's health comes from the generated Lua check run by the controller: Progressing
    while KubeRay runs the job, and the root, which waits for no run, stays Healthy."""
    cp = argo_control_plane
    name = run_names(argo["repo"])["baseline"]
    health = wait_until("the runs Application Progressing on its RayJob",
                        lambda: (h := runs_health(cp)).get("status") == "Progressing" and h, timeout=120)
    assert name in health.get("message", ""), health
    assert rayjobs(cp)[name]["status"]["jobDeploymentStatus"] in ("Initializing", "Running")
    assert state(applications(cp)["root"]) == ("Synced", "Healthy")


def test_a_run_that_fails_makes_the_runs_application_degraded_and_status_says_why(argo_control_plane, argo):
    """A run whose deadline passes ends Failed in KubeRay (DeadlineExceeded, never retried): the
    check says Degraded, the root still does not wait on it, status names the run and reason."""
    cp, repo = argo_control_plane, argo["repo"]
    ok(run_rlgen("run", "new", "short", "--set", "trainer.total_epochs=1", cwd=repo))
    run = repo / "runs" / "short" / "kustomization.yaml"
    # A deadline of the team's own, as a patch of the run's RayJob (KubeRay's activeDeadlineSeconds).
    run.write_text(run.read_text() + "patches:\n  - target:\n      kind: RayJob\n    patch: |-\n"
                   "      - op: add\n        path: /spec/activeDeadlineSeconds\n        value: 20\n")
    git(repo, "commit", "--quiet", "-am", "short: a deadline of 20 s")
    push_and_sync(cp, repo, "run/short")
    name = run_names(repo)["short"]
    wait_until(f"RayJob {name} Failed", lambda: rayjobs(cp).get(name, {}).get("status", {}).get(
        "jobDeploymentStatus") == "Failed", timeout=180)
    def degraded():
        # A RayJob's status changes no tracked field (the release's argocd-cm ignores /status
        # updates), so the controller looks again on its next resync, within three minutes, or
        # at once when asked, as the Refresh button does.
        refresh(cp)
        return (h := runs_health(cp)).get("status") == "Degraded" and h
    health = wait_until("the runs Application Degraded", degraded, timeout=120, interval=5)
    assert name in health.get("message", ""), health
    assert state(applications(cp)["root"]) == ("Synced", "Healthy")
    rows = {r["run"]: r for r in json.loads(rlgen(cp, repo, "status").stdout)["rows"]}
    assert rows["short"]["deployment"] == "Failed", rows["short"]
    assert "Degraded" in rows["short"]["sync"] and "DeadlineExceeded" in json.dumps(rows["short"]), rows["short"]
    waited = rlgen(cp, repo, "status", "--wait", "--timeout", "1m", "--interval", "2")
    assert waited.returncode == 1, waited.stdout + waited.stderr
    assert "short" in waited.stderr and "Degraded" in waited.stderr, waited.stderr
    doctor = rlgen(cp, repo, "doctor")
    checks = {r["check"]: r for r in json.loads(doctor.stdout)["rows"]}
    assert checks["Argo CD argocd-application-controller"]["state"] == "ok", checks
    assert checks["Argo CD argocd-repo-server"]["state"] == "ok", checks


def test_a_removed_run_is_pruned_and_a_new_one_synced_by_pull_request(argo_control_plane, argo):
    cp, repo = argo_control_plane, argo["repo"]
    failed = run_names(repo)["short"]
    ok(run_rlgen("run", "rm", "short", cwd=repo))
    push_and_sync(cp, repo, "run/rm-short")
    wait_until(f"RayJob {failed} pruned", lambda: failed not in rayjobs(cp), timeout=120)
    assert state(applications(cp)["runs"])[0] == "Synced"

    ok(run_rlgen("run", "new", "lr-3e-6", "--set", "actor_rollout_ref.actor.optim.lr=3e-6", cwd=repo))
    push_and_sync(cp, repo, "run/lr-3e-6")
    name = run_names(repo)["lr-3e-6"]
    job = wait_until(f"RayJob {name}", lambda: rayjobs(cp).get(name))
    # Argo CD 3's resource tracking: the Application that owns it, in an annotation.
    assert job["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"].startswith("runs:")
    assert set(rayjobs(cp)) == {run_names(repo)["baseline"], name}
