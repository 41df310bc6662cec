"""A training run changed by pull request, as a team works: ``rlgen run`` on a branch, the
repository's own offline CI steps, a merge, a push, and Flux syncing the cluster to it."""
from __future__ import annotations

import json
import subprocess

import pytest
from support.controlplane import wait_until
from support.flux import NAMESPACE, reconcile
from support.kuberay import ray_pods
from support.repos import ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def merge_and_push(repo, branch: str) -> None:
    """The pull request merged (a merge commit, as the README asks) and the main branch pushed."""
    git(repo, "checkout", "--quiet", "main")
    git(repo, "-c", "user.name=reviewer", "-c", "user.email=reviewer@rl-team.cn",
        "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")


def ci(repo) -> dict:
    """What the generated CI runs on a pull request and can run offline."""
    validate = run_rlgen("validate", "--offline", "-o", "json", cwd=repo)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    return json.loads(ok(run_rlgen("diff", "-o", "json", cwd=repo)))


def rayjobs(cp) -> dict[str, dict]:
    return {j["metadata"]["name"]: j for j in cp.objects("rayjobs", "-n", NAMESPACE)}


def run_names(repo) -> dict[str, str]:
    return {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}


def worker_pods(cp, rayjob: str) -> list[dict]:
    return ray_pods(cp, NAMESPACE, rayjob, "worker")


def a_new_run_merged_by_pull_request_is_synced_with_its_config(cp, repo):
    ok(run_rlgen("run", "new", "lr-3e-6", "--set", "actor_rollout_ref.actor.optim.lr=3e-6", cwd=repo))
    assert git(repo, "branch", "--show-current").strip() == "run/lr-3e-6"
    assert ci(repo)
    merge_and_push(repo, "run/lr-3e-6")
    reconcile(cp)
    name = run_names(repo)["lr-3e-6"]
    job = wait_until(f"RayJob {name}", lambda: rayjobs(cp).get(name))
    config = next(c for c in cp.objects("configmaps", "-n", NAMESPACE)
                  if c["metadata"]["name"] in str(job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]))
    assert "lr: 3.0e-06" in config["data"]["run.yaml"] or "lr: 3e-06" in config["data"]["run.yaml"]


def a_removed_run_is_pruned(cp, repo):
    baseline = run_names(repo)["baseline"]
    assert baseline in rayjobs(cp)
    git(repo, "checkout", "--quiet", "-b", "remove-baseline", "main")
    ok(run_rlgen("run", "rm", "baseline", "--no-branch", cwd=repo))
    ci(repo)
    merge_and_push(repo, "remove-baseline")
    reconcile(cp)
    wait_until(f"RayJob {baseline} pruned", lambda: baseline not in rayjobs(cp))


def a_changed_run_gets_a_new_rayjob_and_a_resize_schedules_that_many_workers(cp, repo):
    before = run_names(repo)["lr-3e-6"]
    git(repo, "checkout", "--quiet", "-b", "resize", "main")
    ok(run_rlgen("run", "set", "lr-3e-6", "trainer.nnodes=2", cwd=repo))
    after = run_names(repo)["lr-3e-6"]
    assert after != before
    ci(repo)
    merge_and_push(repo, "resize")
    reconcile(cp)
    wait_until(f"RayJob {before} replaced by {after}", lambda: (jobs := rayjobs(cp)) and after in jobs
               and before not in jobs)
    pods = wait_until("2 GPU workers scheduled", lambda: (ps := worker_pods(cp, after)) and len(ps) == 2
                      and all(p["spec"].get("nodeName", "").startswith("lingjun-gpu-") for p in ps) and ps,
                      timeout=120)
    assert len({p["spec"]["nodeName"] for p in pods}) == 2


def a_run_larger_than_the_gpu_pool_stays_pending(cp, repo):
    git(repo, "checkout", "--quiet", "-b", "too-big", "main")
    ok(run_rlgen("run", "set", "lr-3e-6", "trainer.nnodes=8", cwd=repo))
    ci(repo)
    merge_and_push(repo, "too-big")
    reconcile(cp)
    name = run_names(repo)["lr-3e-6"]

    def placed():
        pods = worker_pods(cp, name)
        if len(pods) < 8:
            return None
        return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}

    # 8 nodes of 8 GPUs asked of a pool of 4 (a size verl accepts: 4096 samples over 64 GPUs).
    placed_pods = wait_until("8 GPU worker pods created", placed, timeout=120)
    wait_until("4 scheduled, 4 Pending", lambda: sum(1 for n in (placed() or {}).values() if n) == 4, timeout=60)
    pending = [p for p in worker_pods(cp, name) if not p["spec"].get("nodeName")]
    assert len(pending) == 4 and len(placed_pods) == 8
    events = cp.objects("events", "-n", NAMESPACE, "--field-selector", "reason=FailedScheduling")
    assert any("nvidia.com/gpu" in e["message"] for e in events)


def test_runs_changed_by_pull_request_reach_the_cluster(control_plane, synced):
    """One story, in the order a team lives it: each step starts from the cluster the last left."""
    for step in (a_new_run_merged_by_pull_request_is_synced_with_its_config, a_removed_run_is_pruned,
                 a_changed_run_gets_a_new_rayjob_and_a_resize_schedules_that_many_workers,
                 a_run_larger_than_the_gpu_pool_stays_pending):
        step(control_plane, synced["repo"])
