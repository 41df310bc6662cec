"""Sync plugin: Flux Kustomizations per cluster, ordered infrastructure -> platform -> runs."""
from __future__ import annotations


from rlgen.plugin_api import (SECRETS_FOLDER, UPSTREAM_FOLDER, Document, Layer, Option, Patch, PluginInfo, SecretRef,
                              duration_error, hookimpl, in_mainland_china, is_example_host, registry_error,
                              tested_version)
from rlgen_plugins._sync_common import WEBHOOK_TOKEN_KEY, engine_patch, kustomization, repo_name

NAME = "flux"
FLUX_NAMESPACE = "flux-system"
#: The GitRepository that ``flux bootstrap`` creates for this repository.
BOOTSTRAP_SOURCE = {"kind": "GitRepository", "name": "flux-system"}
#: A health check expression (CEL): the object's Ready condition is True.
READY = "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
#: The runs' RayJobs are created by Flux and never applied again (kustomize-controller's
#: IfNotPresent, fluxcd/pkg ssa: an object that exists is skipped, still in the inventory, so
#: prune deletes it once its run is gone). A patch of the training base, not of the runs
#: Kustomization, so that rlgen render and validate show the RayJob as Flux applies it.
CREATE_ONLY = {"apiVersion": "ray.io/v1", "kind": "RayJob",
               "metadata": {"name": "any", "annotations": {"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"}}}
#: What ``flux bootstrap`` writes into ``clusters/<c>/flux-system/``: the two manifests it
#: (re)generates, and the kustomization it keeps when one exists.
BOOTSTRAP_MANIFESTS = ("gotk-components.yaml", "gotk-sync.yaml")
RECEIVER = "git-push"
RECEIVER_SECRET = "git-webhook-token"
#: notification-controller's Receiver type, the push event's name and why, by rlgen.git_host
#: (notification-controller's receiver handlers read a different header for each type).
RECEIVER_TYPES = {
    "github": ("github", "push", "The host signs each delivery with the token as GitHub does\n"
                                 "(X-Hub-Signature-256; rlgen.git_host=github)."),
    "gitlab": ("gitlab", "Push Hook", "The host sends the token itself as GitLab does\n"
                                      "(X-Gitlab-Token; rlgen.git_host=gitlab)."),
    "generic-hmac": ("generic-hmac", "", "Each delivery must carry X-Signature: sha256=<HMAC-SHA256 of\n"
                                         "the body with the token> (rlgen.git_host=generic-hmac)."),
}


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
            Option("requeue_dependency", "How soon a stage waiting for the one before it looks again "
                   "(kustomize-controller's --requeue-dependency, set at bootstrap)", "5s", check=duration_error),
            # Mainland China's clusters pull from ghcr.io unreliably: the team's mirror of Flux's
            # controller images, which flux bootstrap --registry installs them from.
            Option("image_registry", "Registry that serves Flux's controller images under their own names "
                   "(<registry>/source-controller:<tag>, a mirror of ghcr.io/fluxcd), e.g. "
                   "registry.cn-shanghai.aliyuncs.com/my-team-mirrors/fluxcd: flux bootstrap --registry; "
                   "empty: ghcr.io/fluxcd", "", check=_image_registry_error,
                   required_when=("rlgen.region", in_mainland_china)),
        ),
    )


def _image_registry_error(value: str) -> str | None:
    if not value:
        return None
    if problem := registry_error(value):
        return problem
    host = value.split("/")[0].split(":")[0]
    return f"'{host}' is a reserved example domain: nothing can be pulled from it" if is_example_host(host) else None


def _meta(name: str) -> dict:
    return {"name": name, "namespace": FLUX_NAMESPACE}


def _kustomization(name: str, path: str, source: dict, depends_on: list[str], interval: str, **spec) -> dict:
    body = {"interval": interval, "path": path, "prune": True, "sourceRef": source}
    if depends_on:
        body["dependsOn"] = [{"name": d} for d in depends_on]
    body.update(spec)
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": _meta(name), "spec": body}


