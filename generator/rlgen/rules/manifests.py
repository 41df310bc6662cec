"""Rules about any object: JSON config files parse, images are pinned, and Flux post-build
substitution would not eat a ${...} in an object it substitutes."""
from __future__ import annotations

import json
import re
from typing import Iterator

from rlgen.repo.objects import get, pod_specs
from rlgen.rules.base import Finding, Rendered

_UNESCAPED_VAR = re.compile(r"(?<!\$)\$\{[^}]*\}")


def json_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        if item.obj.get("kind") != "ConfigMap":
            continue
        for key, value in (item.obj.get("data") or {}).items():
            if key.endswith(".json"):
                try:
                    json.loads(value)
                except ValueError as exc:
                    yield Finding(item.source, item.label, f"{key} is not valid JSON: {exc}")


def image_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        for pod in pod_specs(item.obj):
            for container in pod.get("containers", []) + pod.get("initContainers", []):
                image = container.get("image", "")
                name = image.split("@")[0]
                tag = name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""
                if "@" not in image and tag in ("", "latest"):
                    yield Finding(item.source, item.label,
                                  f"container {container.get('name')} image '{image}' is not pinned (tag or digest)")


def substitution_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """Flux post-build substitution turns an unknown ``${var}`` into an empty string."""
    substituted = {str(get(o.obj, "spec", "path", default="")).strip("./")
                   for o in objects if o.obj.get("kind") == "Kustomization"
                   and str(o.obj.get("apiVersion", "")).startswith("kustomize.toolkit.fluxcd.io")
                   and get(o.obj, "spec", "postBuild")}
    for item in objects:
        if item.source.strip("./") not in substituted:
            continue
        annotations = get(item.obj, "metadata", "annotations", default={}) or {}
        if annotations.get("kustomize.toolkit.fluxcd.io/substitute") == "disabled":
            continue
        if match := _UNESCAPED_VAR.search(json.dumps(item.obj)):
            yield Finding(item.source, item.label,
                          f"'{match.group()}' would be replaced by Flux post-build substitution; "
                          "write $${...} or annotate kustomize.toolkit.fluxcd.io/substitute: disabled")
