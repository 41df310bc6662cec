"""The sync engine's view: the stages it applies (Flux Kustomizations, Argo CD Applications),
their order, and where what they apply is pulled from.

- A stage that puts objects into a Namespace another stage creates must come after it
  (Flux ``dependsOn``, directly or not; Argo CD an earlier sync wave), or its first apply fails.
- Images and Git URLs on the reserved example domains can never be pulled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from rlgen.contributions import CREATES_ANNOTATION, NAMESPACE_ANNOTATION
from rlgen.naming import image_host, is_example_host, url_host
from rlgen.repo.objects import get, pod_specs
from rlgen.repo.sync_engines import ARGO_HEALTH_GATE as HEALTH_GATE
from rlgen.rules.base import Finding, Rendered


@dataclass
class SyncStage:
    item: Rendered
    name: str
    after: set[str] = field(default_factory=set)
    uses: set[str] = field(default_factory=set)
    creates: set[str] = field(default_factory=set)


def _stages(objects: list[Rendered]) -> list[SyncStage]:
    by_source: dict[str, list[dict]] = {}
    for o in objects:
        by_source.setdefault(o.source, []).append(o.obj)
    stages = []
    for item in objects:
        obj, kind = item.obj, item.obj.get("kind")
        api = str(obj.get("apiVersion", ""))
        if kind == "Kustomization" and api.startswith("kustomize.toolkit.fluxcd.io"):
            path = str(get(obj, "spec", "path", default="")).removeprefix("./").strip("/")
            stage = SyncStage(item, get(obj, "metadata", "name"),
                              {d.get("name") for d in get(obj, "spec", "dependsOn", default=[]) or []})
        elif kind == "Application" and api.startswith("argoproj.io"):
            path = str(get(obj, "spec", "source", "path", default="")).strip("/")
            stage = SyncStage(item, get(obj, "metadata", "name"))
        else:
            continue
        annotations = get(obj, "metadata", "annotations", default={}) or {}
        if ns := annotations.get(NAMESPACE_ANNOTATION):
            stage.uses.add(ns)
            if annotations.get(CREATES_ANNOTATION) == "true":
                stage.creates.add(ns)
        for applied in by_source.get(path, []) if path else []:
            if applied.get("kind") == "Namespace":
                stage.creates.add(get(applied, "metadata", "name"))
            elif ns := get(applied, "metadata", "namespace"):
                stage.uses.add(ns)
        stages.append(stage)
    _argo_waves(stages)
    return stages


def _argo_waves(stages: list[SyncStage]) -> None:
    """An Argo CD Application syncs after every sibling of a lower wave."""
    def wave(s: SyncStage) -> int:
        return int(get(s.item.obj, "metadata", "annotations", "argocd.argoproj.io/sync-wave", default="0") or 0)

    apps = [s for s in stages if s.item.obj.get("kind") == "Application"]
    for s in apps:
        s.after |= {o.name for o in apps if wave(o) < wave(s)}


def _before(stage: SyncStage, by_name: dict[str, SyncStage]) -> set[str]:
    seen, todo = set(), list(stage.after)
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        todo += by_name[name].after
    return seen


def ordering_rules(objects: list[Rendered]) -> Iterator[Finding]:
    stages = _stages(objects)
    by_name = {s.name: s for s in stages}
    for stage in stages:
        before = _before(stage, by_name)
        for ns in sorted(stage.uses - stage.creates):
            creators = sorted(s.name for s in stages if ns in s.creates and s is not stage)
            if creators and not any(c in before for c in creators):
                yield Finding(stage.item.source, stage.item.label,
                              f"applies objects in namespace {ns}, which stage {creators[0]} creates, "
                              f"but does not come after it: its first apply fails")


def _images(obj: dict) -> Iterator[str]:
    for pod in pod_specs(obj):
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            yield container.get("image", "")
    for image in get(obj, "spec", "images", default=[]) or []:  # Flux Kustomization
        if isinstance(image, dict) and image.get("newName"):
            yield image["newName"]
    for image in get(obj, "spec", "source", "kustomize", "images", default=[]) or []:  # Argo CD
        yield str(image).partition("=")[2] or str(image)


def _git_urls(obj: dict) -> Iterator[str]:
    kind = obj.get("kind")
    if kind == "GitRepository":
        yield get(obj, "spec", "url", default="")
    elif kind == "Application":
        yield get(obj, "spec", "source", "repoURL", default="")
    elif kind == "AppProject":
        yield from get(obj, "spec", "sourceRepos", default=[]) or []


def example_domain_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        for image in _images(item.obj):
            if image and is_example_host(image_host(image)):
                yield Finding(item.source, item.label, f"image '{image}' is on a reserved example domain: "
                                                       "set rlgen.registry (or the plugin's image option)")
        for url in _git_urls(item.obj):
            if url and is_example_host(url_host(url)):
                yield Finding(item.source, item.label, f"Git URL '{url}' is on a reserved example domain: "
                                                       "set rlgen.git_url to this repository's remote")




def _applies(objects: list[Rendered], app: dict) -> list[dict]:
    path = str(get(app, "spec", "source", "path", default="")).strip("/")
    return [o.obj for o in objects if path and o.source == path]


def argo_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """Argo CD: a failed automated sync of a revision is never attempted again unless the
    Application's retry policy does it (argo-cd v3.6.1 controller/appcontroller.go autoSync), and a
    RayJob is Progressing for a whole run, so an Application of RayJobs that gates the root's
    sync keeps that sync running."""
    apps = [o for o in objects if o.obj.get("kind") == "Application"
            and str(o.obj.get("apiVersion", "")).startswith("argoproj.io")]
    health_checks = [str(get(o.obj, "data", "resource.customizations.health.argoproj.io_Application", default=""))
                     for o in objects if o.obj.get("kind") == "ConfigMap" and get(o.obj, "metadata", "name") == "argocd-cm"]
    for item in apps:
        policy = get(item.obj, "spec", "syncPolicy", default={}) or {}
        if "automated" in policy:
            limit = get(policy, "retry", "limit")
            if limit is None or int(limit) >= 0:
                yield Finding(item.source, item.label,
                              "syncPolicy.retry.limit must be -1: Argo CD never re-attempts a failed automated "
                              "sync of the same revision once its retries are used up")
        applied = _applies(objects, item.obj)
        name = get(item.obj, "metadata", "name")
        if any(o.get("kind") == "Application" and get(o, "metadata", "name") == name for o in applied) \
                and get(item.obj, "metadata", "annotations", HEALTH_GATE) != "false":
            yield Finding(item.source, item.label,
                          f"syncs its own file but gates its sync (needs annotation {HEALTH_GATE}: \"false\"): "
                          "while it syncs it is not Synced, so by the Application health check its sync waits "
                          "on itself for ever")
        if any(o.get("kind") == "RayJob" for o in applied):
            gate = get(item.obj, "metadata", "annotations", HEALTH_GATE)
            if gate != "false" or not any(HEALTH_GATE in check for check in health_checks):
                yield Finding(item.source, item.label,
                              f"applies RayJobs but gates the root's sync (needs annotation {HEALTH_GATE}: \"false\" "
                              "and argocd-cm's Application health check reading it): a RayJob stays Progressing "
                              "for the whole run, so the root's sync never finishes")
