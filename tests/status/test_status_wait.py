"""``rlgen status --wait`` against a recorded-object API server: exit 0 once every stage is Ready
and the runs' pods are scheduled, 1 at once with the reason on what cannot resolve by itself,
1 at the timeout naming what it still waited for. The control plane test (tests/e2e) shows the
same against a real scheduler, KubeRay and Flux."""
from __future__ import annotations

import pytest
from support import cluster_objects as co
from support.cluster import against
from support.repos import git, one_error_line, pinned

NS = "rl-training"
STAGES = {"sandbox-operator": "./config/default", "sandbox-manager": "./config/sandbox-manager",
          "platform": "./overlays/production/platform", "runs": "./runs"}


def head(repo) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def stages(repo, **override):
    return [override.get(name) or co.flux_stage(name, head(repo), path=path) for name, path in STAGES.items()]


def pod(name: str, cluster: str, node: str | None, condition: dict | None = None, waiting: dict | None = None):
    status = {"phase": "Running" if node else "Pending",
              "conditions": [condition or {"type": "PodScheduled", "status": "True" if node else "False"}]}
    if waiting:
        status["containerStatuses"] = [{"name": "ray-head", "state": {"waiting": waiting}}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": co.meta(name, NS, labels={"ray.io/cluster": cluster}),
            "spec": {"containers": [{"name": "ray-head"}], **({"nodeName": node} if node else {})},
            "status": status}


