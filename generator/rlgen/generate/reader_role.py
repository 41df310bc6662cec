"""``rbac/rlgen-reader.yaml``: the read-only ClusterRole that ``rlgen doctor`` and
``rlgen status`` need, generated with the repository.

It stays out of every sync stage: who may read the cluster is the cluster admin's choice,
bound to people or CI identities this repository does not know, and doctor runs before the
first sync anyway. The admin applies it once and binds it (see the file's comment).
"""
from __future__ import annotations

from rlgen.repo.sync_engines import engine_of
from rlgen.tools import yamlio

PATH = "rbac/rlgen-reader.yaml"
NAME = "rlgen-reader"

COMMENT = """\
Read-only access for `rlgen doctor` and `rlgen status`. Not synced: apply and bind it by hand,
  kubectl apply -f rbac/rlgen-reader.yaml
  kubectl create clusterrolebinding rlgen-reader --clusterrole=rlgen-reader --user=<you>
Secrets: get only on the Secrets this repository references, by name. The API returns a
Secret's values with its keys; rlgen keeps the key names only and never prints a value.
Without a rule, the matching check shows "cannot check" and the others still run."""


def reader_role(secret_names: list[str], sync_objects: list[dict], secret_stores: bool = False,
                queue: bool = False) -> str:
    rules = [
        _rule("", ["nodes", "namespaces", "pods", "events", "services", "persistentvolumeclaims"], ["get", "list"]),
        _rule("apps", ["deployments", "statefulsets"], ["get", "list"]),
        _rule("", ["persistentvolumes"], ["get"]),
        _rule("storage.k8s.io", ["csidrivers"], ["get"]),
        _rule("admissionregistration.k8s.io", ["mutatingwebhookconfigurations"], ["list"]),
        _rule("ray.io", ["rayjobs", "rayclusters"], ["get", "list"]),
    ]
    engine = engine_of(sync_objects)
    if engine:
        rules.append(_rule(engine.group, [engine.plural], ["get", "list"]))
    if secret_stores:
        rules.append(_rule("external-secrets.io", ["clustersecretstores", "externalsecrets"], ["get"]))
    if queue:
        rules.append(_rule("kueue.x-k8s.io", ["workloads", "localqueues", "clusterqueues", "resourceflavors"],
                           ["get", "list"]))
    if secret_names:
        rules.append({**_rule("", ["secrets"], ["get"]), "resourceNames": sorted(set(secret_names))})
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": NAME, "labels": {"app.kubernetes.io/managed-by": "rlgen"}}, "rules": rules}
    return yamlio.dump(role, COMMENT)


def _rule(group: str, resources: list[str], verbs: list[str]) -> dict:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}