def _receiver(ctx) -> Document:
    kind, event, why = RECEIVER_TYPES[ctx.spec.git_host]
    spec = {"type": kind, "secretRef": {"name": RECEIVER_SECRET},
            "resources": [{"apiVersion": "source.toolkit.fluxcd.io/v1", **BOOTSTRAP_SOURCE}]}
    if event:
        spec["events"] = [event]
    return Document({"apiVersion": "notification.toolkit.fluxcd.io/v1", "kind": "Receiver",
                     "metadata": _meta(RECEIVER), "spec": spec},
                    "The Git host's push webhook: Flux fetches this repository at once instead of at\n"
                    "its next poll, and the stages follow the new revision; only pushes count.\n"
                    + why + "\nThe URL path is in status.webhookPath (see the README).")


def _bootstrap_files(ctx) -> dict[str, list[Document]]:
    """Flux's own folder, laid out as ``flux bootstrap`` customization expects: its kustomization
    with the patch of kustomize-controller's arguments, and the two manifests bootstrap writes,
    empty until it does."""
    folder = f"clusters/{ctx.spec.cluster}/{FLUX_NAMESPACE}"
    requeue = ctx.options(NAME)["requeue_dependency"]
    doc = Document({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": list(BOOTSTRAP_MANIFESTS),
        "patches": [{"target": {"kind": "Deployment", "name": "kustomize-controller"},
                     "patch": "- op: add\n  path: /spec/template/spec/containers/0/args/-\n"
                              f"  value: --requeue-dependency={requeue}\n"}],
    }, "Flux's own components. flux bootstrap fills the two files it lists (empty until then)\n"
       "and keeps this file, installing the components with its patches.\n"
       f"After a push, a stage whose dependsOn is not ready at the new revision looks again after\n"
       f"--requeue-dependency ({requeue} here, 30s by default): each stage of the chain waits\n"
       "up to one such retry before a new run reaches the cluster.")
    return {f"{folder}/kustomization.yaml": [doc], **{f"{folder}/{name}": [] for name in BOOTSTRAP_MANIFESTS}}


@hookimpl
def rlgen_sync_files(ctx, stages):
    return {**_bootstrap_files(ctx), **_stage_files(ctx, stages),
            f"clusters/{ctx.spec.cluster}/{RECEIVER}.yaml": [_receiver(ctx)]}


# Each stage's Kustomization in its cluster's file, and the upstream roots it syncs first.
def _stage_files(ctx, stages) -> dict[str, list[Document]]:
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
                   "would block every later sync. Prune deletes the RayJob of a removed run; each\n"
                   "RayJob is created once (ssa: IfNotPresent, components/flux/training).")
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
    if stage.patches:
        extra["patches"] = extra.get("patches", []) + [engine_patch(p) for p in stage.patches]
        comment += "\nPatched with this cluster's own answers (rlgen.yaml cluster_options)."
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
def rlgen_patches(ctx):
    return [Patch(Layer.TRAINING, {"group": "ray.io", "kind": "RayJob"}, CREATE_ONLY, "rayjob-create-only",
                  "Flux creates each RayJob and never applies it again (ssa: IfNotPresent): Kueue writes\n"
                  "into an admitted RayJob, and Git's version applied over it would drop Kueue's part\n"
                  "(workerGroupSpecs is an atomic list). A changed run is a new RayJob name.")]


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(RECEIVER_SECRET, FLUX_NAMESPACE, (WEBHOOK_TOKEN_KEY,),
                      "the Git host's push webhook secret (a long random string, also entered at the Git host)",
                      f"Flux's Receiver {FLUX_NAMESPACE}/{RECEIVER}", engine_namespace=True)]


#: notification-controller's webhook port (its config/manager/deployment.yaml, port ``http-webhook``).
WEBHOOK_PORT = 9292
#: The pod label of notification-controller, which Flux's own ``allow-webhooks`` NetworkPolicy selects.
WEBHOOK_POD = {"app": "notification-controller"}


