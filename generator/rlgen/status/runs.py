"""Each run of the repository, matched to its RayJob by the pinned hashed name, with what
KubeRay, the scheduler and the sync engine say about it; a missing RayJob says why."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rlgen.kube.client import CannotCheck
from rlgen.repo.sync_engines import StageState, stage_owning, stage_state
from rlgen.repo import answers
from rlgen.repo.layout import runs_root
from rlgen.run import files
from rlgen.status.queue import queue_state
from rlgen.tools import git

#: KubeRay labels every Pod of a RayCluster with its name (utils/constant.go RayClusterLabelKey).
CLUSTER_LABEL = "ray.io/cluster"
DASHBOARD_PORT = 8265
FAILED = ("Failed", "ValidationFailed")


@dataclass
class RunStatus:
    run: str
    rayjob: str
    deployment: str = ""
    #: The RayJob's own retries (spec.backoffLimit), each with a new Ray cluster: "1 of 3".
    retries: str = ""
    job: str = ""
    started: str = ""
    duration: str = ""
    pending: str = ""
    queue: str = ""
    dashboard: str = ""
    sync: str = ""
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.deployment in FAILED or self.job == "FAILED"


@dataclass(frozen=True)
class Repo:
    root: Path
    namespace: str
    branch: str
    sync_objects: list
    #: The same objects by the folder of clusters/ they are in (one per cluster the repository syncs).
    sync_folders: dict = field(default_factory=dict)
    #: The environment of the cluster ``rlgen status --cluster`` names ("": the main cluster's).
    environment: str = ""


def all_runs(repo: Path, env: str = "") -> list[str]:
    listed = files.read_index(repo, env=env)
    on_disk = sorted(p.parent.name for p in (repo / "runs").glob("*/kustomization.yaml"))
    return listed + [r for r in on_disk if r not in listed]


def status_of(cluster, repo: Repo, run: str, stage) -> RunStatus:
    name = files.pinned_name(repo.root, run) or ""
    row = RunStatus(run, name, sync=stage[2].summary if stage else "no sync stage applies the runs index")
    live = cluster.call("CustomObjectsApi.get_namespaced_custom_object", "ray.io", "v1", repo.namespace,
                        "rayjobs", name) if name else None
    listed = run in files.read_index(repo.root, env=repo.environment)
    if live is None:
        row.note = _why_missing(repo, run, listed, stage)
        return row
    status = live.get("status") or {}
    row.deployment = status.get("jobDeploymentStatus") or "New"
    row.job = status.get("jobStatus") or ""
    row.retries = _retries(live.get("spec") or {}, status, row.deployment)
    row.started = status.get("startTime") or ""
    row.duration = _duration(row.started, status.get("endTime"))
    row.dashboard = _dashboard(status, repo.namespace)
    try:
        row.pending = _pending(cluster, repo.namespace, status.get("rayClusterName"))
    except CannotCheck as exc:
        row.pending = f"cannot check: {exc.message}"
    try:
        row.queue = queue_state(cluster, repo.namespace, live)
    except CannotCheck as exc:
        row.queue = f"cannot check: {exc.message}"
    notes = [status.get("reason", ""), status.get("message", "")]
    if not listed:
        notes.append("removed from the environment's runs: the sync engine prunes it")
    row.note = ": ".join(n for n in notes if n)
    return row


def owning_stage(cluster, repo: Repo):
    """(engine, live object, state) of the stage that applies the main environment's runs, or None."""
    found = stage_owning(repo.sync_objects, runs_root(repo.environment or answers.main_environment(repo.root)))
    if found is None:
        return None
    engine, obj = found
    meta = obj["metadata"]
    try:
        live = cluster.call("CustomObjectsApi.get_namespaced_custom_object", engine.group, engine.version,
                            meta.get("namespace", engine.namespace), engine.plural, meta["name"])
    except CannotCheck as exc:
        return engine, None, StageState(None, f"cannot check: {exc.message}")
    if live is None:
        return engine, None, StageState(False, f"{engine.kind} {meta['name']} does not exist: the sync engine "
                                               "has not applied the repository's entry points")
    state = stage_state(engine, live)
    cause = failed_dependency(cluster, engine, live)
    if cause:
        state = StageState(state.healthy, f"{state.summary}; {cause}", state.revision)
    return engine, live, state


