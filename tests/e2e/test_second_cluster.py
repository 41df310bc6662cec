"""A second cluster added to the synced repository with ``rlgen cluster add``, as a team adds a
staging cluster: the change merged and pushed, the first cluster keeps syncing production, and
the new cluster syncs ``clusters/staging-1`` (the staging overlays).

The second cluster is an API server of its own: both clusters' entry points name the same Flux
Kustomizations in flux-system and the same namespaces, claims and cluster-scoped volumes, so two
clusters' objects cannot live in one API server."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from support.flux import NAMESPACE, kustomizations, reconcile, ready
from support.kuberay import ray_pods
from support.repos import ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_second_on_failure")

CLUSTER = "staging-1"


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=reviewer", "-c", "user.email=reviewer@rl-team.cn",
                           *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def staging(control_plane, second_control_plane, synced, sync_repository):
    repo = synced["repo"]
    git(repo, "checkout", "--quiet", "main")
    ok(run_rlgen("cluster", "add", CLUSTER, "--env", "staging", cwd=repo))
    branch = git(repo, "branch", "--show-current").strip()
    # The README's way to run a run on staging first: a copy of its folder in the environment's
    # runs folder (the first run the repository has now: earlier modules rename and remove runs).
    run = json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))[0]["run"]
    shutil.copytree(repo / "overlays" / "production" / "runs" / run, repo / "overlays" / "staging" / "runs" / run)
    git(repo, "add", "overlays/staging/runs")
    git(repo, "commit", "--quiet", "-m", f"staging: run {run}")
    validate = run_rlgen("validate", "--offline", "-o", "json", cwd=repo)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")
    reconcile(control_plane)
    second = sync_repository(second_control_plane, repo, synced["url"], f"clusters/{CLUSTER}")
    # The second cluster's bootstrap committed its components under clusters/staging/: the first
    # cluster follows that commit too (nothing of clusters/production/ changed).
    first = reconcile(control_plane)
    return {"repo": repo, "run": run, "first": first, "second": second}


def test_cluster_list_names_both_clusters(staging):
    listed = json.loads(ok(run_rlgen("cluster", "list", "-o", "json", cwd=staging["repo"])))
    assert {c["cluster"]: c["environment"] for c in listed} == {"production": "production", CLUSTER: "staging"}


def test_the_second_cluster_syncs_the_staging_overlays_and_the_first_keeps_production(
        control_plane, second_control_plane, staging):
    first, second = kustomizations(control_plane), kustomizations(second_control_plane)
    assert set(first) == set(second)
    for ks in (first, second):
        assert all(ready(k)["status"] == "True" for k in ks.values())
    assert second["flux-system"]["spec"]["path"] == f"./clusters/{CLUSTER}"
    assert second["platform"]["spec"]["path"] == "./overlays/staging/platform"
    assert first["platform"]["spec"]["path"] == "./overlays/production/platform"
    # Both at one commit, the last one bootstrap pushed (the stages of this repository;
    # sandbox-operator applies the upstream release's own repository).
    revisions = {k["status"]["lastAppliedRevision"] for ks in (first, second) for k in ks.values()
                 if k["spec"]["sourceRef"]["name"] == "flux-system"}
    assert len(revisions) == 1, revisions

    def warm_pool(cp):
        return {s["metadata"]["name"]: s["spec"]["replicas"] for s in cp.objects("sandboxsets", "-A")}
    staging_pool, production_pool = warm_pool(second_control_plane), warm_pool(control_plane)
    assert set(staging_pool) == set(production_pool)
    assert set(staging_pool.values()) == {1} and all(n > 1 for n in production_pool.values())


def test_the_run_listed_for_staging_runs_on_the_second_cluster(second_control_plane, staging):
    cp, repo = second_control_plane, staging["repo"]
    rayjob = {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}
    name = rayjob[staging["run"]]
    assert {j["metadata"]["name"] for j in cp.objects("rayjobs", "-n", NAMESPACE)} == {name}
    waited = run_rlgen("status", "--wait", "--timeout", "3m", "--interval", "2", "--kubeconfig", str(cp.kubeconfig),
                       "-o", "json", cwd=repo)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    pods = ray_pods(cp, NAMESPACE, name)
    assert pods and all(p["spec"].get("nodeName") for p in pods)
    doctor = run_rlgen("doctor", "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    # A skipped row (the bucket, without OSS credentials here) is not a problem.
    problems = [r for r in json.loads(doctor.stdout)["rows"] if r["state"] not in ("ok", "skipped")]
    assert doctor.returncode == 0 and not problems, json.dumps(problems, indent=1)
