"""``rlgen status``: is my run training? Each run's RayJob, its pods and its sync stage."""
from __future__ import annotations

import time
from pathlib import Path

import click

from rlgen.kube.options import cluster_options, header
from rlgen.errors import ProblemsFound, RlgenError

HELP = """Show RUN (default: every run) as the cluster sees it, read-only.

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
def command(run, watch, wait, timeout, interval, kubeconfig, context, output):
    import sys

    from rlgen.kube import client
    from rlgen.status.wait import parse_duration

    if watch and wait:
        raise click.UsageError("--watch and --wait exclude each other")
    try:
        seconds = parse_duration(timeout)
    except ValueError:
        raise click.BadParameter(f"{timeout!r} is not a duration like 90s, 15m or 1h", param_hint="--timeout") from None
    repo = _repo()
    runs = _select(repo.root, run)
    cluster = client.connect(kubeconfig, context)
    fmt = output or ("table" if sys.stdout.isatty() else "json")
    if wait:
        _wait(cluster, repo, runs, seconds, interval, fmt)
        return
    while True:
        rows = _rows(cluster, repo, runs)
        _show(rows, fmt, cluster, compact=watch)
        if not watch:
            break
        time.sleep(interval)
    failed = [r.run for r in rows if r.failed]
    if failed:
        raise ProblemsFound(f"run(s) failed: {', '.join(failed)}")


def _wait(cluster, repo, runs, seconds: float, interval: float, fmt: str) -> None:
    """Poll until ready, blocked or out of time; then show the runs once and say which."""
    import sys

    from rlgen.status.wait import BLOCKED, READY, assess

    progress = sys.stderr.isatty()
    start = time.monotonic()
    while True:
        verdict = assess(cluster, repo, runs)
        elapsed = time.monotonic() - start
        if verdict.state in (READY, BLOCKED) or elapsed >= seconds:
            break
        if progress:
            click.echo(f"\r\033[Kwaiting {int(elapsed)}s: {verdict.reason}", nl=False, err=True)
        time.sleep(max(0.0, min(interval, seconds - elapsed)))
    if progress:
        click.echo("\r\033[K", nl=False, err=True)
    _show(_rows(cluster, repo, runs), fmt, cluster, compact=False)
    if verdict.state == BLOCKED:
        raise ProblemsFound(f"cannot resolve by itself: {verdict.reason}")
    if verdict.state != READY:
        raise ProblemsFound(f"timed out after {_duration(seconds)} waiting for {verdict.reason}")


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _repo():
    from rlgen.render import manifests
    from rlgen.repo.workspace import find_root, load_spec
    from rlgen.status.runs import Repo
    from rlgen.tools.yamlio import read_plain_all

    root = find_root(Path.cwd())
    spec = load_spec(root)
    folders: dict[str, list] = {}
    for path in manifests.plain_files(manifests.committable(root)):
        parts = path.relative_to(root).parts
        if parts[0] == "clusters":
            folders.setdefault(parts[1] if len(parts) > 2 else "", []).extend(d for d in read_plain_all(path.read_text()) if isinstance(d, dict))
    sync_objects = [d for docs in folders.values() for d in docs]
    return Repo(root, spec.namespace, spec.git_branch, sync_objects, folders)


def _select(root: Path, run: str | None) -> list[str]:
    from rlgen.status.runs import all_runs

    runs = all_runs(root)
    if run is None:
        return runs
    if run not in runs:
        raise RlgenError(f"no run '{run}' in {root / 'runs'} (runs: {', '.join(runs) or 'none'})")
    return [run]


def _rows(cluster, repo, runs):
    from rlgen.kube.client import CannotCheck
    from rlgen.status.runs import RunStatus, owning_stage, status_of

    stage = owning_stage(cluster, repo.sync_objects)
    rows = []
    for run in runs:
        try:
            rows.append(status_of(cluster, repo, run, stage))
        except CannotCheck as exc:
            rows.append(RunStatus(run, "", note=f"cannot check: {exc.message}"))
    return rows


def _show(rows, fmt: str, cluster, compact: bool) -> None:
    import json
    import sys
    from dataclasses import asdict

    from rlgen.kube.report import emit

    if fmt == "json" and compact:
        # One document per line, so a reader of a watched stream can take each refresh whole.
        click.echo(json.dumps({**header(cluster), "rows": [asdict(r) for r in rows]}))
    else:
        if compact:
            click.clear()
        emit(rows, COLUMNS, fmt, header(cluster))
    sys.stdout.flush()


COLUMNS = ("run", "rayjob", "deployment", "job", "started", "duration", "pending", "dashboard", "sync", "note")
