"""Sync plugin: Argo CD Applications per stage under one app-of-apps root, ordered by sync
waves in the same order as Flux's dependsOn (infrastructure -> platform -> runs)."""
from __future__ import annotations

import copy

from rlgen.plugin_api import UPSTREAM_FOLDER, Document, PluginInfo, Problem, SecretRef, hookimpl
from rlgen_plugins._sync_common import WEBHOOK_TOKEN_KEY, engine_patch, kustomization, repo_name

NAME = "argo"
#: The Argo CD release the README installs: the one rlgen's control-plane tests build and run
#: (toolchain/argocd/go.mod), whose behaviour docs/upstream.md records.
ARGOCD_RELEASE = "v3.6.1"
#: Upstream's install manifest of that release (docs/getting_started.md, pinned to the tag).
INSTALL_MANIFEST = f"https://raw.githubusercontent.com/argoproj/argo-cd/{ARGOCD_RELEASE}/manifests/install.yaml"
ARGOCD_NAMESPACE = "argocd"
PROJECT = "rlgen"
#: The runs' own AppProject: a merge to runs/ reaches RayJobs and ConfigMaps of the runs
#: namespace only (namespaceResourceWhitelist, no cluster-scoped kind, one destination).
RUNS_PROJECT = "rlgen-runs"
RUN_KINDS = (("ray.io", "RayJob"), ("", "ConfigMap"))
IN_CLUSTER = "https://kubernetes.default.svc"
ROOT = "root"
#: Removing a child Application from Git deletes what it deployed, as Flux's prune does;
#: objects marked Delete=false (namespace, volumes) stay.
CASCADE = "resources-finalizer.argocd.argoproj.io"
#: An Application with this annotation set to "false" never holds up the root's sync: the
#: Application health check below reports it Healthy to the root, whatever its own health.
HEALTH_GATE = "rlgen.io/health-gate"
#: Argo CD never starts another automated sync of a revision whose last sync failed
#: (controller/appcontroller.go); without a policy it retries 5 times within ~2.5 minutes.
#: Unlimited retries, backing off to 10 minutes, wait out what arrives late (a Secret made by
#: hand, an operator's CRDs); refresh: a retry takes the newest commit, so a fix pushed
#: meanwhile is what the next attempt applies.
RETRY = {"limit": -1, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}, "refresh": True}

#: The push webhook's secret: a Secret of its own, which argocd-secret's webhook key names as
#: ``$<secret>:<key>``; Argo CD resolves such a reference only in Secrets with this label.
WEBHOOK_SECRET = "git-webhook-token"
PART_OF_ARGOCD = ("app.kubernetes.io/part-of", "argocd")
#: The argocd-secret key of the Git host's webhook secret, by rlgen.git_host; Argo CD has no
#: generic HMAC format (rlgen_check refuses it).
WEBHOOK_KEYS = {"github": "webhook.github.secret", "gitlab": "webhook.gitlab.secret"}

#: Argo CD has no health check for ray.io kinds; without one a RayJob is never Degraded.
RAYJOB_HEALTH = """\
-- KubeRay's status.jobDeploymentStatus: Complete and Failed are terminal; a Ray job that
-- was stopped also ends as Complete, so only SUCCEEDED counts as healthy.
hs = {status = "Progressing", message = "Waiting for KubeRay"}
if obj.status == nil or obj.status.jobDeploymentStatus == nil or obj.status.jobDeploymentStatus == "" then
  return hs
end
local deployment = obj.status.jobDeploymentStatus
local job = obj.status.jobStatus or ""
hs.message = deployment
if job ~= "" then
  hs.message = hs.message .. " (Ray job " .. job .. ")"
end
if obj.status.message ~= nil and obj.status.message ~= "" then
  hs.message = hs.message .. ": " .. obj.status.message
end
if deployment == "Complete" and job == "SUCCEEDED" then
  hs.status = "Healthy"
elseif deployment == "Complete" or deployment == "Failed" or deployment == "ValidationFailed" then
  hs.status = "Degraded"
elseif deployment == "Suspended" then
  hs.status = "Suspended"
end
return hs
"""

