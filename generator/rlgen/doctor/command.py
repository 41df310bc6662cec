"""``rlgen doctor``: will this cluster accept the repository? Read-only checks, one row each."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.kube.options import cluster_options, header
from rlgen.errors import ProblemsFound

HELP = """Check, read-only, that the cluster of --context can run this repository.

\b
Every check comes from the repository's own rendered objects: the custom API groups it
uses, KubeRay (>= v1.2.0 for a RayJob's submitterConfig, >= v1.5.0 for SidecarMode), the sync engine's controllers,
the CSI drivers of its volumes, the RRSA webhook (rrsa-storage), RDMA devices or gang
scheduling when a run asks for them, GPU nodes whose taints the largest run tolerates,
its PersistentVolumeClaims Bound, and every Secret it references, by name and key.
The bucket rlgen.yaml records is asked with the OSS SDK (found, not found, access denied,
unreachable) when OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET (or the RRSA variables) are
set, as for rlgen data upload; without them its row says it was skipped.

\b
Secrets: the API has no way to list a Secret's key names without its values, so doctor
reads each referenced Secret (get), keeps only the key names and never prints, logs or
stores a value. rbac/rlgen-reader.yaml grants that get only on the named Secrets.

\b
A read the cluster forbids (401/403) makes its row "cannot check"; the others go on.
Exit codes: 0 every check ok, 1 a problem or a check that could not run, 2 the cluster
cannot be reached or does not answer like a Kubernetes API server (one line).
"""


@click.command("doctor", help=HELP)
@cluster_options
def command(kubeconfig, context, output):
    import sys

    from rlgen.kube import client, needs as needs_mod
    from rlgen.repo import sync_engines
    from rlgen.kube.report import CANNOT, OK, PROBLEM, SKIPPED, emit, guarded
    from rlgen.doctor import bucket, operators, resources
    from rlgen.repo.workspace import find_root

    repo = find_root(Path.cwd())
    needs = needs_mod.read(repo)
    cluster = client.connect(kubeconfig, context)
    checks = [("API groups", operators.served_kinds), ("KubeRay operator", operators.kuberay),
              ("CSI drivers", operators.csi_drivers), ("RRSA webhook", operators.rrsa_webhook),
              ("GPU nodes", resources.gpu_nodes), ("devices", resources.rdma), ("volume claims", resources.claims),
              ("Secrets", resources.secrets), ("secret stores", resources.secret_stores)]
    engine = sync_engines.engine_of(needs.sync_objects)
    rows = []
    if engine:
        rows += guarded(f"{engine.name} controllers", lambda: operators.controllers(cluster, engine))
    for name, check in checks:
        rows += guarded(name, lambda check=check: check(cluster, needs))
    rows += bucket.check(repo)
    emit(rows, ("check", "state", "detail", "fix"), output or ("table" if sys.stdout.isatty() else "json"),
         header(cluster))
    bad = [r for r in rows if r.state not in (OK, SKIPPED)]
    if bad:
        problems = sum(r.state == PROBLEM for r in bad)
        raise ProblemsFound(f"{problems} problem(s), {sum(r.state == CANNOT for r in bad)} check(s) "
                            f"the cluster's RBAC forbids, of {len(rows)}")
