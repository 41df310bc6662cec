"""What the cluster commands know of Flux and Argo CD: their controllers, the object each
stage of the repository becomes, and how to read that object's status as its controller
writes it (Flux: the ``Ready`` condition; Argo CD: ``status.sync`` and ``status.health``)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlgen.repo.objects import get


@dataclass(frozen=True)
class Engine:
    name: str
    namespace: str
    group: str
    version: str
    plural: str
    kind: str
    #: (workload kind, name) of the controllers a sync needs, as the upstream installs name them.
    controllers: tuple[tuple[str, str], ...]
    #: The built-in sync plugin that writes this engine's objects.
    plugin: str
    #: What stops this engine without deleting what it applied, run before a repository that
    #: now syncs with another engine is merged (docs/upstream.md, "Changing the sync engine").
    retire: str
    #: What happens when that merge is synced while this engine still runs.
    merged_while_running: str
    #: The engine builds a folder with no kustomization file from its sub-folders that hold one,
    #: so an environment's runs need no index (:data:`rlgen.repo.layout.RUN_LINK`).
    builds_folders: bool = False

    def stage_path(self, obj: dict) -> str:
        path = get(obj, "spec", "path") if self is FLUX else get(obj, "spec", "source", "path")
        return str(path or "").removeprefix("./").rstrip("/")


FLUX = Engine("Flux", "flux-system", "kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization",
              (("Deployment", "source-controller"), ("Deployment", "kustomize-controller")), "flux",
              # flux uninstall removes the finalizers of Flux's objects before it deletes them and
              # its controllers and CRDs: what they applied stays, for the next engine to adopt.
              "flux uninstall --keep-namespace",
              "the flux-system Kustomization prunes what left clusters/<cluster>/: Flux's own controllers, "
              "and the stages' Kustomizations, whose finalizers delete everything they applied, runs included",
              builds_folders=True)
ARGO = Engine("Argo CD", "argocd", "argoproj.io", "v1alpha1", "applications", "Application",
              (("StatefulSet", "argocd-application-controller"), ("Deployment", "argocd-repo-server")), "argo",
              # Without its resources finalizer an Application is deleted alone (Argo CD cascades
              # only through that finalizer): every Application, the root included.
              "kubectl -n argocd get applications -o name | xargs -r -I{} kubectl -n argocd patch {} --type=merge "
              "-p '{\"metadata\":{\"finalizers\":null}}' && kubectl -n argocd delete applications --all",
              "the root Application prunes the stages' Applications that left clusters/<cluster>/, and their "
              "resources finalizer deletes everything they applied, runs included")


def engine_of_plugin(plugin: str) -> Engine | None:
    """The engine whose objects the sync plugin ``plugin`` writes (None: a plugin not built in)."""
    return next((e for e in (FLUX, ARGO) if e.plugin == plugin), None)


def builds_folders(plugin: str) -> bool:
    """The sync plugin ``plugin``'s engine finds an environment's runs by their folders, so the
    repository has no runs index (:data:`Engine.builds_folders`)."""
    engine = engine_of_plugin(plugin)
    return engine is not None and engine.builds_folders


#: The annotation of an Argo CD Application whose health no wave waits for (the value "false"),
#: which rlgen's Application health check reads (plugin ``argo``): the runs', whose RayJobs stay
#: Progressing for a whole training run, and the root's, which syncs its own file.
ARGO_HEALTH_GATE = "rlgen.io/health-gate"


def engine_of(sync_objects: list[dict]) -> Engine | None:
    for engine in (FLUX, ARGO):
        if any(o.get("kind") == engine.kind and o.get("apiVersion", "").startswith(engine.group + "/")
               for o in sync_objects):
            return engine
    return None


def engine_in(root: Path) -> Engine | None:
    """The engine whose objects the files under ``clusters/`` hold as written, without a render
    (``rlgen e2e --install-tools`` runs before kustomize is installed)."""
    # Lazy: the status commands read no files.
    from rlgen.errors import RlgenError
    from rlgen.tools import repo_files, yamlio

    docs: list[dict] = []
    for path in sorted((root / "clusters").rglob("*.y*ml")):
        try:
            docs += [d for d in yamlio.read_manifests_all(repo_files.read_text(path)) if isinstance(d, dict)]
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise RlgenError(f"{path}: {exc}") from None
    return engine_of(docs)


def stage_owning(sync_objects: list[dict], folder: str) -> tuple[Engine, dict] | None:
    """The sync object (Kustomization/Application) that applies ``folder`` of the repository."""
    engine = engine_of(sync_objects)
    if engine is None:
        return None
    for obj in sync_objects:
        if obj.get("kind") == engine.kind and engine.stage_path(obj) == folder.strip("/"):
            return engine, obj
    return None


@dataclass(frozen=True)
class StageState:
    """``healthy`` True (applied), False (failing) or None (in progress / never reconciled)."""

    healthy: bool | None
    summary: str
    revision: str = ""


def follows_runs(engine: Engine, live: dict) -> bool:
    """An Argo CD Application Synced and Progressing that no wave waits for: what it applies has
    arrived, and its health is that of training runs, which the run checks judge by themselves."""
    return (engine is ARGO and get(live, "metadata", "annotations", ARGO_HEALTH_GATE) == "false"
            and get(live, "status", "sync", "status") == "Synced"
            and get(live, "status", "health", "status") == "Progressing")


def stage_state(engine: Engine, live: dict) -> StageState:
    return _flux(live) if engine is FLUX else _argo(live)


def _flux(live: dict) -> StageState:
    status = live.get("status") or {}
    revision = str(status.get("lastAppliedRevision") or "").rpartition(":")[2]
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is None:
        return StageState(None, "not reconciled yet", revision)
    text = f"Ready={ready.get('status')} {ready.get('reason', '')}: {ready.get('message', '')}".strip()
    healthy = {"True": True, "False": False}.get(ready.get("status"))
    return StageState(healthy, text, revision)


def _argo(live: dict) -> StageState:
    status = live.get("status") or {}
    sync = get(status, "sync", "status", default="Unknown")
    health = get(status, "health", "status", default="Unknown")
    revision = str(get(status, "sync", "revision", default="") or "")
    phase = get(status, "operationState", "phase", default="")
    errors = [c.get("message", "") for c in status.get("conditions") or [] if "Error" in c.get("type", "")]
    text = f"{sync}, {health}"
    if phase in ("Failed", "Error") or errors:
        message = get(status, "operationState", "message", default="") or "; ".join(errors)
        return StageState(False, f"{text}, last sync {phase or 'failed'}: {message}", revision)
    if health == "Degraded":
        return StageState(False, f"{text}: {get(status, 'health', 'message', default='')}".rstrip(": "), revision)
    return StageState(True if sync == "Synced" and health == "Healthy" else None, text, revision)