#: Argo CD 1.8 dropped the health of Applications; sync waves of an app-of-apps only wait
#: for a stage to be healthy with this check back (Argo CD's documented snippet), except for
#: an Application marked rlgen.io/health-gate: "false" (the runs: a RayJob is Progressing for a
#: whole training run and Degraded for good once a failed run is kept, so the root's sync would
#: never finish). Its own page still shows its real health. Unlike the snippet, a stage is
#: healthy only once synced: one whose manifests fail to build has no resources and so reads
#: Healthy, and the next wave would start on a stage never applied (seen on the control plane).
APPLICATION_HEALTH = """\
hs = {}
hs.status = "Progressing"
hs.message = ""
if obj.status ~= nil then
  if obj.status.health ~= nil then
    hs.status = obj.status.health.status
    if obj.status.health.message ~= nil then
      hs.message = obj.status.health.message
    end
  end
  local sync = obj.status.sync and obj.status.sync.status or "Unknown"
  if hs.status == "Healthy" and sync ~= "Synced" then
    hs.status = "Progressing"
    hs.message = "healthy but " .. sync .. ", not synced yet"
  end
end
if obj.metadata.annotations ~= nil and obj.metadata.annotations["%s"] == "false" then
  hs.message = "not a sync gate, own health " .. hs.status
  hs.status = "Healthy"
end
return hs
""" % HEALTH_GATE


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="sync",
        summary="Argo CD: app-of-apps, one Application per stage, sync waves in order, prune and self-heal",
    )


def _metadata(name: str, wave: int, sync_options: str = "", **extra) -> dict:
    annotations = {"argocd.argoproj.io/sync-wave": str(wave)}
    if sync_options:
        annotations["argocd.argoproj.io/sync-options"] = sync_options
    return {"name": name, "namespace": ARGOCD_NAMESPACE, "annotations": annotations, **extra}


def _sync_policy() -> dict:
    return {"automated": {"prune": True, "selfHeal": True}, "retry": copy.deepcopy(RETRY)}


def _application(name: str, wave: int, source: dict, namespace: str, project: str = PROJECT) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": _metadata(name, wave, finalizers=[CASCADE]),
        "spec": {
            "project": project,
            "source": source,
            "destination": {"server": IN_CLUSTER, "namespace": namespace},
            "syncPolicy": _sync_policy(),
        },
    }


def _kustomize_image(image: dict) -> str:
    return f"{image['name']}={image.get('newName', image['name'])}:{image['newTag']}"


def _upstream_source(up) -> dict:
    source = {"repoURL": up.url, "targetRevision": up.tag, "path": up.path}
    kustomize = {}
    if up.images:
        kustomize["images"] = [_kustomize_image(i) for i in up.images]
    if up.patches:
        # Argo CD's kustomize.patches take the same entries as a kustomization's patches.
        kustomize["patches"] = [engine_patch(p) for p in up.patches]
    if kustomize:
        source["kustomize"] = kustomize
    return source


def _settings() -> dict:
    # A partial argocd-cm applied server-side: the root owns these keys only, the rest stays
    # with whoever installed Argo CD, and the ConfigMap is never pruned or deleted with the root.
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata("argocd-cm", -1, "ServerSideApply=true,Prune=false,Delete=false",
                              labels={"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"}),
        "data": {
            "resource.customizations.health.argoproj.io_Application": APPLICATION_HEALTH,
            "resource.customizations.health.ray.io_RayJob": RAYJOB_HEALTH,
        },
    }


def _runs_project(ctx) -> dict:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": _metadata(RUNS_PROJECT, -1),
        "spec": {
            "description": "The runs: RayJobs and their ConfigMaps in the runs namespace, nothing else",
            "sourceRepos": [ctx.spec.git_url],
            "destinations": [{"server": IN_CLUSTER, "namespace": ctx.spec.namespace}],
            # Empty: no cluster-scoped kind; listed: only these namespaced kinds (Argo CD refuses the rest).
            "clusterResourceWhitelist": [],
            "namespaceResourceWhitelist": [{"group": group, "kind": kind} for group, kind in RUN_KINDS],
        },
    }


def _root(ctx, repos: list[str]) -> list[dict]:
    cluster_dir = f"clusters/{ctx.spec.cluster}"
    project = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": _metadata(PROJECT, -1),
        "spec": {
            "description": "This repository and the upstream sources it pins",
            "sourceRepos": repos,
            "destinations": [{"server": IN_CLUSTER, "namespace": "*"}],
            # CRDs, PersistentVolumes, Namespaces and AlbConfigs are cluster-scoped.
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }
    # The root syncs its own file: while it syncs it is not Synced, so by the Application health
    # check it would wait on itself for ever. It gates nothing but its own sync.
    root = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": _metadata(ROOT, -1),
        "spec": {
            "project": PROJECT,
            "source": {"repoURL": ctx.spec.git_url, "targetRevision": ctx.spec.git_branch, "path": cluster_dir},
            "destination": {"server": IN_CLUSTER, "namespace": ARGOCD_NAMESPACE},
            "syncPolicy": _sync_policy(),
        },
    }
    root["metadata"]["annotations"][HEALTH_GATE] = "false"
    return [project, _runs_project(ctx), root]