def failed_dependency(cluster, engine, live: dict, seen: frozenset = frozenset()) -> str:
    """For a Flux stage waiting on its dependencies: the first one down the chain that failed
    by itself (the stage to fix), as "<Kustomization> failed: <its Ready condition>"."""
    if engine.kind != "Kustomization":
        return ""
    namespace = live["metadata"].get("namespace", engine.namespace)
    for dep in (live.get("spec") or {}).get("dependsOn") or []:
        key = (dep.get("namespace") or namespace, dep["name"])
        if key in seen:
            continue
        found = cluster.call("CustomObjectsApi.get_namespaced_custom_object", engine.group, engine.version,
                             key[0], engine.plural, key[1])
        if found is None:
            return f"its dependency {engine.kind} {key[1]} does not exist"
        state = stage_state(engine, found)
        if state.healthy is False:
            return (failed_dependency(cluster, engine, found, seen | {key})
                    or f"its dependency {engine.kind} {key[1]} failed: {state.summary}")
    return ""


def _why_missing(repo: Repo, run: str, listed: bool, stage) -> str:
    if not listed:
        return "removed from the environment's runs: pruned"
    commit = last_commit(repo, run)
    if branch := not_merged(repo, commit):
        return f"not merged yet: commit {commit[:7]} is not on {branch}"
    if stage is None:
        return "no sync stage applies the runs index"
    state = stage[2]
    if state.healthy is False:
        return f"sync failing: {state.summary}"
    if commit and state.revision and not git.is_ancestor(repo.root, commit, state.revision):
        return f"merged, not applied yet: the sync engine applied {state.revision[:7]}"
    if state.healthy is None:
        return f"sync in progress: {state.summary}"
    return "applied but absent: deleted from the cluster (by hand, or DeleteSelf); the next sync recreates it"


def last_commit(repo: Repo, run: str) -> str:
    """The last commit that changed ``runs/<run>/`` ("" when none did)."""
    return git.run(repo.root, "log", "-1", "--format=%H", "--", f"runs/{run}", check=False).strip()


def not_merged(repo: Repo, commit: str) -> str | None:
    """The branch the cluster syncs (``origin/`` first) when ``commit`` is not on it: the
    cluster never applies it."""
    branch = next((b for b in (f"origin/{repo.branch}", repo.branch) if git.commit_of(repo.root, b)), None)
    return branch if commit and branch and not git.is_ancestor(repo.root, commit, branch) else None


def _duration(start: str, end: str | None) -> str:
    if not start:
        return ""
    begin = _time(start)
    finish = _time(end) if end else datetime.now(timezone.utc)
    seconds = max(0, int((finish - begin).total_seconds()))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" + ("" if end else " (running)")


def _retries(spec: dict, status: dict, deployment: str) -> str:
    """KubeRay counts each failed attempt in ``status.failed`` and retries while it is at most
    ``spec.backoffLimit`` (rayjob_controller.go checkBackoffLimitAndUpdateStatusIfNeeded):
    the failure that ends a run out of retries is no retry."""
    failed = int(status.get("failed") or 0)
    limit = int(spec.get("backoffLimit") or 0)
    retries = min(failed, limit)
    if not retries:
        return ""
    if deployment in FAILED and failed > limit:
        return f"{retries} of {limit}, none left"
    return f"{retries} of {limit}"


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _dashboard(status: dict, namespace: str) -> str:
    if status.get("dashboardURL"):
        return status["dashboardURL"]
    cluster = status.get("rayClusterName")
    # KubeRay names the head Service <RayCluster>-head-svc (utils.GenerateHeadServiceName).
    return f"{cluster}-head-svc.{namespace}.svc:{DASHBOARD_PORT} (not ready)" if cluster else ""


def _pending(cluster, namespace: str, ray_cluster: str | None) -> str:
    if not ray_cluster:
        return ""
    pods = cluster.items("CoreV1Api.list_namespaced_pod", namespace, label_selector=f"{CLUSTER_LABEL}={ray_cluster}")
    pending = [p for p in pods if (p.get("status") or {}).get("phase") == "Pending"]
    if not pending:
        return "0"
    reasons = []
    for pod in pending:
        name = pod["metadata"]["name"]
        events = cluster.items("CoreV1Api.list_namespaced_event", namespace,
                               field_selector=f"involvedObject.name={name},reason=FailedScheduling")
        if events:
            latest = max(events, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
            reasons.append(latest.get("message", ""))
    return f"{len(pending)}" + (f": {reasons[0]}" if reasons else "")
