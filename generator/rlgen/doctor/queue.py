"""Kueue, for a repository whose runs it queues: its RayJob webhook registered (what suspends
a new RayJob until it is admitted) and the repository's queue objects as Kueue sees them.

Kueue's API group being served is the "API groups" check; these rows say whether the queue
works: a RayJob created while no webhook suspends it starts at once, whatever its quota."""
from __future__ import annotations

from rlgen.kube.needs import KUEUE_GROUP, Needs
from rlgen.kube.report import OK, PROBLEM, Row

#: The path Kueue serves its RayJob defaulting on (pkg/controller/jobs/rayjob/rayjob_webhook.go).
RAYJOB_WEBHOOK = "/mutate-ray-io-v1-rayjob"
INSTALL = ("install Kueue (v0.17 or later) with the ray.io/rayjob integration in integrations.frameworks "
           "of its Configuration")
#: Where each kind is read, and what says it is usable (its Active condition).
KINDS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues"}


def check(cluster, needs: Needs) -> list[Row]:
    if not needs.queue_objects:
        return []
    return [_webhook(cluster), *(_object(cluster, obj) for obj in needs.queue_objects if obj.get("kind") in KINDS)]


def _webhook(cluster) -> Row:
    configs = cluster.items("AdmissionregistrationV1Api.list_mutating_webhook_configuration")
    for config in configs:
        for hook in config.get("webhooks") or []:
            client = hook.get("clientConfig") or {}
            path = client.get("url") or ((client.get("service") or {}).get("path") or "")
            if path.endswith(RAYJOB_WEBHOOK):
                return Row("Kueue RayJob webhook", OK, f"MutatingWebhookConfiguration {config['metadata']['name']}")
    return Row("Kueue RayJob webhook", PROBLEM,
               "no webhook suspends a new RayJob: runs would start without waiting for the quota", INSTALL)


def _object(cluster, obj: dict) -> Row:
    kind, meta = obj["kind"], obj["metadata"]
    version = obj["apiVersion"].partition("/")[2]
    name = f"{meta.get('namespace')}/{meta['name']}" if meta.get("namespace") else meta["name"]
    check = f"{kind} {name}"
    if meta.get("namespace"):
        live = cluster.call("CustomObjectsApi.get_namespaced_custom_object", KUEUE_GROUP, version,
                            meta["namespace"], KINDS[kind], meta["name"])
    else:
        live = cluster.call("CustomObjectsApi.get_cluster_custom_object", KUEUE_GROUP, version, KINDS[kind],
                            meta["name"])
    if live is None:
        return Row(check, OK, "not created yet: the first sync creates it")
    active = next((c for c in (live.get("status") or {}).get("conditions") or [] if c.get("type") == "Active"), None)
    if kind == "ResourceFlavor" or active is None:
        return Row(check, OK, "exists")
    if active.get("status") == "True":
        return Row(check, OK, "active")
    return Row(check, PROBLEM, f"inactive: {active.get('message') or active.get('reason')}",
               f"kubectl describe {KINDS[kind]}.{KUEUE_GROUP} {meta['name']}"
               + (f" -n {meta['namespace']}" if meta.get("namespace") else ""))