@hookimpl
def rlgen_sync_files(ctx, stages):
    spec = ctx.spec
    cluster_dir = f"clusters/{spec.cluster}"
    files: dict[str, list[Document]] = {}
    repos, wave = [spec.git_url], 0
    for stage in stages:
        for up in stage.upstream:
            # One wave per upstream source, in order: a source that needs another one (the
            # Namespace sandbox-operator creates) syncs only once that one is healthy.
            app = _application(up.name, wave, _upstream_source(up), up.namespace)
            app["metadata"]["annotations"].update(up.annotations())
            files.setdefault(f"{UPSTREAM_FOLDER}/{repo_name(up.url)}.yaml", []).append(Document(app, up.comment))
            wave += 1
            if up.url not in repos:
                repos.append(up.url)
        if stage.path:
            source = {"repoURL": spec.git_url, "targetRevision": spec.git_branch, "path": stage.path.removeprefix("./")}
            project = RUNS_PROJECT if stage.name == "runs" else PROJECT
            app = _application(stage.name, wave, _patched(source, stage.patches), spec.namespace, project)
            comment = "Patched with this cluster's own answers (rlgen.yaml cluster_options)." if stage.patches else ""
            if not stage.wait:
                app["metadata"]["annotations"][HEALTH_GATE] = "false"
                why = ("a RayJob stays\nProgressing for the whole run" if stage.name == "runs" else
                       "an optional Secret\nnot stored yet is Degraded and holds back nothing")
                comment = (f"The root's sync does not wait for this one to be healthy: {why} (see the\n"
                           "Application health check in argocd-cm).")
            files[f"{cluster_dir}/{stage.name}.yaml"] = [Document(app, comment)]
            wave += 1
    files[f"{cluster_dir}/{ROOT}.yaml"] = [Document(d) for d in _root(ctx, repos)]
    files[f"{cluster_dir}/argocd-cm.yaml"] = [Document(_settings())]
    shared = sorted(p.rpartition("/")[2] for p in files if p.startswith(UPSTREAM_FOLDER + "/"))
    own = sorted(p.rpartition("/")[2] for p in files if p.startswith(cluster_dir + "/"))
    if shared:
        files[f"{UPSTREAM_FOLDER}/kustomization.yaml"] = [kustomization(
            shared, "The upstream roots every cluster syncs, one file per upstream repository.")]
        own.append(f"../../{UPSTREAM_FOLDER}")
    # The root syncs this folder with kustomize, which also brings in the shared upstream
    # roots: the root stays the owner of every Application, as when it read the folder's files.
    files[f"{cluster_dir}/kustomization.yaml"] = [kustomization(own, "What the root Application syncs.")]
    return files


@hookimpl
def rlgen_check(ctx):
    # Argo CD's webhook handler parses GitHub, GitLab, Bitbucket, Gogs and Azure DevOps
    # payloads, each checked with its own header; none is an HMAC in X-Signature.
    if ctx.spec.git_host in WEBHOOK_KEYS:
        return []
    return [Problem(f"Argo CD's push webhook reads no rlgen.git_host={ctx.spec.git_host} signature: "
                    "set rlgen.git_host=github or gitlab, as the Git host signs", (NAME, "rlgen"))]


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(WEBHOOK_SECRET, ARGOCD_NAMESPACE, (WEBHOOK_TOKEN_KEY,),
                      "the Git host's push webhook secret (a long random string, also entered at the Git host)",
                      f"Argo CD's webhook (argocd-secret names it in {WEBHOOK_KEYS[ctx.spec.git_host]})",
                      labels=(PART_OF_ARGOCD,), engine_namespace=True)]


