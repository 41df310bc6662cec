"""Variants of the generated repository on the same control plane.

Gang scheduling with Volcano: the KubeRay operator started with the flag the generated README
names (``--batch-scheduler=volcano``, ray-operator v1.6.2 ``main.go``) and Volcano's PodGroup CRD
(volcano-sh/volcano v1.13.0, the API version KubeRay v1.6.2 builds against, vendored in
upstream/crds). No Volcano scheduler runs here: the test reads the PodGroup KubeRay creates, the
part of gang scheduling rlgen's repository decides; Volcano's own scheduling is Volcano's.

rlgen update in the synced repository (the cluster follows), and the RDMA networks against
nodes that advertise the device and nodes that do not."""
from __future__ import annotations

import json
import subprocess

import pytest
from ruamel.yaml import YAML
from support.controlplane import wait_until
from support.flux import NAMESPACE, REGISTRY, reconcile
from support.kuberay import OPERATOR, ray_cluster, ray_pods, restart_operator
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers
from support.toolchain import PROJECT

pytestmark = pytest.mark.usefixtures("dump_on_failure")

PODGROUP_CRD = PROJECT / "upstream" / "crds" / "scheduling.volcano.sh_podgroups.yaml"
GANG_NAMESPACE = "gang-e2e"


def gang_row(cp, repo) -> dict:
    result = run_rlgen("doctor", "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    assert result.returncode in (0, 1), result.stderr
    return next(r for r in json.loads(result.stdout)["rows"] if r["check"] == "gang scheduling")


def test_volcano_gang_scheduling_gets_a_podgroup_of_the_run_size(control_plane, synced, tmp_path):
    cp = control_plane
    repo = tmp_path / "gang"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={synced['url']}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}", *storage_answers(),
                 "--set", "rlgen.gang_scheduling=volcano"))
    ok(run_rlgen("run", "set", "baseline", "trainer.nnodes=2", cwd=repo))
    before = gang_row(cp, repo)
    assert before["state"] == "problem" and "without --batch-scheduler" in before["detail"], before

    cp.kubectl("apply", "--server-side", "-f", str(PODGROUP_CRD))
    wait_until("the PodGroup CRD Established", lambda: any(
        c["type"] == "Established" and c["status"] == "True" for c in json.loads(cp.kubectl(
            "get", "crd", "podgroups.scheduling.volcano.sh", "-o", "json").stdout).get("status", {}).get("conditions")
        or []), timeout=120)
    cp.kubectl("create", "namespace", GANG_NAMESPACE)
    restart_operator(cp, "--batch-scheduler=volcano")
    try:
        after = gang_row(cp, repo)
        assert after["state"] == "ok" and "--batch-scheduler=volcano" in after["detail"], after
        rendered = ok(run_rlgen("render", "runs/baseline", cwd=repo))
        job = next(d for d in YAML(typ="safe").load_all(rendered) if d and d["kind"] == "RayJob")
        job["metadata"]["namespace"] = GANG_NAMESPACE
        cp.kubectl("apply", "-f", "-", input=json.dumps(job))
        name = job["metadata"]["name"]
        group = wait_until(f"the PodGroup KubeRay creates for RayJob {name}", lambda: next(
            (g for g in cp.objects("podgroups.scheduling.volcano.sh", "-n", GANG_NAMESPACE)), None), timeout=120)
        # The head and both GPU workers start together or not at all (the submitter is left out).
        assert group["spec"]["minMember"] == 3, group["spec"]
        assert group["spec"]["queue"] == "default"
        assert group["metadata"]["name"] == f"ray-{name}-pg"
        assert group["metadata"]["ownerReferences"][0]["name"] == name
        cluster = wait_until("KubeRay's RayCluster", lambda: ray_cluster(cp, GANG_NAMESPACE, name))
        pods = wait_until("the gang's pods", lambda: (ps := cp.objects("pods", "-n", GANG_NAMESPACE, "-l",
                                                                          f"ray.io/cluster={cluster}")) and ps)
        assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    finally:
        cp.kubectl("delete", "rayjobs", "--all", "-n", GANG_NAMESPACE, "--timeout=120s", check=False)
        restart_operator(cp)
        cp.kubectl("delete", "namespace", GANG_NAMESPACE, "--wait=false", check=False)
    assert cp.processes[OPERATOR].poll() is None


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=reviewer", "-c", "user.email=reviewer@rl-team.cn",
                           *args], check=True, capture_output=True, text=True).stdout