def _bootstrap(spec, image_registry: str) -> str:
    """``flux bootstrap git`` with the credentials its URL's scheme takes (flux2 v2.9.3
    cmd/flux/bootstrap_git.go): over HTTP(S) a token with --token-auth (without it flux turns the
    URL into SSH and makes a deploy key); over SSH a deploy key of the user's, --silent. With the
    team's mirror of Flux's images, ``--registry`` (cmd/flux/bootstrap.go)."""
    command = (f"flux bootstrap git --url={spec.git_url} --branch={spec.git_branch} "
               f"--path=clusters/{spec.cluster}" + (f" --registry={image_registry}" if image_registry else ""))
    if spec.git_url.startswith(("https://", "http://")):
        return ("Bootstrap authenticates with a token of the Git host (GitHub: a fine-grained personal access token "
                "for this repository with *Contents* read and write; GitLab: a project access token with "
                "`write_repository`), read from `GIT_PASSWORD` so that it stays out of your shell history "
                "(`read -rs GIT_PASSWORD && export GIT_PASSWORD`); bootstrap pushes with it and stores it in Secret "
                f"`{FLUX_NAMESPACE}/{FLUX_NAMESPACE}`, which source-controller pulls with:\n\n```sh\n"
                ': "${GIT_PASSWORD:?export GIT_PASSWORD: a token with read and write access to the repository}"\n'
                f"{command} --token-auth\ngit pull\n```\n\n"
                "Over SSH with a deploy key instead: the repository's `ssh://` URL and "
                "`--private-key-file=KEY --silent`, KEY being a private key whose public half the Git host holds "
                "as a deploy key with write access (without `--private-key-file`, bootstrap makes a key, prints it "
                "and waits until you add it).")
    key = f"flux-{spec.cluster}-deploy-key"
    return ("Bootstrap authenticates with a deploy key: make one, add its public half "
            f"(`{key}.pub`) at the Git host as a deploy key of this repository **with write access** (bootstrap "
            f"pushes Flux's manifests with it), then bootstrap; it stores the key in Secret "
            f"`{FLUX_NAMESPACE}/{FLUX_NAMESPACE}`, which source-controller pulls with:\n\n```sh\n"
            f"test -f {key} || ssh-keygen -q -t ed25519 -N '' -C {key} -f {key}\n"
            f"{command} --private-key-file={key} --silent\ngit pull\n```\n\n"
            "With a token instead: the repository's `https://` URL, `--token-auth` and the token in `GIT_PASSWORD` "
            "(without `--token-auth` an HTTPS URL is turned into SSH with a key bootstrap makes).")


def _images(mirror: str, region: str) -> str:
    """Where the cluster pulls Flux's own images from, when that is not ghcr.io/fluxcd."""
    if not mirror:
        return ""
    where = f"from {region}, in mainland China, ghcr.io is out of reach or slow" if in_mainland_china(region) \
        else "the team's mirror"
    return (f"Flux's controller images come from `{mirror}` (`flux.image_registry`; {where}): bootstrap's "
            f"`--registry` writes `{mirror}/<controller>` into `gotk-components.yaml` in place of "
            "`ghcr.io/fluxcd/<controller>`, the tags unchanged. Mirror each controller image of Flux "
            f"{tested_version('flux-cli')} there first, under the same name and tag (`flux install --export "
            "| grep image:` lists them; `crane copy` copies one).\n\n")


def _exposed_receiver() -> str:
    """The receiver exposed on ACK: a LoadBalancer Service (a CLB), and the NetworkPolicy that
    admits its deliveries, which Flux's own allow-webhooks (pods of any namespace only) drops."""
    return (
        "On ACK, a LoadBalancer Service makes a Classic Load Balancer (CLB) for it. Flux installs NetworkPolicies "
        f"in `{FLUX_NAMESPACE}` (`flux bootstrap --network-policy`, on by default): `allow-webhooks` admits "
        "notification-controller's pods from pods of any namespace only, so a delivery that reaches the pod from "
        "outside the cluster (a CLB keeps the client's address with `externalTrafficPolicy: Local`, and Terway "
        "delivers it to the pod's own address) is dropped; the second object admits the webhook port from any "
        "address:\n\n```sh\n"
        "kubectl apply -f - <<'EOF'\n"
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: webhook-receiver-public\n"
        f"  namespace: {FLUX_NAMESPACE}\n  annotations:\n"
        "    service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type: internet\n"
        "spec:\n  type: LoadBalancer\n  externalTrafficPolicy: Local\n"
        f"  selector:\n    app: {WEBHOOK_POD['app']}\n"
        "  ports:\n    - name: http\n      port: 80\n      targetPort: http-webhook\n"
        "---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n"
        f"  name: allow-webhook-receiver-from-outside\n  namespace: {FLUX_NAMESPACE}\n"
        f"spec:\n  podSelector:\n    matchLabels:\n      app: {WEBHOOK_POD['app']}\n"
        "  policyTypes: [Ingress]\n  ingress:\n    - from:\n        - ipBlock:\n            cidr: 0.0.0.0/0\n"
        f"      ports:\n        - port: {WEBHOOK_PORT}\n          protocol: TCP\nEOF\n"
        f"kubectl -n {FLUX_NAMESPACE} get service webhook-receiver-public "
        "-o jsonpath='{.status.loadBalancer.ingress[0].ip}'\n```\n\n"
        "The address it prints is `<the exposed address>` below (`http://`: the token signs each delivery, "
        "but for HTTPS put an ALB Ingress with your certificate in front instead, its rule to Service "
        "`webhook-receiver` port 80, and keep the NetworkPolicy).")


