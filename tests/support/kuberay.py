"""What KubeRay makes of a RayJob, read from the API server: its RayCluster and that cluster's pods."""
from __future__ import annotations

import os
import signal

from rlgen.e2e.cluster import OPERATOR, OPERATOR_NAMESPACE, spawn_operator  # noqa: F401 - rlgen e2e's
from support.controlplane import ControlPlane


def restart_operator(cp: ControlPlane, *flags: str) -> None:
    """Stop the operator this control plane started and start it again with ``flags``."""
    proc = cp.processes[OPERATOR]
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    spawn_operator(cp, *flags)


def ray_cluster(cp: ControlPlane, namespace: str, rayjob: str) -> str | None:
    """The RayCluster KubeRay created for ``rayjob`` (its controller owner reference)."""
    for cluster in cp.objects("rayclusters", "-n", namespace):
        owners = cluster["metadata"].get("ownerReferences", [])
        if any(o["kind"] == "RayJob" and o["name"] == rayjob for o in owners):
            return cluster["metadata"]["name"]
    return None


def ray_pods(cp: ControlPlane, namespace: str, rayjob: str, node_type: str | None = None) -> list[dict]:
    """The pods of ``rayjob``'s RayCluster (``ray.io/node-type`` head or worker when given)."""
    cluster = ray_cluster(cp, namespace, rayjob)
    if cluster is None:
        return []
    pods = cp.objects("pods", "-n", namespace, "-l", f"ray.io/cluster={cluster}")
    return [p for p in pods if node_type is None or p["metadata"]["labels"].get("ray.io/node-type") == node_type]