def test_an_update_swapping_plugins_is_followed_by_the_cluster(control_plane, synced):
    """``rlgen update`` swaps the rollout engine (SGLang), the dataset (geometry3k) and adds MLflow
    tracking in the synced repository; after the merge the cluster prunes what went and runs what came."""
    cp, repo = control_plane, synced["repo"]
    git(repo, "checkout", "--quiet", "main")
    runs = {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}
    jobs = {j["metadata"]["name"] for j in cp.objects("jobs", "-n", NAMESPACE)}
    ok(run_rlgen("update", "--plugin", "sglang", "--plugin", "geometry3k", "--plugin", "mlflow",
                 "--set", f"mlflow.tracking_uri=http://mlflow.{NAMESPACE}.svc:5000", cwd=repo))
    branch = git(repo, "branch", "--show-current").strip()
    validate = run_rlgen("validate", "--offline", "-o", "json", cwd=repo)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", branch)
    git(repo, "push", "--quiet", "origin", "main")
    reconcile(cp)
    renamed = {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}
    assert set(renamed) == set(runs) and not set(renamed.values()) & set(runs.values())
    wait_until("the old RayJobs pruned, the new ones there", lambda: (
        names := {j["metadata"]["name"] for j in cp.objects("rayjobs", "-n", NAMESPACE)})
        and names == set(renamed.values()), timeout=120)
    waited = run_rlgen("status", "--wait", "--timeout", "3m", "--interval", "2", "--kubeconfig", str(cp.kubeconfig),
                       "-o", "json", cwd=repo)
    assert waited.returncode == 0, waited.stderr
    now = {j["metadata"]["name"]: j for j in cp.objects("jobs", "-n", NAMESPACE)}
    dataset = [j for n, j in now.items() if n.startswith("dataset-pipeline-")]
    assert len(dataset) == 1 and dataset[0]["metadata"]["name"] not in jobs
    env = {e["name"]: e.get("value") for c in dataset[0]["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
    assert env["DATASET"] == "geometry3k"
    tracking = json.loads(cp.kubectl("get", "configmap", "mlflow-tracking", "-n", NAMESPACE, "-o", "json").stdout)
    assert tracking["data"]["MLFLOW_TRACKING_URI"] == f"http://mlflow.{NAMESPACE}.svc:5000"
    job = cp.objects("rayjobs", "-n", NAMESPACE)[0]
    assert "sglang" in json.dumps(job["spec"]).lower()


def applied_run(cp, synced, tmp_path, folder: str, *answers: str) -> str:
    """The run of a repository generated with ``answers``, its RayJob applied beside the synced
    repository's (its pods mount the volume claims the synced platform created). Its name."""
    repo = tmp_path / folder
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={synced['url']}", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 *storage_answers(), *answers))
    rendered = ok(run_rlgen("render", "runs/baseline", cwd=repo))
    job = next(d for d in YAML(typ="safe").load_all(rendered) if d and d["kind"] == "RayJob")
    cp.kubectl("apply", "-f", "-", input=json.dumps(job))
    return job["metadata"]["name"]


def test_rdma_runs_land_on_nodes_advertising_the_device_and_wait_elsewhere(control_plane, synced, tmp_path):
    """The Lingjun nodes advertise ``rdma/hca`` (ACK's RDMA device plugin); no node advertises
    ``aliyun/erdma`` (the eRDMA controller is not installed)."""
    cp = control_plane
    names = []
    try:
        rdma = applied_run(cp, synced, tmp_path, "rdma", "--set", "rlgen.network=rdma")
        names.append(rdma)
        erdma = applied_run(cp, synced, tmp_path, "erdma", "--set", "rlgen.network=erdma")
        names.append(erdma)
        placed = wait_until("the RDMA worker scheduled", lambda: (ps := ray_pods(cp, NAMESPACE, rdma, "worker"))
                            and all(p["spec"].get("nodeName") for p in ps) and ps, timeout=120,
                            on_timeout=lambda: json.dumps([p["status"] for p in ray_pods(cp, NAMESPACE, rdma)])[:3000])
        advertising = {n["metadata"]["name"] for n in cp.objects("nodes")
                       if "rdma/hca" in n["status"].get("allocatable", {})}
        assert {p["spec"]["nodeName"] for p in placed} <= advertising
        assert all(p["spec"].get("hostNetwork") for p in placed)
        waiting = wait_until("the eRDMA worker refused by the scheduler", lambda: (
            ps := ray_pods(cp, NAMESPACE, erdma, "worker")) and all(
            c.get("reason") == "Unschedulable" for p in ps for c in p["status"].get("conditions", [])
            if c["type"] == "PodScheduled") and ps, timeout=120)
        message = next(c["message"] for c in waiting[0]["status"]["conditions"] if c["type"] == "PodScheduled")
        assert "Insufficient aliyun/erdma" in message
    finally:
        for name in names:
            cp.kubectl("delete", "rayjob", name, "-n", NAMESPACE, "--timeout=120s", check=False)
