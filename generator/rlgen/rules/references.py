"""Objects a pod references (ServiceAccounts, claims, ConfigMaps, Secrets) must be rendered
in its namespace or declared external in rlgen.yaml."""
from __future__ import annotations

from typing import Iterator

from rlgen.repo.objects import get, pod_specs
from rlgen.rules.base import Finding, Rendered


def reference_rules(external_secrets: set[str]):
    def rule(objects: list[Rendered]) -> Iterator[Finding]:
        present = {(o.obj.get("kind"), get(o.obj, "metadata", "namespace"), get(o.obj, "metadata", "name"))
                   for o in objects}
        for item in objects:
            ns = get(item.obj, "metadata", "namespace")
            # Once per object: a RayJob's head and worker pods reference the same volumes.
            references = dict.fromkeys(ref for pod in pod_specs(item.obj) for ref in _pod_references(pod))
            for kind, name in references:
                if (kind, ns, name) in present or (kind == "Secret" and name in external_secrets):
                    continue
                if kind == "ServiceAccount" and name == "default":
                    continue
                yield Finding(item.source, item.label,
                              f"{kind} '{name}' is referenced but neither rendered in namespace {ns} "
                              "nor declared external in rlgen.yaml")
    return rule


def _pod_references(pod: dict) -> Iterator[tuple[str, str]]:
    if sa := pod.get("serviceAccountName"):
        yield "ServiceAccount", sa
    for volume in pod.get("volumes", []):
        if claim := get(volume, "persistentVolumeClaim", "claimName"):
            yield "PersistentVolumeClaim", claim
        if cm := get(volume, "configMap", "name"):
            yield "ConfigMap", cm
        if secret := get(volume, "secret", "secretName"):
            yield "Secret", secret
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        for env in container.get("env", []):
            ref = get(env, "valueFrom", "secretKeyRef")
            if ref and not ref.get("optional"):
                yield "Secret", ref["name"]
            ref = get(env, "valueFrom", "configMapKeyRef")
            if ref and not ref.get("optional"):
                yield "ConfigMap", ref["name"]
        for source in container.get("envFrom", []):
            if (ref := source.get("secretRef")) and not ref.get("optional"):
                yield "Secret", ref["name"]
            if (ref := source.get("configMapRef")) and not ref.get("optional"):
                yield "ConfigMap", ref["name"]
    for secret in pod.get("imagePullSecrets", []):
        yield "Secret", secret["name"]
