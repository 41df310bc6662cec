"""The fields the Kubernetes API server refuses to change on an object that keeps its name.

One table, each row with the validation that refuses it (kubernetes v1.33.1, ``pkg/apis/*/
validation/validation.go`` and the apps strategies of ``pkg/registry``; docs/upstream.md lists
the lines). A sync engine applies a stage as a whole, so one refused object holds back the
stage and every stage behind it. ``rlgen diff`` names such a change before it merges
(:func:`refused`); rlgen names its own volumes from their rows (:func:`digest`), so a new
bucket gives a new volume instead of a refused one. tests/e2e/test_immutable_fields.py holds
the table against a real kube-apiserver.

Only what the manifests say is compared: a field the server defaults or fills in (a Job's
selector, a Service's clusterIP) counts only where a manifest writes it.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

#: The PersistentVolume spec fields outside its persistentvolumesource (core/types.go
#: PersistentVolumeSpec): all the others are the volume's source (csi, nfs, hostPath, ...).
PV_NOT_SOURCE = ("capacity", "accessModes", "claimRef", "persistentVolumeReclaimPolicy", "storageClassName",
                 "mountOptions", "volumeMode", "nodeAffinity", "volumeAttributesClassName")
FLUX_FORCE = "kustomize.toolkit.fluxcd.io/force"


def _spec(obj: dict) -> dict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _field(*path: str) -> Callable[[dict], Any]:
    def get(obj: dict) -> Any:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value
    return get


def _pv_source(obj: dict) -> dict:
    return {k: v for k, v in _spec(obj).items() if k not in PV_NOT_SOURCE}


def _pvc_spec(obj: dict) -> dict:
    """A claim's spec but what may change: the storage request (bound claims; the
    PersistentVolumeClaimResize admission also wants a class that allows expansion), the
    volumeName the binder sets once, the volumeAttributesClassName of bound claims."""
    spec = copy.deepcopy(_spec(obj))
    for key in ("volumeName", "volumeAttributesClassName"):
        spec.pop(key, None)
    resources = spec.get("resources")
    if isinstance(resources, dict):
        resources.pop("requests", None)
        if not resources:
            spec.pop("resources")
    return spec


def _both(when: Callable[[dict], bool]) -> Callable[[dict, dict], bool]:
    return lambda old, new: when(old) and when(new)


def _not_external_name(obj: dict) -> bool:
    return _spec(obj).get("type") != "ExternalName"


def _old_has(get: Callable[[dict], Any]) -> Callable[[dict, dict], bool]:
    return lambda old, new: get(old) not in (None, "", {})


def _cluster_ip(obj: dict) -> Any:
    return _spec(obj).get("clusterIP")


def _recreate(kind: str, namespace: str, name: str) -> str:
    where = f" -n {namespace}" if namespace else ""
    return (f"rename it, or delete it before the sync: kubectl delete {kind.lower()}{where} {name} (Flux recreates "
            f"it itself when it is annotated {FLUX_FORCE}: enabled)")


def _volume_fix(kind: str, namespace: str, name: str) -> str:
    where = f" -n {namespace}" if namespace else ""
    return ("give the volume and its claim a new name (and every claimName that names the claim; rlgen's own "
            "volumes are named from these fields: rlgen update renames them), or, once no pod mounts it, delete "
            f"it by hand before the sync (kubectl delete {kind.lower()}{where} {name}, the claim before its volume; "
            "their reclaim policy Retain keeps the data)")


@dataclass(frozen=True)
class Rule:
    group: str  # "" for the core group
    kinds: tuple[str, ...]
    field: str
    #: The function that refuses it, file:line in kubernetes v1.33.1.
    source: str
    part: Callable[[dict], Any]
    #: (kind, namespace, name) -> the command or manual step that lets the change through.
    fix: Callable[[str, str, str], str]
    #: Whether the rule holds for this (old, new) pair at all (default: always).
    when: Callable[[dict, dict], bool] | None = None

    def refuses(self, old: dict, new: dict) -> bool:
        if self.when is not None and not self.when(old, new):
            return False
        return self.part(old) != self.part(new)


CORE = "pkg/apis/core/validation/validation.go"
BATCH = "pkg/apis/batch/validation/validation.go"
APPS = "pkg/apis/apps/validation/validation.go"

RULES: tuple[Rule, ...] = (
    Rule("", ("PersistentVolume",), "spec.persistentvolumesource (csi, nfs, hostPath, ...)",
         f"{CORE}:2132 ValidatePersistentVolumeUpdate", _pv_source, _volume_fix),
    Rule("", ("PersistentVolume",), "spec.volumeMode",
         f"{CORE}:2132 ValidatePersistentVolumeUpdate", lambda o: _spec(o).get("volumeMode", "Filesystem"),
         _volume_fix),
    Rule("", ("PersistentVolume",), "spec.nodeAffinity (once set)",
         f"{CORE}:2132 ValidatePersistentVolumeUpdate", _field("spec", "nodeAffinity"), _volume_fix,
         _old_has(_field("spec", "nodeAffinity"))),
    Rule("", ("PersistentVolumeClaim",), "spec (all but resources.requests)",
         f"{CORE}:2395 ValidatePersistentVolumeClaimUpdate", _pvc_spec, _volume_fix),
    Rule("", ("PersistentVolumeClaim",), "spec.volumeName (once set)",
         f"{CORE}:2395 ValidatePersistentVolumeClaimUpdate", _field("spec", "volumeName"), _volume_fix,
         _old_has(_field("spec", "volumeName"))),
    Rule("", ("Service",), "spec.clusterIP (unless to or from type ExternalName)",
         f"{CORE}:6268 ValidateServiceUpdate (validateUpgradeDowngradeClusterIPs)", _cluster_ip,
         _recreate,
         lambda old, new: _both(_not_external_name)(old, new) and None not in (_cluster_ip(old), _cluster_ip(new))),
    *(Rule("batch", ("Job",), f"spec.{name}", f"{BATCH}:623 ValidateJobSpecUpdate", _field("spec", name),
           _recreate)
      for name in ("selector", "template", "completionMode", "podFailurePolicy", "backoffLimitPerIndex",
                   "managedBy", "successPolicy")),
    Rule("apps", ("Deployment", "ReplicaSet", "DaemonSet"), "spec.selector",
         "pkg/registry/apps/{deployment,replicaset,daemonset}/strategy.go:151,163,165 ValidateUpdate",
         _field("spec", "selector"), _recreate),
    *(Rule("apps", ("StatefulSet",), f"spec.{name}", f"{APPS}:185 ValidateStatefulSetUpdate",
           _field("spec", name), _recreate)
      for name in ("selector", "serviceName", "volumeClaimTemplates", "podManagementPolicy")),
)


@dataclass(frozen=True)
class Refusal:
    rule: Rule
    kind: str
    namespace: str
    name: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def fix(self) -> str:
        return self.rule.fix(self.kind, self.namespace, self.name)

    def as_data(self) -> dict:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "field": self.rule.field,
                "source": self.rule.source, "fix": self.fix}


def _group(obj: dict) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def rules_for(obj: dict) -> list[Rule]:
    return [r for r in RULES if obj.get("kind") in r.kinds and _group(obj) == r.group]


def refused(old: dict, new: dict) -> list[Refusal]:
    """The changes from ``old`` to ``new`` (one object, same name) the API server refuses."""
    meta = new.get("metadata") or {}
    return [Refusal(rule, new["kind"], meta.get("namespace") or "", meta.get("name") or "")
            for rule in rules_for(new) if rule.refuses(old, new)]


def digest(*objects: dict) -> bytes:
    """What of ``objects`` their API server never changes in place, with their namespaces: a
    name derived from it is new exactly when keeping the old name would be refused."""
    parts = [[obj.get("kind"), (obj.get("metadata") or {}).get("namespace") or "",
              [rule.part(obj) for rule in rules_for(obj)]] for obj in objects]
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
