"""What both sync plugins share: an upstream root's JSON 6902 patches, as the patch entries
Flux ``spec.patches`` and Argo CD ``kustomize.patches`` both take; the name of an upstream
repository; the kustomizations that bring the shared upstream folder into each cluster's; the
key of the push webhook's token."""
from __future__ import annotations

import json

from rlgen.plugin_api import Document

#: The key of a push webhook's shared secret in the Secret the sync engine reads.
WEBHOOK_TOKEN_KEY = "token"


def repo_name(url: str) -> str:
    """An upstream repository's owner and name, as in ``openkruise-agents``."""
    return "-".join(url.rstrip("/").removesuffix(".git").split("/")[-2:]).lower()


def kustomization(resources: list[str], comment: str) -> Document:
    return Document({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": resources}, comment)


def engine_patch(item: dict) -> dict:
    """One patch entry: its target, and the ops as one string, one op a line (JSON is YAML);
    a patch given as a string (a strategic-merge patch) is passed on as it is."""
    if isinstance(item["patch"], str):
        return {"target": dict(item["target"]), "patch": item["patch"]}
    ops = "[\n" + ",\n".join("  " + json.dumps(op) for op in item["patch"]) + "\n]\n"
    return {"target": dict(item["target"]), "patch": ops}
