"""What every rule shares: the rendered objects it reads and the findings it yields."""
from __future__ import annotations

from dataclasses import dataclass

#: Core and CRD kinds whose objects carry pod templates, and where.
POD_PATHS = {
    "Job": [("spec", "template", "spec")],
    "Deployment": [("spec", "template", "spec")],
    "StatefulSet": [("spec", "template", "spec")],
    "DaemonSet": [("spec", "template", "spec")],
    "SandboxSet": [("spec", "template", "spec")],
    "RayJob": [("spec", "rayClusterSpec", "headGroupSpec", "template", "spec")],
}


@dataclass(frozen=True)
class Finding:
    source: str
    obj: str
    message: str


@dataclass(frozen=True)
class Rendered:
    """One rendered object and the kustomization root (or file) it came from."""

    source: str
    obj: dict

    @property
    def label(self) -> str:
        meta = self.obj.get("metadata", {})
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.obj.get('kind')}/{ns}{meta.get('name')}"


def get(obj, *path, default=None):
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def pod_specs(obj: dict) -> list[dict]:
    specs = [s for path in POD_PATHS.get(obj.get("kind"), []) if (s := get(obj, *path))]
    if obj.get("kind") == "RayJob":
        specs += [g["template"]["spec"] for g in get(obj, "spec", "rayClusterSpec", "workerGroupSpecs", default=[])
                  if get(g, "template", "spec")]
    return specs
