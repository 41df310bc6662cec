"""The queue slot: no queue by default; Kueue as a plugin whose quota is the team's answer,
with every RayJob labelled for the team's LocalQueue and its pods' GPUs counted on the Lingjun
nodes' flavor."""
from __future__ import annotations

import shutil

from support.repos import REQUIRED, build, error_list, one_error_line, run_rlgen

KUEUE = ("--plugin", "kueue", "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=rl-team")


def rendered(repo):
    platform = build(repo / "overlays" / "production" / "platform")
    (job,) = [o for o in build(repo / "overlays/production/runs") if o["kind"] == "RayJob"]
    return {(o["kind"], o["metadata"]["name"]): o for o in platform}, job


def test_no_queue_by_default(generate):
    repo = generate()
    objects, job = rendered(repo)
    assert not [k for k in objects if k[0] in {"ClusterQueue", "LocalQueue", "ResourceFlavor"}]
    assert "kueue.x-k8s.io/queue-name" not in (job["metadata"].get("labels") or {})
    assert "spec" in job and "suspend" not in job["spec"]


def test_kueue_queues_every_run_on_the_teams_quota(generate):
    repo = generate(*KUEUE)
    objects, job = rendered(repo)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "runs"
    # Kueue owns spec.suspend: a value in Git would be applied again over Kueue's.
    assert "suspend" not in job["spec"]
    local = objects[("LocalQueue", "runs")]
    assert local["metadata"]["namespace"] == job["metadata"]["namespace"] == "rl-training"
    queue = objects[("ClusterQueue", local["spec"]["clusterQueue"])]
    gpu_group, other = queue["spec"]["resourceGroups"]
    assert gpu_group["coveredResources"] == ["nvidia.com/gpu"]
    (flavor,) = gpu_group["flavors"]
    assert flavor["resources"] == [{"name": "nvidia.com/gpu", "nominalQuota": 32}]
    gpu_nodes = objects[("ResourceFlavor", flavor["name"])]["spec"]
    # The label ACK gives Lingjun nodes, not the key of their taint (which no node carries as a label).
    assert gpu_nodes["nodeLabels"] == {"alibabacloud.com/lingjun-worker": "true"}
    # The workers tolerate the pool's taint, so Kueue may place them on the flavor.
    workers = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]
    assert any(t["key"] == gpu_nodes["nodeTaints"][0]["key"] for t in workers["tolerations"])
    # Every resource the pods request is covered, or Kueue never admits them.
    assert set(other["coveredResources"]) == {"cpu", "memory"}
    assert "cohortName" not in queue["spec"] and "borrowingLimit" not in flavor["resources"][0]
    assert "ClusterQueue `rl-training` holds 32 GPUs" in (repo / "README.md").read_text()
    assert "- kueue.x-k8s.io" in (repo / "rbac" / "rlgen-reader.yaml").read_text()


def test_borrowing_from_a_cohort(generate):
    objects, _ = rendered(generate(*KUEUE, "--set", "kueue.cohort=gpu-pool", "--set", "kueue.borrowing_limit=8"))
    queue = objects[("ClusterQueue", "rl-training")]
    assert queue["spec"]["cohortName"] == "gpu-pool"
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] == 8


def test_the_quota_and_the_teams_are_asked_never_defaulted(tmp_path):
    _, items = error_list(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--plugin", "kueue", "--no-input"))
    assert [i.split("=")[0] for i in items] == ["--set kueue.gpu_quota", "--set kueue.teams"]


def test_borrowing_needs_a_cohort(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, *KUEUE, "--set", "kueue.borrowing_limit=8",
                                    "--no-input"))
    assert "kueue.borrowing_limit needs kueue.cohort" in line


def test_gang_scheduling_and_kueue_are_refused_together_in_one_line(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, *KUEUE,
                                    "--set", "rlgen.gang_scheduling=volcano", "--no-input"))
    assert "rlgen.gang_scheduling=volcano and the kueue queue" in line


def test_a_runs_priority_is_its_workload_priority_class(generate, tmp_path):
    repo = shutil.copytree(generate(*KUEUE), tmp_path / "repo", symlinks=True)
    result = run_rlgen("run", "new", "urgent", "--priority", "high", "--no-branch", cwd=repo)
    assert result.returncode == 0, result.stderr
    (job,) = [o for o in build(repo / "runs" / "urgent") if o["kind"] == "RayJob"]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "high"
    # The repository's one team: its queue.
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "rl-team"


def test_a_priority_without_kueue_is_refused(repo):
    line = one_error_line(run_rlgen("run", "new", "urgent", "--priority", "high", "--no-branch", cwd=repo))
    assert "--priority needs the kueue queue plugin (this repository: no-queue)" in line