def ray_cluster(name: str, workers: int) -> dict:
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": co.meta(name, NS),
            "spec": {"headGroupSpec": {}, "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers}]}}


def running(repo, workers: int = 0, **pods_override):
    """The baseline run's RayJob Running, its RayCluster and its scheduled pods."""
    name = pinned(repo, "baseline")
    cluster = f"{name}-x7k2p"
    pods = [pod(f"{cluster}-head", cluster, "gpu-1")] + [
        pod(f"{cluster}-worker-{i}", cluster, "gpu-2") for i in range(workers)]
    return [co.rayjob(name, NS, "Running", "RUNNING"), ray_cluster(cluster, workers), *pods]


def wait(repo, objects, *args):
    result, _ = against(repo, [*co.healthy({"namespace": NS}), *objects], "status", "--wait",
                        "--interval", "0.1", *args)
    return result


def test_wait_exits_0_once_every_stage_is_ready_and_the_pods_are_scheduled(repo):
    result = wait(repo, [*stages(repo), *running(repo)])
    assert result.returncode == 0, result.stderr
    assert '"deployment": "Running"' in result.stdout


def test_wait_stops_at_a_pod_no_node_can_take(repo):
    name = pinned(repo, "baseline")
    result = wait(repo, [*stages(repo), co.rayjob(name, NS, "Initializing"), *co.pending_head(name, NS)],
                  "--timeout", "1m")
    line = one_error_line(result, 1)
    assert line.startswith(f"rlgen: error: cannot resolve by itself: run baseline: pod {name}-x7k2p-head-4xz9q "
                           "cannot be scheduled: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu")


def test_wait_stops_at_a_failed_stage_not_at_one_waiting_for_it(repo):
    failed = co.flux_stage("platform", head(repo), ready="False", reason="HealthCheckFailed",
                           message="timeout waiting for: [Job/rl-training/dataset status: 'Failed']",
                           path="./overlays/production/platform")
    waiting = co.flux_stage("runs", head(repo), ready="False", reason="DependencyNotReady",
                            message="dependency 'flux-system/platform' is not ready")
    result = wait(repo, [*stages(repo, platform=failed, runs=waiting)])
    assert one_error_line(result, 1) == (
        "rlgen: error: cannot resolve by itself: Kustomization platform failed: Ready=False HealthCheckFailed: "
        "timeout waiting for: [Job/rl-training/dataset status: 'Failed']")


def test_wait_stops_at_a_stage_whose_first_health_check_failed(repo):
    """kustomize-controller sets status.observedGeneration only once a reconciliation succeeds;
    the Ready condition carries the generation it judged (fluxcd/pkg runtime conditions)."""
    failed = co.flux_stage("platform", head(repo), ready="False", reason="HealthCheckFailed",
                           message="timeout waiting for: [ExternalSecret/rl-training/oss-credentials status: "
                                   "'InProgress']", path="./overlays/production/platform")
    del failed["status"]["observedGeneration"]
    result = wait(repo, [*stages(repo, platform=failed)], "--timeout", "20s")
    assert one_error_line(result, 1) == (
        "rlgen: error: cannot resolve by itself: Kustomization platform failed: Ready=False HealthCheckFailed: "
        "timeout waiting for: [ExternalSecret/rl-training/oss-credentials status: 'InProgress']")


def test_wait_stops_at_a_container_the_kubelet_cannot_create(repo):
    name = pinned(repo, "baseline")
    cluster = f"{name}-x7k2p"
    stuck = pod(f"{cluster}-head", cluster, "gpu-1", waiting={
        "reason": "CreateContainerConfigError", "message": "couldn't find key akSecret in Secret rl-training/oss-credentials"})
    result = wait(repo, [*stages(repo), co.rayjob(name, NS, "Initializing"), ray_cluster(cluster, 0), stuck])
    assert one_error_line(result, 1).endswith(
        f"pod {cluster}-head container ray-head: CreateContainerConfigError: "
        "couldn't find key akSecret in Secret rl-training/oss-credentials")


def test_wait_stops_at_a_failed_rayjob(repo):
    name = pinned(repo, "baseline")
    job = co.rayjob(name, NS, "Failed", "FAILED", reason="AppFailed", message="entrypoint exited 1")
    result = wait(repo, [*stages(repo), job])
    assert one_error_line(result, 1).endswith(f"run baseline: RayJob {name} Failed: AppFailed: entrypoint exited 1")


@pytest.mark.parametrize("case", ["progressing", "dependency", "not-applied", "older-revision", "pods-missing"])
def test_wait_times_out_naming_what_it_waited_for(repo, case):
    name = pinned(repo, "baseline")
    parent = None
    if case == "older-revision":
        parent = head(repo)
        git(repo, "-c", "user.name=t", "-c", "user.email=t@rl.test", "commit", "--quiet", "--allow-empty", "-m", "next")
    override, objects = {}, running(repo)
    if case == "progressing":
        override["platform"] = co.flux_stage("platform", head(repo), ready="Unknown", reason="Progressing",
                                             message="Reconciliation in progress", path="./overlays/production/platform")
    elif case == "dependency":
        override["runs"] = co.flux_stage("runs", head(repo), ready="False", reason="DependencyNotReady",
                                         message="dependency 'flux-system/platform' is not ready")
    elif case == "not-applied":
        objects = []
    elif case == "older-revision":
        override["runs"] = co.flux_stage("runs", parent)
    else:
        objects = running(repo, workers=2)[:-2]
    result = wait(repo, [*stages(repo, **override), *objects], "--timeout", "1s")
    expected = {
        "progressing": "Kustomization platform: Ready=Unknown Progressing: Reconciliation in progress",
        "dependency": "Kustomization runs: dependency 'flux-system/platform' is not ready",
        "not-applied": f"run baseline: RayJob {name} to be applied",
        "older-revision": f"Kustomization runs to fetch {head(repo)[:7]} (it last tried {(parent or '')[:7]})",
        "pods-missing": f"run baseline: 2 of 3 pods of RayCluster {name}-x7k2p to be created",
    }[case]
    assert one_error_line(result, 1) == f"rlgen: error: timed out after 1s waiting for {expected}"


def test_wait_rejects_a_bad_timeout_and_watch(repo):
    result = wait(repo, [], "--timeout", "soon")
    assert result.returncode == 2 and "--timeout" in result.stderr and "Traceback" not in result.stderr
    result = wait(repo, [], "--watch")
    assert result.returncode == 2 and "--watch and --wait" in result.stderr


@pytest.mark.parametrize("gate, code", [("false", 0), (None, 1)])
def test_an_argo_runs_application_progressing_with_its_run_is_ready_when_no_wave_waits_for_it(
        generate, tmp_path, gate, code):
    """A RayJob is Progressing for the whole training run, and so is the Application of the runs:
    its health gates no wave (the generated ``rlgen.io/health-gate: "false"``), so --wait passes once
    the run's pods are scheduled. An Application a wave waits for, Progressing, is still waited for."""
    import shutil

    repo = shutil.copytree(generate("--plugin", "argo"), tmp_path / "repo", symlinks=True)
    apps = [co.argo_app(name, head(repo), path=path.removeprefix("./")) for name, path in STAGES.items()
            if name != "runs"]
    runs = co.argo_app("runs", head(repo), health="Progressing", path="overlays/production/runs")
    if gate:
        runs["metadata"]["annotations"] = {"rlgen.io/health-gate": gate}
    root = co.argo_app("root", head(repo), path="clusters/production")
    root["metadata"]["annotations"] = {"rlgen.io/health-gate": "false"}
    result = wait(repo, [*co.argo(), root, *apps, runs, *running(repo)], "--timeout", "2s")
    assert result.returncode == code, result.stderr
    if code:
        assert "Application runs: Synced, Progressing" in result.stderr, result.stderr
