"""``rlgen doctor`` and ``rlgen status`` against a real API server, after the repository synced:
what they read is what the API server, KubeRay and Flux's controllers wrote."""
from __future__ import annotations

import json

import pytest
from support.repos import BUCKET, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")


def cluster_command(cp, repo, *args: str, kubeconfig=None):
    result = run_rlgen(*args, "--kubeconfig", str(kubeconfig or cp.kubeconfig), "-o", "json", cwd=repo)
    assert result.returncode != 70, result.stderr
    return result


def test_doctor_finds_nothing_to_fix_on_a_cluster_the_repository_synced_to(control_plane, synced,
                                                                          reader_kubeconfig):
    # As the identity rbac/rlgen-reader.yaml gives a user: the role grants every read doctor makes.
    result = cluster_command(control_plane, synced["repo"], "doctor", kubeconfig=reader_kubeconfig)
    rows = json.loads(result.stdout)["rows"]
    problems = [r for r in rows if r["state"] not in ("ok", "skipped")]
    assert result.returncode == 0 and not problems, json.dumps(problems, indent=1)
    # Without OSS credentials in the environment the bucket is not asked, and doctor says so.
    assert [r["check"] for r in rows if r["state"] == "skipped"] == [f"bucket {BUCKET}"]


def test_doctor_names_a_secret_key_the_cluster_lacks(control_plane, synced):
    cp = control_plane
    secret = json.loads(cp.kubectl("get", "secret", "oss-credentials", "-n", "rl-training", "-o", "json").stdout)
    cp.kubectl("patch", "secret", "oss-credentials", "-n", "rl-training", "--type=json",
               "-p", '[{"op": "remove", "path": "/data/akSecret"}]')
    try:
        result = cluster_command(cp, synced["repo"], "doctor")
        assert result.returncode == 1
        assert "akSecret" in result.stdout and "oss-credentials" in result.stdout
        assert secret["data"]["akId"] not in result.stdout
    finally:
        cp.kubectl("patch", "secret", "oss-credentials", "-n", "rl-training", "--type=merge",
                   "-p", json.dumps({"data": {"akSecret": secret["data"]["akSecret"]}}))


def test_status_shows_each_run_as_kuberay_and_flux_report_it(control_plane, synced):
    result = cluster_command(control_plane, synced["repo"], "status")
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)["rows"]
    rayjobs = {j["metadata"]["name"]: j for j in control_plane.objects("rayjobs", "-n", "rl-training")}
    assert runs
    for run in runs:
        assert run["rayjob"] in rayjobs, run


def test_status_wait_exits_0_once_every_stage_is_ready_and_the_run_is_scheduled(control_plane, synced,
                                                                                reader_kubeconfig):
    result = cluster_command(control_plane, synced["repo"], "status", "--wait", "--timeout", "3m",
                             "--interval", "2", kubeconfig=reader_kubeconfig)
    assert result.returncode == 0, result.stdout + result.stderr
    pods = control_plane.objects("pods", "-n", "rl-training", "-l", "ray.io/cluster")
    assert pods and all(p["spec"].get("nodeName") for p in pods)
