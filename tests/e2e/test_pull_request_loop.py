"""A training run changed by pull request, as a team works: ``rlgen run`` on a branch, the
repository's own offline CI steps, a merge, a push, and Flux syncing the cluster to it."""
from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path, PurePosixPath

import pytest
from ruamel.yaml import YAML
from support.controlplane import wait_until
from support.flux import NAMESPACE, reconcile
from support.kuberay import ray_cluster, ray_pods
from support.repos import ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")
#: Where the pods mount the checkpoints volume (its folder of the bucket).
CHECKPOINTS = "/var/checkpoints"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def merge_and_push(repo, branch: str) -> None:
    """The pull request merged (a merge commit, as the README asks) and the main branch pushed."""
    git(repo, "checkout", "--quiet", "main")
    git(repo, "-c", "user.name=reviewer", "-c", "user.email=reviewer@rl-team.cn",
        "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")


def ci(repo, run: str = "") -> dict:
    """What the generated CI runs on a pull request and can run offline: the run rendered,
    ``rlgen validate`` (kubeconform -strict on every rendered object, and rlgen's rules),
    ``rlgen diff`` against the branch the cluster syncs."""
    if run:
        rendered = ok(run_rlgen("render", f"runs/{run}", cwd=repo))
        assert f"name: {run_names(repo)[run]}\n" in rendered and "kind: RayJob" in rendered
    validate = run_rlgen("validate", "--offline", "-o", "json", cwd=repo)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    report = json.loads(validate.stdout)
    assert report["engine"] == "kubeconform" and report["checked"] > 0, report
    return json.loads(ok(run_rlgen("diff", "-o", "json", cwd=repo)))


def status_wait(cp, repo):
    """``rlgen status --wait``, as the repository's cluster-status workflow runs it after a push."""
    return run_rlgen("status", "--wait", "--timeout", "3m", "--interval", "2", "--kubeconfig", str(cp.kubeconfig),
                     "-o", "json", cwd=repo)


def rayjobs(cp) -> dict[str, dict]:
    return {j["metadata"]["name"]: j for j in cp.objects("rayjobs", "-n", NAMESPACE)}


def run_names(repo) -> dict[str, str]:
    return {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}


def worker_pods(cp, rayjob: str) -> list[dict]:
    return ray_pods(cp, NAMESPACE, rayjob, "worker")


def a_new_run_merged_by_pull_request_is_synced_with_its_config(cp, repo):
    ok(run_rlgen("run", "new", "lr-3e-6", "--set", "actor_rollout_ref.actor.optim.lr=3e-6", cwd=repo))
    assert git(repo, "branch", "--show-current").strip() == "run/lr-3e-6"
    assert ci(repo, "lr-3e-6")
    merge_and_push(repo, "run/lr-3e-6")
    reconcile(cp)
    name = run_names(repo)["lr-3e-6"]
    job = wait_until(f"RayJob {name}", lambda: rayjobs(cp).get(name))
    config = next(c for c in cp.objects("configmaps", "-n", NAMESPACE)
                  if c["metadata"]["name"] in str(job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]))
    assert "lr: 3.0e-06" in config["data"]["run.yaml"] or "lr: 3e-06" in config["data"]["run.yaml"]


def a_sweep_is_synced_found_by_its_label_and_removed_by_one_pull_request(cp, repo):
    made = json.loads(ok(run_rlgen("run", "sweep", "lr", "--grid", "actor_rollout_ref.actor.optim.lr=1e-6,2e-6",
                                   "-o", "json", cwd=repo)))
    assert made["branch"] == "run/sweep-lr" and [r["run"] for r in made["runs"]] == ["lr-1", "lr-2"]
    ci(repo)
    merge_and_push(repo, "run/sweep-lr")
    reconcile(cp)
    names = {r["rayjob"] for r in made["runs"]}

    def labelled() -> set[str]:
        return {j["metadata"]["name"] for j in cp.objects("rayjobs", "-n", NAMESPACE, "-l", "rlgen.io/sweep=lr")}

    wait_until("the sweep's RayJobs, found by its label", lambda: labelled() == names)
    clusters = {name: wait_until(f"RayCluster of {name}", lambda: ray_cluster(cp, NAMESPACE, name)) for name in names}
    ok(run_rlgen("run", "rm", "--sweep", "lr", cwd=repo))
    assert git(repo, "branch", "--show-current").strip() == "run/rm-sweep-lr"
    ci(repo)
    merge_and_push(repo, "run/rm-sweep-lr")
    reconcile(cp)
    wait_until("the sweep's RayJobs pruned", lambda: not labelled())
    # Their GPUs free again for the steps after this one.
    wait_until("the sweep's pods gone", lambda: not any(
        cp.objects("pods", "-n", NAMESPACE, "-l", f"ray.io/cluster={c}") for c in clusters.values()))


def a_removed_run_is_pruned(cp, repo):
    baseline = run_names(repo)["baseline"]
    assert baseline in rayjobs(cp)
    git(repo, "checkout", "--quiet", "-b", "remove-baseline", "main")
    ok(run_rlgen("run", "rm", "baseline", "--no-branch", cwd=repo))
    ci(repo)
    merge_and_push(repo, "remove-baseline")
    reconcile(cp)
    wait_until(f"RayJob {baseline} pruned", lambda: baseline not in rayjobs(cp))


