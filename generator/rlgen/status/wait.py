"""``rlgen status --wait``: is the cluster done taking the repository in, still on its way, or
stuck on something only a person can fix?

One look at the cluster gives a :class:`Verdict`. ``blocked`` is for what no amount of waiting
resolves: a sync stage that failed (not one waiting for its dependency or still applying), a
RayJob KubeRay failed, a pod the scheduler found no node for, a container the kubelet cannot
create (a missing Secret key), a run not merged into the branch the cluster syncs.
"""
from __future__ import annotations

from dataclasses import dataclass

from rlgen.kube.client import CannotCheck
from rlgen.kube.report import GRANT
from rlgen.run import files
from rlgen.repo.sync_engines import Engine, FLUX, engine_of, follows_runs, stage_state
from rlgen.status.queue import QUEUE_LABEL
from rlgen.status.runs import CLUSTER_LABEL, FAILED, Repo, last_commit, not_merged
from rlgen.tools import git

#: Flux's Ready=False reason of a stage whose dependency is not Ready yet (meta.DependencyNotReadyReason):
#: it retries by itself once the dependency is.
DEPENDENCY_NOT_READY = "DependencyNotReady"
#: Container waiting reasons a kubelet keeps retrying but that only a change by someone ends.
STUCK_CONTAINER = ("CreateContainerConfigError", "CreateContainerError", "InvalidImageName",
                   "ErrImagePull", "ImagePullBackOff")
#: KubeRay's deployment status of a RayJob that ran to its end: its pods may be gone.
FINISHED = ("Complete",)

READY, WAITING, BLOCKED = "ready", "waiting", "blocked"


@dataclass(frozen=True)
class Verdict:
    state: str
    reason: str = ""



def assess(cluster, repo: Repo, runs: list[str]) -> Verdict:
    """The first blocked thing, else the first thing still on its way, else ready."""
    waiting = []
    try:
        for check in (_stages, _runs):
            for verdict in check(cluster, repo, runs):
                if verdict.state == BLOCKED:
                    return verdict
                if verdict.state == WAITING:
                    waiting.append(verdict)
    except CannotCheck as exc:
        return Verdict(BLOCKED, f"cannot check: {exc.message}: {GRANT}")
    return waiting[0] if waiting else Verdict(READY)


# -- sync stages -------------------------------------------------------------------------------

def _stages(cluster, repo: Repo, runs: list[str]):
    engine = engine_of(repo.sync_objects)
    if engine is None:
        return
    for obj in _this_cluster(cluster, engine, repo):
        meta = obj["metadata"]
        name = f"{engine.kind} {meta['name']}"
        live = _live(cluster, engine, obj)
        if live is None:
            yield Verdict(WAITING, f"{name} to be created by the sync of the cluster's entry point")
            continue
        yield _stage(repo, engine, name, live)


def _this_cluster(cluster, engine: Engine, repo: Repo) -> list[dict]:
    """The stages of the cluster folder (clusters/<name>) the cluster syncs: the folder whose
    stages exist on it with the same path; every folder's when none does yet."""
    folders = repo.sync_folders or {"": repo.sync_objects}
    stages = {folder: [o for o in objs if o.get("kind") == engine.kind] for folder, objs in folders.items()}
    if len(stages) == 1:
        return next(iter(stages.values()))
    score = {folder: sum(1 for o in objs if (live := _live(cluster, engine, o)) is not None
                         and engine.stage_path(live) == engine.stage_path(o)) for folder, objs in stages.items()}
    best = max(score.values())
    return [o for folder, objs in stages.items() if score[folder] == best for o in objs]


def _live(cluster, engine: Engine, obj: dict):
    meta = obj["metadata"]
    return cluster.call("CustomObjectsApi.get_namespaced_custom_object", engine.group, engine.version,
                        meta.get("namespace", engine.namespace), engine.plural, meta["name"])


def _stage(repo: Repo, engine: Engine, name: str, live: dict) -> Verdict:
    state = stage_state(engine, live)
    if engine is FLUX:
        status = live.get("status") or {}
        ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
        # A stage that never succeeded keeps no status.observedGeneration (a health check that
        # timed out on its first apply); its Ready condition still says which spec it judged.
        if (live.get("metadata") or {}).get("generation") not in (status.get("observedGeneration"),
                                                                  ready.get("observedGeneration")):
            return Verdict(WAITING, f"{name} to reconcile its latest spec")
        attempted = str(status.get("lastAttemptedRevision") or "").rpartition(":")[2]
        if attempted and _behind(repo, attempted):
            return Verdict(WAITING, f"{name} to fetch {_head(repo)[:7]} (it last tried {attempted[:7]})")
        if state.healthy is False:
            if ready.get("reason") == DEPENDENCY_NOT_READY:
                return Verdict(WAITING, f"{name}: {ready.get('message', 'its dependency')}")
    elif state.revision and _behind(repo, state.revision):
        return Verdict(WAITING, f"{name} to sync {_head(repo)[:7]} (it synced {state.revision[:7]})")
    if state.healthy is False:
        return Verdict(BLOCKED, f"{name} failed: {state.summary}")
    if state.healthy is None and not follows_runs(engine, live):
        return Verdict(WAITING, f"{name}: {state.summary}")
    return Verdict(READY)


def _behind(repo: Repo, revision: str) -> bool:
    """The cluster applied a revision this checkout knows and its HEAD is not in it yet.
    A revision unknown here (newer than the checkout, another repository) is not behind."""
    head = _head(repo)
    if not head or not git.commit_of(repo.root, revision):
        return False
    return not git.is_ancestor(repo.root, head, revision)


