"""Reading rendered Kubernetes objects (plain dicts): what validate's rules and the cluster
checks of doctor and status both ask of an object."""
from __future__ import annotations

#: Core and CRD kinds whose objects carry pod templates, and where.
POD_PATHS = {
    "Job": [("spec", "template", "spec")],
    "Deployment": [("spec", "template", "spec")],
    "StatefulSet": [("spec", "template", "spec")],
    "DaemonSet": [("spec", "template", "spec")],
    "SandboxSet": [("spec", "template", "spec")],
    "RayJob": [("spec", "rayClusterSpec", "headGroupSpec", "template", "spec")],
}


def get(obj, *path, default=None):
    """``obj[path[0]][path[1]]...``, or ``default`` where a key is missing or a level is no mapping."""
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def pod_specs(obj: dict) -> list[dict]:
    """Every pod spec ``obj`` carries: its template's, or a RayJob's head and worker groups'."""
    specs = [s for path in POD_PATHS.get(obj.get("kind"), []) if (s := get(obj, *path))]
    if obj.get("kind") == "RayJob":
        specs += [g["template"]["spec"] for g in get(obj, "spec", "rayClusterSpec", "workerGroupSpecs", default=[])
                  if get(g, "template", "spec")]
    return specs