def _webhook_readme(ctx) -> str:
    host = ctx.spec.git_host
    key = WEBHOOK_KEYS[host]
    reference = f"${WEBHOOK_SECRET}:{WEBHOOK_TOKEN_KEY}"
    where = {
        "github": "On GitHub (or GitHub Enterprise, Gitea): *Settings → Webhooks → Add webhook*, event "
                  "*Just the push event*.",
        "gitlab": "On GitLab: *Settings → Webhooks*, trigger *Push events*; the secret goes in *Secret token*.",
    }[host]
    return (
        "### Sync on push\n"
        "Argo CD looks at this repository every three minutes on its own; the push webhook makes a merge "
        f"reach the cluster at once. Once per cluster, point `argocd-secret`'s `{key}` at the Secret "
        f"`{WEBHOOK_SECRET}` (see *Secrets*; Argo CD reads it because it is labelled "
        f"`{'='.join(PART_OF_ARGOCD)}`). The value is a reference, not the secret:\n\n"
        "```sh\n"
        f"kubectl -n {ARGOCD_NAMESPACE} patch secret argocd-secret --type merge "
        f"-p '{{\"stringData\": {{\"{key}\": \"{reference}\"}}}}'\n"
        "```\n\n"
        f"At the Git host, add a push webhook to {ctx.spec.git_url}: URL "
        "`https://<argocd-server's address>/api/webhook`, content type `application/json`, secret: the value "
        f"of `{WEBHOOK_SECRET}` (key `{WEBHOOK_TOKEN_KEY}`). " + where
    )


def _patched(source: dict, patches) -> dict:
    """A stage's source with this cluster's own patches (Argo CD's ``kustomize.patches``)."""
    return {**source, "kustomize": {"patches": [engine_patch(p) for p in patches]}} if patches else source


def _install_manifest(spec) -> str:
    """The README's apply of upstream's manifest: by URL, or in mainland China (where
    raw.githubusercontent.com is out of reach) from a clone of the team's mirror at the tag."""
    apply = f"kubectl apply -n {ARGOCD_NAMESPACE} --server-side --force-conflicts -f "
    if not spec.mainland_china:
        return apply + INSTALL_MANIFEST + "\n"
    repo = spec.mirrored("https://github.com/argoproj/argo-cd")
    return (f"git clone --quiet --depth 1 --branch {ARGOCD_RELEASE} {repo}.git argo-cd-{ARGOCD_RELEASE}\n"
            f"{apply}argo-cd-{ARGOCD_RELEASE}/manifests/install.yaml\n")


@hookimpl
def rlgen_readme(ctx):
    spec = ctx.spec
    cluster_dir = f"clusters/{spec.cluster}"
    return [
        "## Sync: Argo CD\n"
        f"Install Argo CD {ARGOCD_RELEASE} (the release rlgen is tested with) in namespace `{ARGOCD_NAMESPACE}` "
        "from upstream's manifest, server-side as upstream's instructions say: its CRDs are too large for a "
        "client-side apply, and an `argocd-cm` that still carries a client-side apply's annotation would keep "
        f"`{cluster_dir}/argocd-cm.yaml` (below) OutOfSync. Then wait for the CRDs the root's kinds need:\n\n"
        "```sh\n"
        f"kubectl create namespace {ARGOCD_NAMESPACE} --dry-run=client -o yaml | kubectl apply -f -\n"
        + _install_manifest(spec) +
        "kubectl wait --for=condition=Established --timeout=60s "
        "crd/applications.argoproj.io crd/appprojects.argoproj.io\n"
        "```\n\n"
        f"Give it read access to {spec.git_url}, then apply the root once; from then on Argo CD manages the "
        "root too:\n\n"
        "```sh\n"
        f"kubectl apply -n {ARGOCD_NAMESPACE} -f {cluster_dir}/{ROOT}.yaml\n"
        "```\n\n"
        f"The root Application syncs `{cluster_dir}/`: one Application per stage and upstream source, with "
        "`argocd.argoproj.io/sync-wave` in the order of *What syncs where* (each upstream source its own "
        "wave), automated prune and self-heal, and a retry without limit (backing off to 10 minutes, each "
        "attempt on the newest commit): Argo CD never re-attempts a failed automated sync of the same "
        "revision on its own, so a wave that fails because something arrived late (a Secret created by "
        "hand) would otherwise stay failed. A wave starts when the previous one is healthy, except "
        "`runs`: its RayJobs stay Progressing for a whole training run, so the root does not wait for "
        "it (look at the `runs` Application itself for the state of a run); "
        f"that needs the Application health check that `{cluster_dir}/argocd-cm.yaml` adds to Argo CD's own "
        "`argocd-cm`, together with a RayJob health check (Argo CD has none for `ray.io`). They live beside "
        "the root because they configure Argo CD itself and must exist "
        "before the first wave waits. The file holds only these two keys and is applied server-side, so the "
        "rest of `argocd-cm` stays with whoever installed Argo CD, and it is never pruned. RayJobs sync with "
        "a plain apply: each run has its own name, so a new run is a new RayJob and never edits a started one.\n\n"
        + _webhook_readme(ctx)
    ]