def _head(repo: Repo) -> str:
    """The commit the cluster should have: the sync branch's (as pushed, when known), else HEAD."""
    for ref in (f"origin/{repo.branch}", repo.branch, "HEAD"):
        if commit := git.commit_of(repo.root, ref):
            return commit
    return ""


# -- runs --------------------------------------------------------------------------------------

def _runs(cluster, repo: Repo, runs: list[str]):
    active = files.read_index(repo.root, env=repo.environment)
    for run in (r for r in runs if r in active):
        verdict = _run(cluster, repo, run)
        if verdict.state == BLOCKED and verdict.reason.startswith(f"run {run}: pod ") and (
                freeing := _freeing(cluster, repo, active)):
            # The scheduler tries again when those pods are gone: not stuck yet.
            yield Verdict(WAITING, f"{verdict.reason.split(' cannot be scheduled')[0]} to be scheduled once "
                                   f"{freeing} frees its nodes")
        else:
            yield verdict


def _freeing(cluster, repo: Repo, active: list[str]) -> str:
    """What in the runs' namespace is on its way out (a pruned run's RayJob, pods being deleted)."""
    pinned = {files.pinned_name(repo.root, r) for r in active}
    for job in cluster.items("CustomObjectsApi.list_namespaced_custom_object", "ray.io", "v1", repo.namespace,
                             "rayjobs"):
        meta = job.get("metadata") or {}
        if meta.get("name") not in pinned or meta.get("deletionTimestamp"):
            return f"RayJob {meta.get('name')} (no run of the repository pins it: the sync engine prunes it)"
    for pod in cluster.items("CoreV1Api.list_namespaced_pod", repo.namespace):
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp") and (pod.get("spec") or {}).get("nodeName"):
            return f"pod {meta.get('name')} (being deleted)"
    return ""


def _run(cluster, repo: Repo, run: str) -> Verdict:
    name = files.pinned_name(repo.root, run) or ""
    if not name:
        return Verdict(BLOCKED, f"run {run}: runs/{run}/kustomization.yaml pins no RayJob name")
    job = cluster.call("CustomObjectsApi.get_namespaced_custom_object", "ray.io", "v1", repo.namespace,
                       "rayjobs", name)
    if job is None:
        commit = last_commit(repo, run)
        if branch := not_merged(repo, commit):
            return Verdict(BLOCKED, f"run {run}: not merged yet (commit {commit[:7]} is not on {branch}): "
                                    "the cluster never applies it")
        return Verdict(WAITING, f"run {run}: RayJob {name} to be applied")
    status = job.get("status") or {}
    deployment = status.get("jobDeploymentStatus") or ""
    if deployment in FAILED:
        why = ": ".join(t for t in (status.get("reason"), status.get("message")) if t)
        return Verdict(BLOCKED, f"run {run}: RayJob {name} {deployment}" + (f": {why}" if why else ""))
    if deployment in FINISHED:
        return Verdict(READY)
    if (job.get("spec") or {}).get("suspend") and QUEUE_LABEL in ((job.get("metadata") or {}).get("labels") or {}):
        # Queued by Kueue until the quota has room, maybe for days: taken in, as far as waiting goes.
        return Verdict(READY)
    ray_cluster = status.get("rayClusterName")
    if not ray_cluster:
        return Verdict(WAITING, f"run {run}: KubeRay to create the RayCluster of RayJob {name}")
    return _pods(cluster, repo.namespace, run, ray_cluster)


def _pods(cluster, namespace: str, run: str, ray_cluster: str) -> Verdict:
    live = cluster.call("CustomObjectsApi.get_namespaced_custom_object", "ray.io", "v1", namespace,
                        "rayclusters", ray_cluster) or {}
    wanted = _pod_count(live.get("spec") or {})
    pods = cluster.items("CoreV1Api.list_namespaced_pod", namespace, label_selector=f"{CLUSTER_LABEL}={ray_cluster}")
    pods = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    for pod in pods:
        name = pod["metadata"]["name"]
        scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), {})
        if not (pod.get("spec") or {}).get("nodeName") and scheduled.get("reason") == "Unschedulable":
            return Verdict(BLOCKED, f"run {run}: pod {name} cannot be scheduled: {scheduled.get('message', '')}")
        for container in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in STUCK_CONTAINER:
                return Verdict(BLOCKED, f"run {run}: pod {name} container {container.get('name')}: "
                                        f"{waiting['reason']}: {waiting.get('message', '')}".rstrip(": "))
    unscheduled = [p["metadata"]["name"] for p in pods if not (p.get("spec") or {}).get("nodeName")]
    if unscheduled:
        return Verdict(WAITING, f"run {run}: pod {unscheduled[0]} to be scheduled"
                                + (f" (and {len(unscheduled) - 1} more)" if len(unscheduled) > 1 else ""))
    if len(pods) < wanted:
        return Verdict(WAITING, f"run {run}: {wanted - len(pods)} of {wanted} pods of RayCluster {ray_cluster} "
                                "to be created")
    return Verdict(READY)


def _pod_count(spec: dict) -> int:
    """The head and every worker replica of a RayCluster spec (numOfHosts pods per replica)."""
    if not spec:
        return 1
    workers = 0
    for group in spec.get("workerGroupSpecs") or []:
        if group.get("suspend"):
            continue
        workers += int(group.get("replicas") or group.get("minReplicas") or 0) * int(group.get("numOfHosts") or 1)
    return 1 + workers
