"""What KubeRay makes of a RayJob, read from the API server: its RayCluster and that cluster's pods."""
from __future__ import annotations

from support.controlplane import ControlPlane


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
