"""Sync plugin: Flux Kustomizations per cluster, ordered infrastructure -> platform -> runs."""
from __future__ import annotations


from rlgen.plugin_api import SECRETS_FOLDER, UPSTREAM_FOLDER, Document, Option, PluginInfo, duration_error, hookimpl
from rlgen_plugins._sync_common import engine_patch, kustomization, repo_name

NAME = "flux"
FLUX_NAMESPACE = "flux-system"
#: The GitRepository that ``flux bootstrap`` creates for this repository.
BOOTSTRAP_SOURCE = {"kind": "GitRepository", "name": "flux-system"}
#: A health check expression (CEL): the object's Ready condition is True.
READY = "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="sync",
        summary="Flux: one Kustomization per stage, dependsOn in order, prune on",
        options=(
            Option("interval", "How often Flux re-applies each stage", "10m", check=duration_error),
            Option("platform_timeout", "How long the platform may take (includes the dataset Job)", "60m",
                   check=duration_error),
        ),
    )


def _meta(name: str) -> dict:
    return {"name": name, "namespace": FLUX_NAMESPACE}


def _kustomization(name: str, path: str, source: dict, depends_on: list[str], interval: str, **spec) -> dict:
    body = {"interval": interval, "path": path, "prune": True, "sourceRef": source}
    if depends_on:
        body["dependsOn"] = [{"name": d} for d in depends_on]
    body.update(spec)
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": _meta(name), "spec": body}


@hookimpl
def rlgen_sync_files(ctx, stages):
    o = ctx.options(NAME)
    files: dict[str, list[Document]] = {}
    names_of: dict[str, list[str]] = {}
    sources: dict[tuple[str, str], str] = {}
    for stage in stages:
        docs, names = [], []
        depends = [n for dep in stage.depends_on for n in names_of[dep]]
        for up in stage.upstream:
            if (up.url, up.tag) not in sources:
                source = repo_name(up.url)
                if source in sources.values():
                    source += "-" + up.tag.replace(".", "-").lower()
                sources[(up.url, up.tag)] = source
                files[f"{UPSTREAM_FOLDER}/{source}.yaml"] = [Document({
                    "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                    "metadata": _meta(source),
                    "spec": {"interval": "1h", "url": up.url, "ref": {"tag": up.tag}},
                }, "Upstream kustomize roots come from here, pinned to a tag: an upstream push never\n"
                   "changes the cluster, and this repository's own roots still build offline.")]
            source = sources[(up.url, up.tag)]
            extra = {"wait": True}
            if up.images:
                extra["images"] = [dict(i) for i in up.images]
            if up.patches:
                extra["patches"] = [engine_patch(p) for p in up.patches]
            doc = _kustomization(up.name, f"./{up.path}", {"kind": "GitRepository", "name": source},
                                 depends + list(up.depends_on), o["interval"], **extra)
            doc["metadata"]["annotations"] = up.annotations()
            files[f"{UPSTREAM_FOLDER}/{source}.yaml"].append(Document(doc, up.comment))
            names.append(up.name)
        if stage.path:
            docs.append(_stage_kustomization(stage, depends + names, o))
            names.append(stage.name)
        names_of[stage.name] = names
        if docs:
            files[f"clusters/{ctx.spec.cluster}/{stage.name}.yaml"] = docs
    if sources:
        _add_upstream_kustomizations(files, ctx.spec.cluster)
    return files


def _stage_kustomization(stage, depends: list[str], o) -> Document:
    """The Flux Kustomization of one of rlgen's stages, after ``depends``."""
    if stage.name == "runs":
        extra = {"wait": False}
        comment = ("One RayJob per run. No wait: a RayJob has no Ready condition, so waiting\n"
                   "would block every later sync. Prune deletes the RayJob of a removed run.")
    elif not stage.wait:
        extra = {"wait": False}
        comment = (f"No wait, and no stage depends on '{stage.name}': an object of it that is not\n"
                   "ready (an optional Secret not stored yet) holds back nothing.")
    else:
        extra = {"wait": True, "timeout": o["platform_timeout"]}
        what = " (the dataset Job included)" if stage.name == "platform" else ""
        comment = (f"Waits until every object of '{stage.name}' is ready{what}\n"
                   "before the stages that depend on it start.")
    if stage.name == SECRETS_FOLDER and stage.wait:
        # kstatus reads a custom object without status as current: applied, the stage
        # was ready before External Secrets had fetched a single Secret.
        extra["healthCheckExprs"] = [{"apiVersion": "external-secrets.io/v1", "kind": kind, "current": READY}
                                     for kind in ("ClusterSecretStore", "ExternalSecret")]
    if stage.decryption:
        # kustomize-controller decrypts SOPS files with the age key of this Secret, in
        # the Kustomization's own namespace.
        extra["decryption"] = {"provider": "sops", "secretRef": {"name": stage.decryption}}
        comment += f"\nDecrypted with the age key of Secret {FLUX_NAMESPACE}/{stage.decryption}."
    return Document(_kustomization(stage.name, stage.path, dict(BOOTSTRAP_SOURCE), depends, o["interval"], **extra),
                    comment)


def _add_upstream_kustomizations(files: dict[str, list[Document]], cluster: str) -> None:
    shared = sorted(p.rpartition("/")[2] for p in files if p.startswith(UPSTREAM_FOLDER + "/"))
    files[f"{UPSTREAM_FOLDER}/kustomization.yaml"] = [kustomization(
        shared, "The upstream roots every cluster syncs, one file per upstream repository.")]
    # kustomize-controller builds a cluster's folder as a kustomization of its YAML files and
    # of each subfolder holding a kustomization.yaml: this one brings in the shared folder,
    # so the cluster's own Kustomization (flux-system) stays the owner of these objects.
    files[f"clusters/{cluster}/upstream/kustomization.yaml"] = [kustomization(
        [f"../../../{UPSTREAM_FOLDER}"], "The upstream roots, shared by every cluster.")]


@hookimpl
def rlgen_readme(ctx):
    return [
        "## Sync: Flux\n"
        f"Bootstrap Flux on the cluster with this repository and the path `clusters/{ctx.spec.cluster}`:\n\n"
        "```sh\n"
        f"flux bootstrap git --url={ctx.spec.git_url} --branch={ctx.spec.git_branch} "
        f"--path=clusters/{ctx.spec.cluster}\n"
        "```\n\n"
        f"Flux then applies the Kustomizations of `clusters/{ctx.spec.cluster}/` in the order of *What syncs "
        "where* (each `dependsOn` the one before and waits for it to be ready), and prunes what is removed "
        "from Git."
    ]
