"""The synced cluster broken the ways users break theirs, one at a time, with ``rlgen doctor`` and
``rlgen status`` read against the real API server: each gives the row naming the object and the
fix. Every test puts the cluster back as it found it, so the next starts healthy."""
from __future__ import annotations

import json
import subprocess

import pytest
from support.controlplane import LINGJUN_LABELS, wait_until
from support.flux import NAMESPACE, fetch, kustomizations, ready, reconcile
from support.repos import run_rlgen
from support.toolchain import module_dir

pytestmark = pytest.mark.usefixtures("dump_on_failure")

KUBERAY = "github.com/ray-project/kuberay/ray-operator"
GPU_NODES = "alibabacloud.com/lingjun-worker=" + LINGJUN_LABELS["alibabacloud.com/lingjun-worker"]


def rlgen(cp, repo, *args: str):
    result = run_rlgen(*args, "--kubeconfig", str(cp.kubeconfig), "-o", "json", cwd=repo)
    assert result.returncode != 70, result.stderr
    return result


def doctor_rows(cp, repo) -> tuple[int, dict[str, dict]]:
    result = rlgen(cp, repo, "doctor")
    return result.returncode, {r["check"]: r for r in json.loads(result.stdout)["rows"]}


def problem(rows: dict, prefix: str) -> dict:
    found = [r for check, r in rows.items() if check.startswith(prefix) and r["state"] == "problem"]
    assert len(found) == 1, json.dumps(rows, indent=1)
    return found[0]


def healthy(cp, repo) -> None:
    """What each test leaves: doctor all ok, and status --wait satisfied."""
    code, rows = doctor_rows(cp, repo)
    assert code == 0, json.dumps([r for r in rows.values() if r["state"] != "ok"], indent=1)
    waited = rlgen(cp, repo, "status", "--wait", "--timeout", "3m", "--interval", "2")
    assert waited.returncode == 0, waited.stderr


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=e2e", "-c", "user.email=e2e@rl-team.cn", *args],
                          check=True, capture_output=True, text=True).stdout


def test_kuberay_too_old_for_what_the_rayjob_uses(control_plane, synced):
    """The default repository submits in K8sJobMode with spec.submitterConfig (KubeRay v1.2.0);
    SidecarMode (v1.5.0) is rlgen's check for repositories that use it."""
    cp, repo = control_plane, synced["repo"]
    deployment = json.loads(cp.kubectl("get", "deployment", "kuberay-operator", "-n", "kuberay-system",
                                       "-o", "json").stdout)
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    old = image.rpartition(":")[0] + ":v1.1.1"
    cp.kubectl("set", "image", "-n", "kuberay-system", "deployment/kuberay-operator", f"manager={old}")
    try:
        cp.kubectl("rollout", "status", "-n", "kuberay-system", "deployment/kuberay-operator", "--timeout=90s")
        code, rows = doctor_rows(cp, repo)
        row = problem(rows, "KubeRay operator")
        assert code == 1
        assert row["detail"] == (f"kuberay-system/kuberay-operator ({old}): v1.1.1 predates submitterConfig "
                                 "(v1.2.0); its CRD drops the field and a dropped log stream fails a running job")
        assert row["fix"] == "upgrade KubeRay to v1.2.0 or later"
    finally:
        cp.kubectl("set", "image", "-n", "kuberay-system", "deployment/kuberay-operator", f"manager={image}")
        cp.kubectl("rollout", "status", "-n", "kuberay-system", "deployment/kuberay-operator", "--timeout=90s")


def test_a_gpu_taint_the_run_does_not_tolerate(control_plane, synced):
    cp, repo = control_plane, synced["repo"]
    cp.kubectl("taint", "nodes", "-l", GPU_NODES, "maintenance=true:NoSchedule")
    try:
        code, rows = doctor_rows(cp, repo)
        row = problem(rows, "GPU nodes for ")
        assert code == 1
        assert row["detail"].startswith("room for 0 of ") and "does not tolerate: maintenance (on lingjun-gpu-0" in row["detail"]
        assert "kubectl taint nodes lingjun-gpu-0 maintenance-" in row["fix"]
        assert "toleration of maintenance=true:NoSchedule" in row["fix"]
    finally:
        cp.kubectl("taint", "nodes", "-l", GPU_NODES, "maintenance-")


