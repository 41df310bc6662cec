"""What ``rlgen status`` shows: each run as the cluster sees it, once, refreshed (``--watch``) or
when waiting is over (``--wait``)."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import click

from rlgen.errors import ProblemsFound, RlgenError
from rlgen.kube import client
from rlgen.kube.client import CannotCheck
from rlgen.kube.options import header
from rlgen.kube.report import emit
from rlgen.render import manifests
from rlgen.repo import answers
from rlgen.repo.workspace import find_root, load_spec
from rlgen.status.runs import Repo, RunStatus, all_runs, owning_stage, status_of
from rlgen.status.wait import BLOCKED, READY, assess
from rlgen.tools.kustomize import KUSTOMIZATION_FILES


def show(run: str | None, kubeconfig, context, fmt: str, watch: bool = False, wait: float | None = None,
         interval: float = 10.0, cluster: str | None = None) -> None:
    """Show ``run`` (None: every run); ``wait``: seconds to wait for every stage Ready and the
    runs' pods scheduled; ``cluster``: which of the repository's clusters this is (None: every
    cluster's stages, the main environment's runs)."""
    repo = _repo(cluster)
    runs = _select(repo.root, run, repo.environment)
    cluster = client.connect(kubeconfig, context)
    if wait is not None:
        _wait(cluster, repo, runs, wait, interval, fmt)
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


def _repo(cluster: str | None = None):
    root = find_root(Path.cwd())
    spec = load_spec(root)
    env = answers.cluster_environment(root, cluster, spec.cluster) if cluster else ""
    folders: dict[str, list] = {}
    # A cluster folder's own files: its stages (a kustomization there, as Argo CD's root reads
    # the folder, only adds the shared upstream roots; a subfolder is flux-system or those).
    for path in sorted(manifests.committable(root)):
        parts = path.relative_to(root).parts
        if parts[0] == "clusters" and len(parts) <= 3 and path.suffix in (".yaml", ".yml") \
                and path.name not in KUSTOMIZATION_FILES:
            folders.setdefault(parts[1] if len(parts) > 2 else "", []).extend(
                d for d in manifests.entry_point(path, root) if isinstance(d, dict))
    if cluster:
        folders = {cluster: folders.get(cluster, [])}
    sync_objects = [d for docs in folders.values() for d in docs]
    return Repo(root, spec.namespace, spec.git_branch, sync_objects, folders, env)


def _select(root: Path, run: str | None, env: str = "") -> list[str]:
    runs = all_runs(root, env)
    if run is None:
        return runs
    if run not in runs:
        raise RlgenError(f"no run '{run}' in {root / 'runs'} (runs: {', '.join(runs) or 'none'})")
    return [run]


def _rows(cluster, repo, runs):
    stage = owning_stage(cluster, repo)
    rows = []
    for run in runs:
        try:
            rows.append(status_of(cluster, repo, run, stage))
        except CannotCheck as exc:
            rows.append(RunStatus(run, "", note=f"cannot check: {exc.message}"))
    return rows


def _show(rows, fmt: str, cluster, compact: bool) -> None:
    if fmt == "json" and compact:
        # One document per line, so a reader of a watched stream can take each refresh whole.
        click.echo(json.dumps({**header(cluster), "rows": [asdict(r) for r in rows]}))
    else:
        if compact:
            click.clear()
        # The queue column only for a repository whose runs a queue holds, the retries column
        # only once a run was retried.
        columns = tuple(c for c in COLUMNS if c not in OPTIONAL or any(getattr(r, c) for r in rows))
        emit(rows, columns, fmt, header(cluster))
    sys.stdout.flush()


OPTIONAL = ("retries", "queue")
COLUMNS = ("run", "rayjob", "deployment", "retries", "job", "started", "duration", "pending", "queue", "dashboard", "sync", "note")
