"""Runs of several researchers' teams sharing one Kueue pool: each run waits in its team's
LocalQueue, named by ``--team`` (never guessed when several teams share the pool), and a sweep
is no larger than the quota runs at once unless asked for by name."""
from __future__ import annotations

import shutil

import pytest
from support.repos import build, one_error_line, run_rlgen

TEAMS = ("--plugin", "kueue", "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=alice,bob")


@pytest.fixture
def repo(generate, tmp_path):
    return shutil.copytree(generate(*TEAMS), tmp_path / "repo", symlinks=True)


def queue_of(repo, run: str) -> str:
    (job,) = [o for o in build(repo / "runs" / run) if o["kind"] == "RayJob"]
    return job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]


def test_each_team_has_its_queue_and_the_pool_is_shared_by_recent_use(repo):
    objects = {(o["kind"], o["metadata"]["name"]): o for o in build(repo / "overlays" / "production" / "platform")}
    queue = objects[("ClusterQueue", "rl-training")]
    assert queue["spec"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    for team in ("alice", "bob", "runs"):
        assert objects[("LocalQueue", team)]["spec"]["clusterQueue"] == "rl-training"
    readme = (repo / "README.md").read_text()
    assert "admissionFairSharing:" in readme and "`alice`, `bob`" in readme


def test_a_run_waits_in_its_teams_queue_named_never_guessed(repo):
    line = one_error_line(run_rlgen("run", "new", "lr", "--no-branch", cwd=repo))
    assert "--team TEAM is needed: the pool is shared by teams alice, bob (kueue.teams)" in line, line
    line = one_error_line(run_rlgen("run", "new", "lr", "--team", "carol", "--no-branch", cwd=repo))
    assert "--team carol: not a team of this repository (alice, bob, kueue.teams)" in line, line
    assert not (repo / "runs" / "lr").exists()
    assert run_rlgen("run", "new", "lr", "--team", "bob", "--no-branch", cwd=repo).returncode == 0
    assert queue_of(repo, "lr") == "bob"
    assert run_rlgen("run", "sweep", "s", "--grid", "trainer.total_epochs=1,2", "--team", "alice", "--no-branch",
                     cwd=repo).returncode == 0
    assert {queue_of(repo, r) for r in ("s-1", "s-2")} == {"alice"}


def test_one_team_needs_no_option(generate, tmp_path):
    repo = shutil.copytree(generate("--plugin", "kueue", "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=rl"),
                           tmp_path / "repo", symlinks=True)
    assert run_rlgen("run", "new", "lr", "--no-branch", cwd=repo).returncode == 0
    assert queue_of(repo, "lr") == "rl"


def test_a_team_without_kueue_is_refused(generate, tmp_path):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    line = one_error_line(run_rlgen("run", "new", "lr", "--team", "alice", "--no-branch", cwd=repo))
    assert "--team needs the kueue queue plugin" in line, line


def test_a_sweep_larger_than_the_quota_runs_at_once_is_asked_for_by_name(repo):
    grid = ("--grid", "trainer.total_epochs=1,2,3", "--set", "trainer.nnodes=2", "--team", "alice", "--no-branch")
    line = one_error_line(run_rlgen("run", "sweep", "big", *grid, cwd=repo))
    assert ("the grid makes 3 runs of 16 GPUs and the queue runs 2 of them at once (32 GPUs of kueue.gpu_quota)"
            in line), line
    assert "pass --max-runs 3" in line
    assert not (repo / "runs" / "big-1").exists()
    assert run_rlgen("run", "sweep", "big", *grid, "--max-runs", "3", cwd=repo).returncode == 0
