"""``rlgen status``: is my run training? Each run's RayJob, its pods and its sync stage."""
from __future__ import annotations

import click

from rlgen.kube.options import cluster_options
from rlgen.output import resolve_output

HELP = """Show each run's RayJob and its sync, read-only.

RUN (default: every run) as the cluster sees it.

\b
Each run is matched to its RayJob by the name pinned in runs/<run>/kustomization.yaml:
KubeRay's jobDeploymentStatus and jobStatus, start time and duration, how many of its pods
are pending and the scheduler's reason (FailedScheduling events), the Ray dashboard
Service, and the state of the sync stage that applies runs/ (Flux Kustomization Ready,
Argo CD Application sync and health). A run without a RayJob says why: not merged yet
(its last commit is not on the sync branch), sync failing, not applied yet, or pruned.

\b
\b
--wait blocks until every sync stage is Ready and each active run's pods are scheduled
(exit 0), and stops at the first thing that cannot resolve by itself, with its reason
(exit 1): a stage that failed, a RayJob KubeRay failed, a pod no node can take (GPUs,
taints), a container that cannot start (a missing Secret key), a run not merged. At
--timeout it exits 1 naming what it still waited for. A terminal shows a progress line.

\b
Reads RayJobs, RayClusters, Pods, Events and the sync engine's objects; never a Secret.
Exit codes: 0 shown (--wait: all scheduled), 1 a run failed (--wait: blocked or timed out),
2 the cluster cannot be reached (one line).
"""


@click.command("status", help=HELP)
@click.argument("run", required=False)
@click.option("--watch", is_flag=True, help="Refresh until interrupted (Ctrl-C).")
@click.option("--wait", is_flag=True, help="Block until every stage is Ready and the runs' pods are scheduled.")
@click.option("--timeout", default="10m", show_default=True, metavar="D",
              help="With --wait: give up after D (90s, 15m, 1h).")
@click.option("--interval", type=float, default=10.0, show_default=True, help="Seconds between refreshes.")
@cluster_options
def command(run, watch, wait, timeout, interval, kubeconfig, context, repo_cluster, output):
    if watch and wait:
        raise click.UsageError("--watch and --wait exclude each other")
    from rlgen.status import report
    from rlgen.tools.durations import parse_duration

    try:
        seconds = parse_duration(timeout)
    except ValueError:
        raise click.BadParameter(f"{timeout!r} is not a duration like 90s, 15m or 1h", param_hint="--timeout") from None
    report.show(run, kubeconfig, context, resolve_output(output), watch=watch, wait=seconds if wait else None,
                interval=interval, cluster=repo_cluster)
