"""Each run against the GPU node pool it is placed on (rlgen.pool): a worker larger than a
node, a run larger than the pool. The queue's quota is the queue plugin's rule."""
from __future__ import annotations

from typing import Iterator

from rlgen import pool
from rlgen.repo.objects import get
from rlgen.rules.base import Finding, Rendered


def pool_rules(objects: list[Rendered], the_pool: pool.Pool) -> Iterator[Finding]:
    for item in objects:
        if item.obj.get("kind") != "RayJob" or item.trainer_config is None:
            continue
        trainer = item.trainer_config.get("trainer") or {}
        nnodes, per_node = int(trainer.get("nnodes") or 0), int(trainer.get("n_gpus_per_node") or 0)
        lines = pool.fit_problems(the_pool, nnodes, per_node)
        for group in get(item.obj, "spec", "rayClusterSpec", "workerGroupSpecs", default=[]) or []:
            for container in get(group, "template", "spec", "containers", default=[]) or []:
                lines += _larger_than_a_node(the_pool, group.get("groupName"), get(container, "resources", default={}))
        yield from (Finding(item.source, item.label, line) for line in lines)


def _larger_than_a_node(the_pool: pool.Pool, group, resources: dict) -> list[str]:
    out = []
    for key, have, unit in (("cpu", the_pool.cpu, ""), ("memory", the_pool.memory, "Gi")):
        asked = max((pool.quantity(str(v), unit) for v in ((resources.get(k) or {}).get(key) for k in ("requests", "limits"))
                     if v is not None), default=0)
        if asked > have:
            out.append(f"worker group '{group}' asks {key} {asked:g}{unit} but a node of the pool has {have}{unit} "
                       f"(rlgen.node_{key}): lower it or answer the node's size")
    return out