def resize(cp, repo, branch: str, nodes: int) -> tuple[str, str]:
    """``rlgen run set lr-3e-6 trainer.nnodes=<nodes>`` on ``branch``, CI green, merged, pushed and
    synced: the RayJob names before and after (a changed run gets a new name). ``rlgen run set``
    and the pull request's diff both say that the new RayJob starts from step 0."""
    before = run_names(repo)["lr-3e-6"]
    git(repo, "checkout", "--quiet", "-b", branch, "main")
    said = ok(run_rlgen("run", "set", "lr-3e-6", f"trainer.nnodes={nodes}", "-o", "table", cwd=repo))
    assert "Restarts from step 0" in said, said
    after = run_names(repo)["lr-3e-6"]
    assert after != before
    assert ci(repo, "lr-3e-6")["restarts"] == "Restart from step 0: lr-3e-6 (new RayJob)"
    merge_and_push(repo, branch)
    reconcile(cp)
    return before, after


def checkpoint_folder(cp, rayjob: str) -> str:
    """Where a synced RayJob's verl saves and resumes from, as its pods see it: its run.yaml's
    trainer.default_local_dir (the ConfigMap it mounts) / RLGEN_RAYJOB (its head's environment),
    which resume.py joins (tests/verl/test_checkpoints.py runs it)."""
    pod = rayjobs(cp)[rayjob]["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0].get("env") or []}
    configmap = next(v["configMap"]["name"] for v in pod["volumes"] if v["name"] == "configs")
    data = next(c for c in cp.objects("configmaps", "-n", NAMESPACE) if c["metadata"]["name"] == configmap)["data"]
    return f"{YAML(typ='safe').load(data['run.yaml'])['trainer']['default_local_dir']}/{env['RLGEN_RAYJOB']}"


def save(bucket: Path, folder: str, step: int, world: int) -> Path:
    """A save as verl leaves it in the checkpoints volume (its folder of the bucket): each rank's
    shard, then the tracker file that auto-resume reads."""
    local = bucket / PurePosixPath(folder).relative_to(CHECKPOINTS)
    (local / f"global_step_{step}" / "actor").mkdir(parents=True)
    for rank in range(world):
        (local / f"global_step_{step}" / "actor" / f"model_world_size_{world}_rank_{rank}.pt").write_bytes(b"")
    (local / "latest_checkpointed_iteration.txt").write_text(str(step))
    return local


def a_changed_run_gets_a_new_rayjob_and_a_resize_schedules_that_many_workers(cp, repo, tmp_path):
    # The run has saved once at its size (1 x 8) before it is resized.
    saved = save(tmp_path, checkpoint_folder(cp, run_names(repo)["lr-3e-6"]), 20, 8)
    for nodes in (2, 4):
        before, after = resize(cp, repo, f"resize-{nodes}", nodes)
        if nodes == 2:
            # The new RayJob's folder holds no checkpoint of the old one: it starts from step 0,
            # not from shards of 8 GPUs it could not load; the old folder is left as it was.
            folder = tmp_path / PurePosixPath(checkpoint_folder(cp, after)).relative_to(CHECKPOINTS)
            assert folder != saved and folder.parent == saved.parent
            assert not folder.exists() or not any(folder.iterdir())
            assert (saved / "latest_checkpointed_iteration.txt").read_text() == "20"
        wait_until(f"RayJob {before} replaced by {after}", lambda: (jobs := rayjobs(cp)) and after in jobs
                   and before not in jobs)
        waited = status_wait(cp, repo)
        assert waited.returncode == 0, waited.stderr
        pods = worker_pods(cp, after)
        assert len(pods) == nodes, [p["metadata"]["name"] for p in pods]
        assert all(p["spec"].get("nodeName", "").startswith("lingjun-gpu-") for p in pods)
        assert len({p["spec"]["nodeName"] for p in pods}) == nodes


def a_run_larger_than_the_gpu_pool_stays_pending(cp, repo):
    _, name = resize(cp, repo, "too-big", 8)

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
    # What a team's CI learns from the staging cluster: the run cannot start, and why.
    waited = status_wait(cp, repo)
    reason = waited.stderr.strip().splitlines()[-1]
    assert waited.returncode == 1 and reason.startswith("rlgen: error: cannot resolve by itself: run lr-3e-6: pod "), reason
    assert "cannot be scheduled" in reason and "Insufficient nvidia.com/gpu" in reason
    # doctor says the same of the pool, before anything was synced: too few GPU nodes.
    doctor = run_rlgen("doctor", "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    rows = {r["check"]: r for r in json.loads(doctor.stdout)["rows"]}
    gpu = next(r for c, r in rows.items() if c.startswith(f"GPU nodes for {name}/"))
    assert doctor.returncode == 1 and gpu["state"] == "problem", gpu
    assert gpu["detail"].startswith("room for 4 of 8 pod(s) of 8 nvidia.com/gpu"), gpu


def a_run_shrunk_back_fits_again(cp, repo):
    """The cluster as the next tests expect it: every run scheduled."""
    resize(cp, repo, "shrink", 2)
    waited = status_wait(cp, repo)
    assert waited.returncode == 0, waited.stderr


def test_runs_changed_by_pull_request_reach_the_cluster(control_plane, synced, tmp_path):
    """One story, in the order a team lives it: each step starts from the cluster the last left."""
    for step in (a_new_run_merged_by_pull_request_is_synced_with_its_config,
                 a_sweep_is_synced_found_by_its_label_and_removed_by_one_pull_request, a_removed_run_is_pruned,
                 functools.partial(a_changed_run_gets_a_new_rayjob_and_a_resize_schedules_that_many_workers,
                                   tmp_path=tmp_path),
                 a_run_larger_than_the_gpu_pool_stays_pending, a_run_shrunk_back_fits_again):
        step(control_plane, synced["repo"])