def test_a_stage_failing_names_the_stage_to_fix_in_status_and_stops_status_wait(control_plane, synced):
    """platform's build fails: runs waits on it (DependencyNotReady); status names platform."""
    cp, repo = control_plane, synced["repo"]
    kustomization = repo / "overlays" / "production" / "platform" / "kustomization.yaml"
    git(repo, "checkout", "--quiet", "main")
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - missing.yaml\n", 1))
    git(repo, "commit", "--quiet", "-am", "platform: a resource that is not there")
    git(repo, "push", "--quiet", "origin", "main")
    try:
        fetch(cp)
        wait_until("platform failing and runs waiting on it", lambda: (ks := kustomizations(cp))
                   and (ready(ks["platform"]) or {}).get("reason") == "BuildFailed"
                   and (ready(ks["runs"]) or {}).get("reason") == "DependencyNotReady", timeout=120)
        status = rlgen(cp, repo, "status")
        row = json.loads(status.stdout)["rows"][0]
        assert "DependencyNotReady" in row["sync"], row
        assert "its dependency Kustomization platform failed: Ready=False BuildFailed:" in row["sync"], row
        assert "missing.yaml" in row["sync"], row
        waited = rlgen(cp, repo, "status", "--wait", "--timeout", "2m", "--interval", "2")
        reason = waited.stderr.strip().splitlines()[-1]
        assert waited.returncode == 1, waited.stderr
        assert reason.startswith("rlgen: error: cannot resolve by itself: Kustomization platform failed: "
                                 "Ready=False BuildFailed:") and "missing.yaml" in reason, reason
    finally:
        git(repo, "revert", "--no-edit", "HEAD")
        git(repo, "push", "--quiet", "origin", "main")
        reconcile(cp)


def test_a_claim_deleted_and_recreated_stays_unbound_on_its_released_volume(control_plane, synced):
    """A user deletes a claim; the sync creates it again, but its volume (reclaim policy Retain)
    still names the deleted claim: the new claim stays Pending until the volume is released."""
    cp, repo = control_plane, synced["repo"]
    claim = next(c["metadata"]["name"] for c in cp.objects("pvc", "-n", NAMESPACE)
                 if c["metadata"]["name"].startswith("rl-checkpoints-"))
    cp.kubectl("delete", "pvc", claim, "-n", NAMESPACE, "--wait=false")
    # Running pods mount it: the protection finalizer would hold it Terminating.
    cp.kubectl("patch", "pvc", claim, "-n", NAMESPACE, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    try:
        wait_until("the volume Released", lambda: json.loads(cp.kubectl(
            "get", "pv", claim, "-o", "json").stdout)["status"].get("phase") == "Released", timeout=60)
        fetch(cp)
        wait_until("the claim created again, Pending", lambda: (c := cp.kubectl(
            "get", "pvc", claim, "-n", NAMESPACE, "-o", "json", check=False)).returncode == 0
            and json.loads(c.stdout)["status"].get("phase") == "Pending", timeout=120)
        code, rows = doctor_rows(cp, repo)
        row = problem(rows, f"PersistentVolumeClaim {NAMESPACE}/{claim}")
        assert code == 1
        assert row["detail"].startswith(f"Pending: pods that mount it stay Pending; its PersistentVolume {claim} "
                                        f"is Released, still reserved for a claim {NAMESPACE}/{claim} (uid "), row
        assert row["fix"] == (f"once the data on {claim} may serve this claim, release it: kubectl patch pv {claim} "
                              "--type=json -p '[{\"op\": \"remove\", \"path\": \"/spec/claimRef\"}]'")
        # status sees what Flux reports: the stage that owns the claim still checking its health
        # (the claim itself is doctor's to name), and the run's sync waiting on it.
        waited = rlgen(cp, repo, "status", "--wait", "--timeout", "20s", "--interval", "2")
        assert waited.returncode == 1
        assert waited.stderr.strip().splitlines()[-1].startswith(
            "rlgen: error: timed out after 20s waiting for Kustomization platform: Ready=Unknown Progressing"), waited.stderr
        assert "dependency 'flux-system/platform' is not ready" in json.loads(waited.stdout)["rows"][0]["sync"]
    finally:
        cp.kubectl("patch", "pv", claim, "--type=json", "-p", '[{"op": "remove", "path": "/spec/claimRef"}]',
                   check=False)
        wait_until("the claim Bound again", lambda: json.loads(cp.kubectl(
            "get", "pvc", claim, "-n", NAMESPACE, "-o", "json").stdout)["status"].get("phase") == "Bound", timeout=120)
        reconcile(cp)
    healthy(cp, repo)


def test_kuberay_crd_absent(control_plane, synced):
    """Last of the module: removing the CRD removes every RayJob; the restore brings them back."""
    cp, repo = control_plane, synced["repo"]
    crd = module_dir("kuberay", KUBERAY) / "config" / "crd" / "bases" / "ray.io_rayjobs.yaml"
    cp.kubectl("delete", "crd", "rayjobs.ray.io", "--timeout=120s")
    try:
        code, rows = doctor_rows(cp, repo)
        row = problem(rows, "API ray.io/v1")
        assert code == 1
        assert row["detail"] == "not served: RayJob"
        assert row["fix"].startswith("install KubeRay >= v1.5.0")
    finally:
        cp.kubectl("apply", "--server-side", "-f", str(crd))
        wait_until("the RayJob CRD Established", lambda: any(
            c["type"] == "Established" and c["status"] == "True" for c in json.loads(cp.kubectl(
                "get", "crd", "rayjobs.ray.io", "-o", "json").stdout).get("status", {}).get("conditions") or []),
            timeout=120)
        # The sync puts the run's RayJob back; KubeRay's watch picks the kind up again.
        reconcile(cp)
    healthy(cp, repo)
