"""``rlgen doctor``: will this cluster accept the repository? Read-only checks, one row each."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.errors import ProblemsFound
from rlgen.kube.options import cluster_options, header
from rlgen.output import resolve_output

HELP = """Check, read-only, that a cluster can run this repository.

The cluster is the one of --context (default: the current one); --cluster NAME says which of the
repository's clusters it is, so that only what that cluster syncs is checked.

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
def command(kubeconfig, context, repo_cluster, output):
    from rlgen.doctor.checks import run_checks
    from rlgen.kube.report import CANNOT, OK, PROBLEM, SKIPPED, emit

    cluster, rows = run_checks(Path.cwd(), kubeconfig, context, repo_cluster)
    emit(rows, ("check", "state", "detail", "fix"), resolve_output(output), header(cluster))
    bad = [r for r in rows if r.state not in (OK, SKIPPED)]
    if bad:
        problems = sum(r.state == PROBLEM for r in bad)
        raise ProblemsFound(f"{problems} problem(s), {sum(r.state == CANNOT for r in bad)} check(s) "
                            f"the cluster's RBAC forbids, of {len(rows)}")
