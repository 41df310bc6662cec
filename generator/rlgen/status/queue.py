"""Where Kueue has a run: admitted, or queued with its place and the quota it waits for.

Kueue makes one Workload per queued RayJob (owner reference to it) and reports in its
``QuotaReserved`` condition why it cannot be admitted yet ("insufficient unused quota for
nvidia.com/gpu in flavor ..., 16 more needed"). A LocalQueue's pending Workloads are taken in
order of priority, then creation (Kueue's BestEffortFIFO and StrictFIFO order): the place
shown is the Workload's in that order among the LocalQueue's Workloads not admitted.
"""
from __future__ import annotations

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
#: The label a job names its LocalQueue with (kueue constants.QueueLabel).
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queue_state(cluster, namespace: str, rayjob: dict) -> str:
    """"" for a RayJob no queue holds; else what Kueue says of it."""
    queue = (rayjob["metadata"].get("labels") or {}).get(QUEUE_LABEL)
    if not queue:
        return ""
    workloads = cluster.items("CustomObjectsApi.list_namespaced_custom_object", GROUP, VERSION, namespace, "workloads")
    uid = rayjob["metadata"].get("uid")
    own = next((w for w in workloads if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])),
               None)
    if own is None:
        return f"waiting for Kueue: no Workload for it in LocalQueue {queue} yet"
    if _condition(own, "Finished"):
        return "finished"
    if _condition(own, "Admitted"):
        return f"admitted by ClusterQueue {((own.get('status') or {}).get('admission') or {}).get('clusterQueue', '?')}"
    waiting = sorted((w for w in workloads if (w.get("spec") or {}).get("queueName") == queue
                      and not _condition(w, "Admitted") and not _condition(w, "Finished")),
                     key=lambda w: (-int((w.get("spec") or {}).get("priority") or 0),
                                    w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))
    place = next(i for i, w in enumerate(waiting, 1) if w["metadata"]["uid"] == own["metadata"]["uid"])
    reason = _message(own, "QuotaReserved") or "not yet considered"
    return f"queued: {place} of {len(waiting)} in LocalQueue {queue}; {reason}"


def _conditions(obj: dict) -> list[dict]:
    return (obj.get("status") or {}).get("conditions") or []


def _condition(obj: dict, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in _conditions(obj))


def _message(obj: dict, kind: str) -> str:
    return next((c.get("message", "") for c in _conditions(obj) if c.get("type") == kind), "")
