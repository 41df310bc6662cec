"""Kueue on the tests' control plane: rlgen.e2e.kueue, which ``rlgen e2e`` runs too, and what
the tests read of it."""
from __future__ import annotations

import json

from rlgen.e2e.kueue import start_kueue  # noqa: F401 - the name conftest imports from here
from support.controlplane import ControlPlane
from support.kuberay import ray_pods

#: The label Kueue puts on every pod template of a job it admits: the pod set's name
#: (kueue v0.17.1 pkg/constants/constants.go, set in pkg/controller/jobframework/reconciler.go).
POD_SET = "kueue.x-k8s.io/podset"


def workloads(cp: ControlPlane, namespace: str) -> list[dict]:
    return cp.objects("workloads.kueue.x-k8s.io", "-n", namespace)


def admission(cp: ControlPlane, namespace: str) -> dict[str, str]:
    """Each RayJob Kueue holds: "admitted" or "queued"."""
    found = {}
    for w in workloads(cp, namespace):
        owner = next(o["name"] for o in w["metadata"]["ownerReferences"] if o["kind"] == "RayJob")
        admitted = any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))
        found[owner] = "admitted" if admitted else "queued"
    return found


def running_workers(cp: ControlPlane, namespace: str, rayjob: str, count: int = 2) -> list[str]:
    """The nodes of the RayJob's ``count`` GPU workers, once all of them are scheduled."""
    nodes = [p["spec"].get("nodeName") for p in ray_pods(cp, namespace, rayjob, "worker")]
    return nodes if len(nodes) == count and all(nodes) else []


def live_rayjob(cp: ControlPlane, namespace: str, name: str) -> dict:
    return json.loads(cp.kubectl("get", "rayjob", name, "-n", namespace, "-o", "json").stdout)


def kueue_fields(rayjob: dict) -> dict:
    """What Kueue wrote into an admitted RayJob: spec.suspend, and each pod template's pod set
    label and node selector (the workers' in the atomic list workerGroupSpecs)."""
    spec = rayjob["spec"]
    templates = {"head": spec["rayClusterSpec"]["headGroupSpec"]["template"],
                 **{g["groupName"]: g["template"] for g in spec["rayClusterSpec"]["workerGroupSpecs"]}}
    return {"suspend": spec.get("suspend"),
            **{name: (t.get("metadata", {}).get("labels", {}).get(POD_SET), t["spec"].get("nodeSelector"))
               for name, t in templates.items()}}


def admitted_workload(cp: ControlPlane, namespace: str, rayjob: str) -> dict:
    """The Workload of a RayJob: its uid, admission, whether it is admitted and was ever evicted."""
    w = next(w for w in workloads(cp, namespace)
             if any(o["kind"] == "RayJob" and o["name"] == rayjob for o in w["metadata"]["ownerReferences"]))
    conditions = {c["type"]: c["status"] for c in w.get("status", {}).get("conditions", [])}
    return {"uid": w["metadata"]["uid"], "admission": w["status"].get("admission"),
            "admitted": conditions.get("Admitted"), "evicted": conditions.get("Evicted", "never")}


def assert_kept(before: dict, workload: dict, after: dict, now: dict) -> None:
    """A sync after admission left Kueue's fields and the admission as they were."""
    # Kueue's update writes suspend false by leaving it out (omitempty).
    assert not before["suspend"] and all(before[g][0] for g in before if g != "suspend"), before
    assert workload["admitted"] == "True" and workload["evicted"] == "never", workload
    assert after == before
    assert now == workload
