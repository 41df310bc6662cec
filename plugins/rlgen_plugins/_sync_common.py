"""What both sync plugins share: an upstream root's JSON 6902 patches, as the patch entries
Flux ``spec.patches`` and Argo CD ``kustomize.patches`` both take."""
from __future__ import annotations

import json


def engine_patch(item: dict) -> dict:
    """One patch entry: its target, and the ops as one string, one op a line (JSON is YAML);
    a patch given as a string (a strategic-merge patch) is passed on as it is."""
    if isinstance(item["patch"], str):
        return {"target": dict(item["target"]), "patch": item["patch"]}
    ops = "[\n" + ",\n".join("  " + json.dumps(op) for op in item["patch"]) + "\n]\n"
    return {"target": dict(item["target"]), "patch": ops}
