"""The GPU node pool a repository's runs are placed on, as ACK builds it, and whether a run fits.

A pool is its kind (``rlgen.node_pool``), the size of its nodes (``rlgen.gpus_per_node``,
``rlgen.node_cpu``, ``rlgen.node_memory``), what the team added to it (``rlgen.node_labels``,
``rlgen.node_taints``) and, for an ECS GPU node pool, its ID. What ACK itself puts on a node of
each kind is :data:`KINDS` (sources in docs/upstream.md); the GPU workers' nodeSelector,
tolerations and requests follow from it, Kueue's GPU flavor selects the same labels, and
``rlgen e2e`` makes its kwok nodes with them, so a selector ACK would not match fails there too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rlgen.option_checks import int_range
from rlgen.plugin_info import Option

GPU = "nvidia.com/gpu"
#: The label ACK gives every node of a node pool, valued with the pool's ID.
NODEPOOL_ID = "alibabacloud.com/nodepool-id"
LINGJUN_LABEL = "alibabacloud.com/lingjun-worker"
LINGJUN_TAINT = "node-role.alibabacloud.com/lingjun"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class Kind:
    """What ACK puts on every node of one kind of node pool."""

    name: str
    summary: str
    labels: tuple[tuple[str, str], ...]
    #: (key, value, effect); an empty value: ACK documents the key and effect alone.
    taints: tuple[tuple[str, str, str], ...]


KINDS = {
    "lingjun": Kind("lingjun", "ACK Lingjun node pool", ((LINGJUN_LABEL, "true"),),
                    ((LINGJUN_TAINT, "", "NoSchedule"),)),
    "ecs-gpu": Kind("ecs-gpu", "ACK node pool of ECS GPU instances", (), ()),
}


@dataclass(frozen=True)
class Pool:
    kind: Kind
    pool_id: str
    gpus: int
    cpu: int
    #: GiB.
    memory: int
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]
    #: Nodes of the pool, 0: not said.
    nodes: int = 0

    def selector(self) -> dict[str, str]:
        """The labels a GPU worker selects: ACK's for the kind, the pool's ID, the team's own."""
        own = dict(self.kind.labels)
        if self.pool_id:
            own[NODEPOOL_ID] = self.pool_id
        own.update(self.labels)
        return dict(sorted(own.items()))

    def node_labels(self) -> dict[str, str]:
        """Every label such a node carries of the pool's (what kwok nodes are given)."""
        return self.selector()

    def taint_list(self) -> list[dict]:
        """The taints of the pool's nodes, as a Node's spec.taints writes them."""
        out = []
        for key, value, effect in (*self.kind.taints, *self.taints):
            out.append({"key": key, **({"value": value} if value else {}), "effect": effect})
        return out

    def tolerations(self) -> list[dict]:
        """One toleration per taint: Exists, as the value is ACK's or the team's to change."""
        return [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in self.taint_list()]

    def worker_resources(self, gpus: int) -> dict[str, str]:
        """A worker of ``gpus`` GPUs takes that share of a node's CPU and memory."""
        return {"cpu": str(self.cpu * gpus // self.gpus), "memory": f"{self.memory * gpus // self.gpus}Gi",
                GPU: str(gpus)}

    def describe(self) -> str:
        return (f"{self.kind.summary}: nodes of {self.gpus} GPUs, {self.cpu} CPUs, {self.memory}Gi"
                + (f", {self.nodes} node(s)" if self.nodes else ""))


def of(spec) -> Pool:
    """The pool of a Spec's answers."""
    return Pool(KINDS[spec.node_pool], spec.node_pool_id, spec.gpus_per_node, spec.node_cpu, spec.node_memory,
                parse_labels(spec.node_labels), parse_taints(spec.node_taints), spec.pool_nodes)


_LABEL = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def parse_labels(text: str) -> tuple[tuple[str, str], ...]:
    """``"k=v,k2=v2"`` -> pairs; a bad one raises ValueError naming it."""
    out = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not _LABEL.fullmatch(key) or not _VALUE.fullmatch(value):
            raise ValueError(f"'{item}' is not a label KEY=VALUE")
        out.append((key, value))
    return tuple(out)


def parse_taints(text: str) -> tuple[tuple[str, str, str], ...]:
    """``"k=v:NoSchedule,k2:NoExecute"`` -> (key, value, effect); a bad one raises ValueError."""
    out = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        pair, sep, effect = item.rpartition(":")
        key, _, value = pair.partition("=")
        if not sep or effect not in TAINT_EFFECTS or not _LABEL.fullmatch(key) or not _VALUE.fullmatch(value):
            raise ValueError(f"'{item}' is not a taint KEY[=VALUE]:{'|'.join(TAINT_EFFECTS)}")
        out.append((key, value, effect))
    return tuple(out)


def labels_error(text: str) -> str | None:
    try:
        parse_labels(text)
    except ValueError as exc:
        return str(exc)
    return None


def taints_error(text: str) -> str | None:
    try:
        parse_taints(text)
    except ValueError as exc:
        return str(exc)
    return None


#: rlgen's own answers of the pool (rlgen.node_pool, ...): a user's node pool is theirs, so its
#: kind and a node's CPU and memory are asked, never defaulted.
OPTIONS = (
    Option("node_pool", "Kind of the GPU node pool: lingjun (ACK Lingjun node pool) or ecs-gpu (ACK node "
           "pool of ECS GPU instances)", None, required=True, choices=tuple(KINDS)),
    Option("node_pool_id", "ID of the ECS GPU node pool (its nodes' label alibabacloud.com/nodepool-id)", "",
           required_when=("node_pool", "ecs-gpu"), check=lambda v: labels_error(f"{NODEPOOL_ID}={v}") if v else None),
    Option("gpus_per_node", "GPUs of each node of the pool", 8, int, check=int_range(1, 1024)),
    Option("node_cpu", "CPU cores of a GPU node the training pods may take (its allocatable CPU less what "
           "DaemonSets request)", None, int, required=True, check=int_range(1, 100000)),
    Option("node_memory", "GiB of memory of a GPU node the training pods may take (its allocatable memory "
           "less what DaemonSets request)", None, int, required=True, check=int_range(1, 1000000)),
    Option("node_labels", "Labels the team added to the pool's nodes that runs select, KEY=VALUE,...", "",
           check=lambda v: labels_error(v)),
    Option("node_taints", "Taints the team added to the pool's nodes, KEY[=VALUE]:EFFECT,...", "",
           check=lambda v: taints_error(v)),
    Option("pool_nodes", "Nodes of the pool (0: not said; a larger run is refused)", 0, int,
           check=int_range(0, 100000)),
)


def fit_problems(pool: Pool, nnodes: int, gpus_per_node: int) -> list[str]:
    """Why a run of ``nnodes`` pods of ``gpus_per_node`` GPUs can never start on ``pool``: one
    line each, with the numbers and the fix."""
    out = []
    if gpus_per_node > pool.gpus:
        out.append(f"a worker of trainer.n_gpus_per_node={gpus_per_node} GPUs is larger than a node of the pool "
                   f"({pool.gpus} GPUs, rlgen.gpus_per_node): set trainer.n_gpus_per_node to at most {pool.gpus} "
                   "and raise trainer.nnodes")
    if pool.nodes and nnodes > pool.nodes:
        out.append(f"a run of trainer.nnodes={nnodes} nodes is larger than the pool ({pool.nodes} nodes, "
                   f"rlgen.pool_nodes): set trainer.nnodes to at most {pool.nodes}")
    return out


def quota_problems(nnodes: int, gpus_per_node: int, gpu_limit: int, limit_note: str = "") -> list[str]:
    """A run larger than the most GPUs its queue ever admits (``gpu_limit``, ``limit_note``
    saying where it comes from), which would wait for ever."""
    gpus = nnodes * gpus_per_node
    if gpu_limit and gpus > gpu_limit:
        return [f"a run of {nnodes} x {gpus_per_node} = {gpus} GPUs is larger than the queue ever admits "
                f"({gpu_limit} GPUs{limit_note}), so it would wait for ever: make it at most {gpu_limit} GPUs "
                "(trainer.nnodes x trainer.n_gpus_per_node) or raise the quota"]
    return []