@hookimpl
def rlgen_readme(ctx):
    o = ctx.options(NAME)
    return [
        "## Sync: Flux\n"
        f"Bootstrap Flux {tested_version('flux-cli')} (the release rlgen's tests run: install that `flux` CLI) on the "
        f"cluster with this repository and the path `clusters/{ctx.spec.cluster}`. "
        + _bootstrap(ctx.spec, o["image_registry"]) + "\n\n" + _images(o["image_registry"], ctx.spec.region)
        + f"Bootstrap commits Flux's components and sync objects to `{ctx.spec.git_branch}` "
        f"(`clusters/{ctx.spec.cluster}/{FLUX_NAMESPACE}/`) and pushes them: `git pull` brings them into your "
        "clone, so that your next push builds on them.\n\n"
        f"Flux then applies the Kustomizations of `clusters/{ctx.spec.cluster}/` in the order of *What syncs "
        "where* (each `dependsOn` the one before and waits for it to be ready), and prunes what is removed "
        "from Git.\n\n"
        "### Sync on push\n"
        "Flux fetches this repository every minute on its own; the push webhook makes a merge reach the "
        f"cluster at once. `clusters/{ctx.spec.cluster}/{RECEIVER}.yaml` is the Receiver the webhook calls "
        "(notification-controller, which `flux bootstrap` installs). Expose notification-controller's "
        f"webhook port to the Git host. " + _exposed_receiver() + "\n\nThen read the Receiver's path once it is "
        "ready:\n\n"
        "```sh\n"
        f"kubectl -n {FLUX_NAMESPACE} get receiver {RECEIVER} -o jsonpath='{{.status.webhookPath}}'\n"
        "```\n\n"
        f"At the Git host, add a push webhook to {ctx.spec.git_url}: URL `https://<the exposed address>` "
        f"followed by that path, content type `application/json`, secret: the value of "
        f"`{RECEIVER_SECRET}` (key `{WEBHOOK_TOKEN_KEY}`, see *Secrets*). "
        + _host_step(ctx.spec.git_host) + "\n\n"
        "After the fetch, a stage whose `dependsOn` is not yet at the new revision looks again after "
        f"kustomize-controller's `--requeue-dependency`: {o['requeue_dependency']} here (`flux.requeue_dependency`), "
        "30 s unless set. "
        f"`clusters/{ctx.spec.cluster}/{FLUX_NAMESPACE}/kustomization.yaml` sets it: `flux bootstrap` keeps that "
        "file, fills the two empty files it lists with Flux's components and sync objects, and installs the "
        "components with the file's patches (Flux's *bootstrap customization*)."
    ]


def _host_step(host: str) -> str:
    return {
        "github": "On GitHub (or GitHub Enterprise, Gitea): *Settings → Webhooks → Add webhook*, event "
                  "*Just the push event*.",
        "gitlab": "On GitLab: *Settings → Webhooks*, trigger *Push events*; the secret goes in *Secret token*.",
        "generic-hmac": "The Receiver expects the signature `X-Signature: sha256=<HMAC-SHA256 of the body>`; "
                        "a host that signs otherwise takes `rlgen update --set rlgen.git_host=github` "
                        "(or `gitlab`).",
    }[host]
