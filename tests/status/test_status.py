"""rlgen status against a recorded-object API server: RayJobs as KubeRay v1.7.0 writes them,
Flux and Argo CD stage status as their controllers write it, real git for "merged"."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

from support import cluster_objects as co
from support.cluster import against, closed_port, rows
from support.fake_apiserver import FakeAPIServer
from support.repos import git, link, ok, one_error_line, pinned, rlgen_in

NS = "rl-training"


def head(repo) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def cluster(repo, *extra, stage=None):
    return [*co.healthy({"namespace": NS}), stage or co.flux_stage("runs", head(repo)), *extra]


def test_a_running_run_shows_kuberay_status_dashboard_and_sync(repo):
    name = pinned(repo, "baseline")
    job = co.rayjob(name, NS, "Running", "RUNNING", start="2026-11-30T09:00:00Z")
    result, _ = against(repo, cluster(repo, job), "status")
    assert result.returncode == 0, result.stderr
    row = rows(result)["baseline"]
    assert (row["rayjob"], row["deployment"], row["job"], row["pending"]) == (name, "Running", "RUNNING", "0")
    assert row["started"] == "2026-11-30T09:00:00Z" and row["duration"].endswith("(running)")
    assert row["dashboard"] == f"{name}-x7k2p-head-svc.{NS}.svc.cluster.local:8265"
    assert row["sync"] == f"Ready=True ReconciliationSucceeded: Applied revision: main@sha1:{head(repo)}"


def test_a_pending_run_says_why_the_scheduler_cannot_place_it(repo):
    name = pinned(repo, "baseline")
    objects = cluster(repo, co.rayjob(name, NS, "Initializing"), *co.pending_head(name, NS))
    result, _ = against(repo, objects, "status")
    row = rows(result)["baseline"]
    assert row["deployment"] == "Initializing"
    assert row["pending"].startswith("1: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu")
    assert row["dashboard"].endswith("(not ready)")


def test_a_failed_run_exits_1_with_kuberay_reason(repo):
    name = pinned(repo, "baseline")
    job = co.rayjob(name, NS, "Failed", "FAILED", start="2026-11-30T09:00:00Z", end="2026-11-30T10:30:00Z",
                    reason="AppFailed", message="Job entrypoint command failed with exit code 1")
    result, _ = against(repo, cluster(repo, job), "status")
    assert one_error_line(result, 1) == "rlgen: error: run(s) failed: baseline"
    row = rows(result)["baseline"]
    assert row["duration"] == "1h30m"
    assert row["note"] == "AppFailed: Job entrypoint command failed with exit code 1"


def retried(job: dict, failed: int, backoff_limit: int = 3) -> dict:
    """``job`` as KubeRay v1.6.2 leaves a RayJob after ``failed`` failed attempts."""
    job["spec"]["backoffLimit"] = backoff_limit
    job["status"]["failed"] = failed
    job["status"]["succeeded"] = 0
    return job


def test_a_retried_run_shows_its_retries_in_json_and_table(repo):
    name = pinned(repo, "baseline")
    job = retried(co.rayjob(name, NS, "Running", "RUNNING"), failed=1)
    result, _ = against(repo, cluster(repo, job), "status")
    assert result.returncode == 0, result.stderr
    assert rows(result)["baseline"]["retries"] == "1 of 3"
    with FakeAPIServer(cluster(repo, job)) as server:
        table = rlgen_in(repo, "status", "--kubeconfig", str(server.kubeconfig(repo.parent / "kc.json")),
                         "-o", "table")
    header = next(line for line in table.stdout.splitlines() if "┃" in line)
    row = next(line for line in table.stdout.splitlines() if "│ baseline" in line)
    assert [c.strip() for c in header.split("┃")[1:5]] == ["run", "rayjob", "deployment", "retries"], table.stdout
    assert [c.strip() for c in row.split("│")[3:5]] == ["Running", "1 of 3"], table.stdout


def test_a_run_out_of_retries_says_none_left_and_a_first_attempt_shows_none(repo):
    name = pinned(repo, "baseline")
    job = retried(co.rayjob(name, NS, "Failed", "FAILED", reason="SubmissionFailed"), failed=4)
    result, _ = against(repo, cluster(repo, job), "status")
    assert result.returncode == 1
    assert rows(result)["baseline"]["retries"] == "3 of 3, none left"
    fresh = retried(co.rayjob(name, NS, "Running", "RUNNING"), failed=0)
    result, _ = against(repo, cluster(repo, fresh), "status")
    assert rows(result)["baseline"]["retries"] == ""
    with FakeAPIServer(cluster(repo, fresh)) as server:
        table = rlgen_in(repo, "status", "--kubeconfig", str(server.kubeconfig(repo.parent / "kc.json")),
                         "-o", "table")
    assert "retries" not in table.stdout


def test_a_run_not_merged_yet(repo):
    ok(rlgen_in(repo, "run", "new", "lr-sweep", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    main = git(repo, "rev-parse", "main").strip()
    result, _ = against(repo, cluster(repo, co.rayjob(pinned(repo, "baseline"), NS, "Running", "RUNNING"),
                                      stage=co.flux_stage("runs", main)), "status")
    found = rows(result)
    assert found["lr-sweep"]["note"] == f"not merged yet: commit {head(repo)[:7]} is not on main"
    assert found["baseline"]["deployment"] == "Running"


def test_a_merged_run_the_sync_engine_has_not_applied(repo):
    applied = head(repo)
    ok(rlgen_in(repo, "run", "new", "lr-sweep", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    result, _ = against(repo, cluster(repo, stage=co.flux_stage("runs", applied)), "status", "lr-sweep")
    assert set(rows(result)) == {"lr-sweep"}
    assert rows(result)["lr-sweep"]["note"] == f"merged, not applied yet: the sync engine applied {applied[:7]}"


def test_a_failing_flux_stage_explains_a_missing_rayjob(repo):
    stage = co.flux_stage("runs", head(repo), ready="False", reason="BuildFailed",
                          message="kustomize build failed: accumulating resources: 'runs/x' not found")
    result, _ = against(repo, cluster(repo, stage=stage), "status")
    assert rows(result)["baseline"]["note"] == (
        "sync failing: Ready=False BuildFailed: kustomize build failed: accumulating resources: 'runs/x' not found")


def test_an_applied_run_without_rayjob_was_deleted(repo):
    result, _ = against(repo, cluster(repo), "status")
    assert rows(result)["baseline"]["note"].startswith("applied but absent: deleted from the cluster")


def test_a_removed_run_is_pruned(repo):
    ok(rlgen_in(repo, "run", "new", "lr-sweep", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    shutil.rmtree(repo / link("lr-sweep").rpartition("/")[0])
    name = pinned(repo, "lr-sweep")
    result, _ = against(repo, cluster(repo, co.rayjob(name, NS, "Running", "RUNNING")), "status", "lr-sweep")
    assert rows(result)["lr-sweep"]["note"] == "removed from the environment's runs: the sync engine prunes it"


def test_an_argo_application_that_failed_to_sync(generate, tmp_path):
    import shutil

    repo = shutil.copytree(generate("--plugin", "argo"), tmp_path / "repo", symlinks=True)
    app = co.argo_app("runs", head(repo), sync="OutOfSync", health="Missing", phase="Failed",
                      message="one or more objects failed to apply, reason: RayJob.ray.io is invalid")
    result, _ = against(repo, [*co.healthy({"namespace": NS}), *co.argo(), app], "status")
    assert rows(result)["baseline"]["note"] == ("sync failing: OutOfSync, Missing, last sync Failed: one or more "
                                                "objects failed to apply, reason: RayJob.ray.io is invalid")


def test_forbidden_rayjobs_are_cannot_check(repo):
    result, _ = against(repo, cluster(repo), "status", forbidden={"rayjobs"})
    assert result.returncode == 0
    assert rows(result)["baseline"]["note"].startswith(
        'cannot check: rayjobs.ray.io "' + pinned(repo, "baseline") + '" is forbidden: User "rlgen-test" cannot get')


def test_watch_refreshes_until_interrupted(repo):
    name = pinned(repo, "baseline")
    with FakeAPIServer(cluster(repo, co.rayjob(name, NS, "Running", "RUNNING"))) as server:
        config = server.kubeconfig(repo.parent / "watch-config")
        proc = subprocess.Popen([sys.executable, "-m", "rlgen", "status", "--watch", "--interval", "0.1",
                                 "--kubeconfig", str(config), "-o", "json"], cwd=repo,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            refreshes = [json.loads(proc.stdout.readline()) for _ in range(2)]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert [r["rows"][0]["deployment"] for r in refreshes] == ["Running", "Running"]
    assert server.requests.count("/version/") == 1


def test_an_unknown_run_and_an_unreachable_cluster_are_one_line(repo, tmp_path):
    config = FakeAPIServer().kubeconfig(tmp_path / "config", server=f"http://127.0.0.1:{closed_port()}")
    assert "no run 'nope'" in one_error_line(rlgen_in(repo, "status", "nope", "--kubeconfig", str(config)))
    line = one_error_line(rlgen_in(repo, "status", "--kubeconfig", str(config)))
    assert line.startswith("rlgen: error: cannot reach the cluster at http://127.0.0.1:")


def test_a_server_answering_garbage_is_one_line(repo):
    result, _ = against(repo, [], "status", garbage=True)
    assert "did not answer like a Kubernetes API server" in one_error_line(result)


def test_a_stage_waiting_on_a_failed_dependency_names_the_stage_to_fix(repo):
    runs = co.flux_stage("runs", head(repo), ready="False", reason="DependencyNotReady",
                         message="dependency 'flux-system/platform' is not ready")
    runs["spec"]["dependsOn"] = [{"name": "platform"}]
    platform = co.flux_stage("platform", head(repo), ready="False", reason="BuildFailed",
                             message="kustomize build failed: 'missing.yaml' not found",
                             path="./overlays/production/platform")
    result, _ = against(repo, [*co.healthy({"namespace": NS}), runs, platform], "status")
    assert rows(result)["baseline"]["note"] == (
        "sync failing: Ready=False DependencyNotReady: dependency 'flux-system/platform' is not ready; its dependency "
        "Kustomization platform failed: Ready=False BuildFailed: kustomize build failed: 'missing.yaml' not found")


def test_cluster_names_which_of_the_repository_clusters_is_read(repo):
    """Another cluster's runs are its environment's index: a run moved to staging's is removed
    for production, and staging's own with --cluster staging; a cluster rlgen.yaml lacks is one line."""
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    ok(rlgen_in(repo, "run", "new", "try-it", "--no-branch"))
    (repo / "overlays/staging/runs/try-it").mkdir()
    (repo / link("try-it")).rename(repo / link("try-it", "staging"))
    (repo / "overlays/production/runs/try-it").rmdir()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "try-it on staging")
    live = cluster(repo, co.rayjob(pinned(repo, "try-it"), NS, "Running", "RUNNING"))
    result, _ = against(repo, live, "status", "try-it")
    assert rows(result)["try-it"]["note"] == "removed from the environment's runs: the sync engine prunes it"
    result, _ = against(repo, live, "status", "try-it", "--cluster", "staging")
    assert result.returncode == 0, result.stderr
    assert rows(result)["try-it"]["note"] == "" and rows(result)["try-it"]["deployment"] == "Running"
    result, _ = against(repo, live, "status", "--cluster", "nope")
    assert "--cluster: no cluster 'nope'" in one_error_line(result) and "production, staging" in one_error_line(result)
    result, _ = against(repo, live, "doctor", "--cluster", "nope")
    assert "--cluster: no cluster 'nope'" in one_error_line(result)
