"""What ``rlgen doctor`` checks: each row from the repository's own rendered objects, read-only."""
from __future__ import annotations

from pathlib import Path

from rlgen.doctor import bucket, node_pool, operators, queue, resources
from rlgen.kube import client, needs as needs_mod
from rlgen.kube.report import guarded
from rlgen.repo import sync_engines
from rlgen.repo.workspace import find_root, load_spec

CHECKS = (("API groups", operators.served_kinds), ("KubeRay operator", operators.kuberay),
          ("CSI drivers", operators.csi_drivers), ("RRSA webhook", operators.rrsa_webhook),
          ("GPU nodes", resources.gpu_nodes), ("devices", resources.rdma), ("volume claims", resources.claims),
          ("Secrets", resources.secrets), ("secret stores", resources.secret_stores), ("Kueue", queue.check))


def run_checks(where: Path, kubeconfig, context, repo_cluster: str | None = None) -> tuple[client.Cluster, list]:
    """The cluster reached and one row per check of the repository holding ``where`` (of what its
    cluster ``repo_cluster`` syncs, when named); a check the cluster forbids is a row too
    (``guarded``)."""
    repo = find_root(where)
    needs = needs_mod.read(repo, repo_cluster)
    cluster = client.connect(kubeconfig, context)
    engine = sync_engines.engine_of(needs.sync_objects)
    rows = []
    if engine:
        rows += guarded(f"{engine.name} controllers", lambda: operators.controllers(cluster, engine))
    for name, check in CHECKS:
        rows += guarded(name, lambda check=check: check(cluster, needs))
    rows += guarded("node pool", lambda: node_pool.check(cluster, needs, load_spec(repo)))
    rows += bucket.check(repo)
    return cluster, rows
