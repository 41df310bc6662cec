"""The cluster's nodes against the repository's pool answers (``rlgen.node_pool``,
``rlgen.gpus_per_node``, ``rlgen.node_cpu``, ...): which answer the nodes contradict, one row
each, with the fix. The GPU workers select the pool's labels, and Kueue adds each flavor's
labels to the pods it admits: a label no node carries keeps every run Pending while it holds
the quota."""
from __future__ import annotations

from rlgen import pool as pools
from rlgen.kube.needs import Needs
from rlgen.kube.report import OK, PROBLEM, Row

#: Taints Kubernetes itself puts on and takes off a node (not-ready, unreachable, cordoned, ...):
#: never an answer of the pool.
TRANSIENT = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
SEE_NODES = "compare with `kubectl get nodes --show-labels` and `kubectl describe node`"
ANSWERS = "rlgen.node_pool, rlgen.node_pool_id, rlgen.node_labels"


def check(cluster, needs: Needs, spec) -> list[Row]:
    if not needs.rayjobs:
        return []
    pool = pools.of(spec)
    nodes = cluster.items("CoreV1Api.list_node")
    members = [n for n in nodes if _carries(n, pool.selector())]
    rows = [_labels(pool, members)]
    rows += [_flavor(obj, nodes) for obj in needs.queue_objects
             if obj.get("kind") == "ResourceFlavor" and (obj.get("spec") or {}).get("nodeLabels")]
    if members:
        rows += [_taints(pool, members), _size(pool, members)]
    return rows


def _carries(node: dict, labels: dict[str, str]) -> bool:
    have = node["metadata"].get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())


def _pairs(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _labels(pool: pools.Pool, members: list[dict]) -> Row:
    wanted = _pairs(pool.selector()) or "(no label)"
    if members:
        return Row("node pool labels", OK, f"{len(members)} node(s) carry {wanted} ({pool.kind.summary})")
    return Row("node pool labels", PROBLEM,
               f"no node carries {wanted}, which the GPU workers select ({pool.kind.summary}, {ANSWERS}): "
               "every run would stay Pending",
               f"rlgen update --set rlgen.node_pool=... (and node_pool_id, node_labels) as the GPU nodes carry "
               f"them ({SEE_NODES})")


def _flavor(obj: dict, nodes: list[dict]) -> Row:
    name, labels = obj["metadata"]["name"], obj["spec"]["nodeLabels"]
    check = f"ResourceFlavor {name} nodes"
    found = [n for n in nodes if _carries(n, labels)]
    if found:
        return Row(check, OK, f"{len(found)} node(s) carry {_pairs(labels)}")
    return Row(check, PROBLEM, f"no node carries {_pairs(labels)}: Kueue would admit runs onto no node, "
                               "holding the quota while their pods stay Pending",
               f"rlgen update --set rlgen.node_pool=... (and node_pool_id, node_labels) as the GPU nodes carry "
               f"them ({SEE_NODES}): the flavor follows the pool")


def _taint_text(key: str, value: str, effect: str) -> str:
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def _taints(pool: pools.Pool, members: list[dict]) -> Row:
    """The pool's taints as answered (ACK's for the kind, rlgen.node_taints) and as the nodes carry them."""
    answered = {(t["key"], t["effect"]) for t in pool.taint_list()}
    untolerated, absent = {}, set(answered)
    for node in members:
        carried = {(t["key"], t.get("value", ""), t["effect"]) for t in (node.get("spec") or {}).get("taints") or []
                   if not t["key"].startswith(TRANSIENT)}
        absent -= {(k, e) for k, _, e in carried}
        for key, value, effect in carried:
            if (key, effect) not in answered:
                untolerated.setdefault(_taint_text(key, value, effect), node["metadata"]["name"])
    if untolerated:
        taint, node = sorted(untolerated.items())[0]
        return Row("node pool taints", PROBLEM,
                   f"node {node} carries taint {taint}, which the answers do not list: the GPU workers do not "
                   "tolerate it", f"rlgen update --set rlgen.node_taints={','.join(sorted(untolerated))} (with the taints listed "
                   "already), or rlgen.node_pool if the kind differs")
    if absent:
        listed = ", ".join(_taint_text(k, "", e) for k, e in sorted(absent))
        return Row("node pool taints", PROBLEM, f"no node of the pool carries taint {listed}, which the answers "
                                                f"list ({pool.kind.summary}, rlgen.node_taints)",
                   f"rlgen update --set rlgen.node_taints=... without it, or rlgen.node_pool=... if the kind "
                   f"differs ({SEE_NODES})")
    return Row("node pool taints", OK, ", ".join(sorted(_taint_text(k, "", e) for k, e in answered)) or "none")


def _allocatable(node: dict) -> tuple[int, int, int]:
    """A node's allocatable GPUs, whole CPUs and whole GiB."""
    have = (node.get("status") or {}).get("allocatable") or {}
    return (int(pools.quantity(str(have.get(pools.GPU, "0")), "")), int(pools.quantity(str(have.get("cpu", "0")), "")),
            int(pools.quantity(str(have.get("memory", "0")), "Gi")))


def _size(pool: pools.Pool, members: list[dict]) -> Row:
    """A node smaller than the answers: the pods sized from them would never fit on it."""
    answered = (pool.gpus, pool.cpu, pool.memory)
    small = sorted((_allocatable(n), n["metadata"]["name"]) for n in members
                   if any(h < a for h, a in zip(_allocatable(n), answered)))
    if not small:
        return Row("node pool size", OK, f"{len(members)} node(s) of at least {pool.gpus} GPUs, {pool.cpu} CPUs, "
                                         f"{pool.memory}Gi allocatable")
    (gpus, cpu, memory), node = small[0]
    fixes = [f"rlgen.{key}={have}" for key, have, want in
             (("gpus_per_node", gpus, pool.gpus), ("node_cpu", cpu, pool.cpu), ("node_memory", memory, pool.memory))
             if have < want]
    # What DaemonSets request is the team's to subtract: the allocatable is the most.
    return Row("node pool size", PROBLEM,
               f"node {node} has {gpus} GPUs, {cpu} CPUs, {memory}Gi allocatable, less than the answers "
               f"({pool.gpus} GPUs, {pool.cpu} CPUs, {pool.memory}Gi a node): pods sized from them never fit on it",
               f"rlgen update --set {' --set '.join(fixes)} (at most; less what DaemonSets request there)")
