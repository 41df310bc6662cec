"""``rlgen e2e``: sync this commit on a throwaway control plane before it is merged."""
from __future__ import annotations

from pathlib import Path

import click

#: kwok nodes a throwaway control plane makes, one kubectl apply each, on a CI runner's few cores.
MAX_GPU_NODES = 64
#: The longest --timeout: a CI job's own limit is hours, never days.
MAX_TIMEOUT = 6 * 3600

HELP = """Sync the repository's commit on a throwaway control plane, as the cluster would.

REPO (default: the current folder) at its HEAD commit, served at the branch the cluster
follows, synced from clusters/<cluster>/ by the repository's engine on a control plane on
127.0.0.1: etcd, kube-apiserver, controller manager and scheduler, kwok nodes shaped like the
GPU pool (rlgen.gpus_per_node GPUs each, the labels, taints and RDMA resources the runs' pods
ask for), KubeRay's operator, and Flux's controllers (flux bootstrap) or Argo CD's application
controller and repo-server (its release manifest, then the root Application, the Applications
fetching the served commit), at the versions rlgen pins, all from PATH (the generated
.github/workflows/e2e.yaml installs them; Argo CD needs redis-server too). Every Secret the
repository reads is created with a placeholder value; SOPS-encrypted values are synced as
placeholders encrypted for an age key made for the run, so the team's key is never needed.

\b
What the repository's kinds need runs too: Kueue with its RayJob webhook (a run the quota
has no room for stays suspended), External Secrets reading stand-ins of KMS Secrets Manager
and STS (a placeholder for each key), a stand-in of ACK's RRSA pod identity webhook, and the
objects ACK's add-ons leave (AlbConfig, the add-on's Ingress with its ALB address). A kind
no controller here serves gets its pinned CRD, or one that keeps every field, and is named
in one line "not checked here": never a failure.

\b
It waits for every stage Ready, then runs rlgen status --wait (each run's pods scheduled)
and rlgen doctor against it, and prints a markdown summary (appended to
$GITHUB_STEP_SUMMARY when set) naming a failed stage and why, or a run that cannot be
scheduled and why. Everything it started is stopped when it ends, on Ctrl-C and SIGTERM too.

\b
Exit codes: 0 synced and scheduled, 1 a stage failed, a run cannot be scheduled or doctor
found a problem, 2 bad input (no such cluster, a program missing from PATH).
"""


@click.command("e2e", help=HELP)
@click.argument("repo", required=False, type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--cluster", metavar="NAME", help="Cluster whose entry point (clusters/NAME/) is synced "
              "(default: rlgen.cluster of rlgen.yaml).")
@click.option("--gpu-nodes", type=click.IntRange(min=1, max=MAX_GPU_NODES), metavar="N",
              help=f"GPU nodes of the pool, at most {MAX_GPU_NODES} (default: rlgen.nnodes of rlgen.yaml, a "
                   "run's nodes).")
@click.option("--timeout", default="10m", show_default=True, metavar="D",
              help=f"Give up on the pool's nodes and the sync after D (90s, 15m; above 0, at most "
                   f"{MAX_TIMEOUT // 3600}h), and on the runs' pods after D again.")
@click.option("--keep", is_flag=True, help="Keep the control plane's folder (logs, kubeconfig) after it stops.")
@click.option("--install-tools", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Only build the control plane's programs, with those of the sync engine REPO syncs with and the "
                   "controllers of the kinds it uses (Kueue, External Secrets), at the pinned releases from source (Go on PATH; every dependency checked against go.sum; cached "
                   "in DIR) and print the folder to put on PATH.")
def command(repo, cluster, gpu_nodes, timeout, keep, install_tools):
    from rlgen.e2e.run import report, run
    from rlgen.tools.durations import parse_duration

    if install_tools:
        from rlgen.e2e.programs import groups_named, install_tools as install
        from rlgen.errors import RlgenError
        from rlgen.repo.sync_engines import engine_in
        from rlgen.repo.workspace import find_root

        from rlgen.output import out_folder_error

        if problem := out_folder_error(install_tools):
            raise click.BadParameter(problem, param_hint="--install-tools")
        root = find_root(repo or Path.cwd())
        engine = engine_in(root)
        if engine is None:
            raise RlgenError(f"{root / 'clusters'}: no Flux Kustomization or Argo CD Application to sync")
        click.echo(install(install_tools.resolve(), engine.name, groups_named(root)))
        return

    try:
        seconds = parse_duration(timeout)
    except ValueError:
        raise click.BadParameter(f"{timeout!r} is not a duration like 90s, 15m or 1h", param_hint="--timeout") from None
    if not 0 < seconds <= MAX_TIMEOUT:
        raise click.BadParameter(f"{timeout!r} is not above 0 and at most {MAX_TIMEOUT // 3600}h", param_hint="--timeout")
    report(run(repo or Path.cwd(), cluster, gpu_nodes, seconds, keep, MAX_GPU_NODES))
