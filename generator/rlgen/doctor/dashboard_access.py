"""Whether the repository's NetworkPolicies let the KubeRay operator, where it runs, reach the
Ray head's dashboard: KubeRay reads each job's status there (plain HTTP to the head Service's
dashboard port), and a RayJob whose status it cannot read turns Failed 30 s after its submitter
ends, successful runs included (ray-project/kuberay v1.6.2, docs/upstream.md).

Only the rendered policies are read, with the operator's namespace and pod labels: what a CNI
enforces is not visible from the API server.
"""
from __future__ import annotations

from rlgen.kube.report import OK, PROBLEM, Row

CHECK = "KubeRay -> Ray dashboard"
#: KubeRay's dashboard port and its name on the head pod (utils/constant.go).
DASHBOARD_PORT = 8265
DASHBOARD_PORT_NAME = "dashboard"
#: KubeRay labels a head pod so (common/pod.go labelPod); the policies select heads by it.
HEAD_LABELS = {"ray.io/node-type": "head", "ray.io/is-ray-node": "yes"}
NAME_LABEL = "kubernetes.io/metadata.name"


def check(policies: list[dict], rayjob_namespaces: set[str], operator: dict, sandbox_plugin: str) -> list[Row]:
    """One row per namespace of RayJobs whose head some Ingress policy selects. The operator's
    namespace is matched by the name label the API server gives every namespace alone."""
    meta = operator["metadata"]
    ns = meta["namespace"]
    ns_labels = {NAME_LABEL: ns}
    pod_labels = dict(((operator.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
    rows = []
    for namespace in sorted(rayjob_namespaces):
        selecting = [p for p in policies if _namespace(p) == namespace and _selects_head_ingress(p)]
        if not selecting:
            continue
        names = ", ".join(sorted(p["metadata"]["name"] for p in selecting))
        if any(_admits(p, ns, ns_labels, pod_labels) for p in selecting):
            rows.append(Row(CHECK, OK, f"NetworkPolicy {namespace}/{names} admits {ns}/{meta['name']} "
                                       f"to port {DASHBOARD_PORT} of the Ray head"))
        else:
            rows.append(Row(CHECK, PROBLEM,
                            f"NetworkPolicy {namespace}/{names} shuts {ns}/{meta['name']} out of port "
                            f"{DASHBOARD_PORT} of the Ray head: KubeRay cannot read job status, and every "
                            "RayJob ends Failed once its submitter ends",
                            f"rlgen update --set {sandbox_plugin or '<sandbox plugin>'}.kuberay_namespace={ns}"))
    return rows


def _namespace(policy: dict) -> str:
    return (policy.get("metadata") or {}).get("namespace", "")


def _selects_head_ingress(policy: dict) -> bool:
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes") or ["Ingress"]
    return "Ingress" in types and matches(spec.get("podSelector") or {}, HEAD_LABELS, partial=True)


def _admits(policy: dict, ns: str, ns_labels: dict, pod_labels: dict) -> bool:
    for rule in (policy.get("spec") or {}).get("ingress") or []:
        ports = rule.get("ports") or []
        if ports and not any(_port_matches(p) for p in ports):
            continue
        peers = rule.get("from") or []
        if not peers or any(_peer_matches(peer, _namespace(policy), ns, ns_labels, pod_labels) for peer in peers):
            return True
    return False


def _port_matches(port: dict) -> bool:
    if port.get("protocol", "TCP") != "TCP":
        return False
    value = port.get("port")
    if value is None:
        return True
    if isinstance(value, str):
        return value == DASHBOARD_PORT_NAME
    return value == DASHBOARD_PORT or value <= DASHBOARD_PORT <= port.get("endPort", value)


def _peer_matches(peer: dict, policy_ns: str, ns: str, ns_labels: dict, pod_labels: dict) -> bool:
    if "ipBlock" in peer:
        # The operator pod's address is not known here: not counted as shut out.
        return True
    if "namespaceSelector" in peer:
        if not matches(peer["namespaceSelector"] or {}, ns_labels):
            return False
    elif policy_ns != ns:
        return False
    return matches(peer.get("podSelector") or {}, pod_labels)


def matches(selector: dict, labels: dict, partial: bool = False) -> bool:
    """A label selector against ``labels``; ``partial``: labels known in part (a head's are),
    so a requirement on an unknown key is taken as met."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if key in labels and labels[key] != value or key not in labels and not partial:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if key not in labels and partial:
            continue
        present = key in labels
        found = labels[key] if present else None
        if (op == "In" and found not in values or op == "NotIn" and present and found in values
                or op == "Exists" and not present or op == "DoesNotExist" and present):
            return False
    return True
