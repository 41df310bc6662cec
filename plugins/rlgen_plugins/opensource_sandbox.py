"""Sandbox plugin: the open-source OpenKruise agents operator and sandbox-manager, installed
from the upstream repository at the versions of :mod:`rlgen_plugins._openkruise_pins`."""
from __future__ import annotations

from rlgen.plugin_api import (
    ImageBuild,
    Option,
    PluginInfo,
    SecretRef,
    UpstreamSource,
    hookimpl,
    image_host,
    image_reference_error,
    is_example_host,
)

from rlgen_plugins import _sandbox_common
from rlgen_plugins._openkruise_pins import MANAGER_ARGS_AT_TAG, REPO, value

#: Where #165 branches from, and how far behind the tag it is (openkruise/agents history).
BASE_COMMIT = "edaad73c72867e7ae63874e8eb955b75170c63f8"
BASE_BEHIND = 30

# The MCP tool, its server list and its packages are the same for both sandbox plugins.
from rlgen_plugins._sandbox_common import (  # noqa: F401
    rlgen_config_files,
    rlgen_patches,
    rlgen_tools,
    rlgen_training_packages,
)

NAME = "opensource-sandbox"
ADMIN_KEY_SECRET = _sandbox_common.ADMIN_KEY_SECRET
ADMIN_KEY = _sandbox_common.ADMIN_KEY
#: Environment variable the admin key reaches the manager through: Kubernetes expands
#: $(VAR) in args from the container's env, and the manager reads the key from a flag only.
ADMIN_KEY_ENV = "E2B_ADMIN_KEY"


def _image_error(image: str) -> str | None:
    if image and (problem := image_reference_error(image)):
        return problem
    if image and is_example_host(image_host(image)):
        return f"'{image}' is on a reserved example domain: nothing can be pulled from it"
    return None


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="sandbox",
        summary="OpenKruise agents operator + sandbox-manager from the upstream repository",
        options=(
            Option("controller_image", "agent-sandbox-controller image (upstream publishes it on Docker Hub)",
                   value("controller_image"), check=_image_error),
            Option("manager_image", "sandbox-manager image with the MCP endpoint (default: "
                   f"<rlgen.registry>/sandbox-manager:{value('manager_tag')}-<hash of images/sandbox-manager>, "
                   "which the images workflow builds)", "", check=_image_error),
            Option("envoy_image", "Envoy sidecar of the sandbox-manager (upstream floats v1.33-latest)",
                   value("envoy_image"), check=_image_error),
        ) + _sandbox_common.OPTIONS,
    )


def manager_build(ctx) -> ImageBuild | None:
    """The manager image this repository builds: ``images/sandbox-manager`` tagged with the hash
    of its files, so a new build script (another commit, another patch line) is a new tag and
    the cluster pulls the new image. None when the user names the image
    (``opensource-sandbox.manager_image``): theirs is used as it is."""
    if ctx.options(NAME)["manager_image"]:
        return None
    return ImageBuild.of({path: text.encode() for path, text in manager_files(ctx).items()}, MANAGER_CONTEXT,
                         f"{ctx.spec.registry}/sandbox-manager", value("manager_tag"))


def manager_image(ctx) -> str:
    return ctx.options(NAME)["manager_image"] or manager_build(ctx).ref


def _split_image(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    return name, tag


def manager_patch(ctx) -> dict:
    """JSON 6902 ops on upstream's Deployment: the admin key from a Secret instead of the
    published ``some-api-key``, and the MCP server on. ``test`` ops stop the build when
    upstream's args move, instead of replacing the wrong one."""
    container = "/spec/template/spec/containers/0"
    ops = [{"op": "test", "path": f"{container}/args/{i}", "value": v} for i, v in MANAGER_ARGS_AT_TAG.items()]
    ops += [
        {"op": "replace", "path": f"{container}/args/7", "value": f"--e2b-admin-key=$({ADMIN_KEY_ENV})"},
        {"op": "add", "path": f"{container}/args/-", "value": "--mcp-enabled=true"},
        {"op": "add", "path": f"{container}/args/-", "value": f"--mcp-port={value('mcp_port')}"},
        {"op": "add", "path": f"{container}/env/-", "value": {
            "name": ADMIN_KEY_ENV,
            "valueFrom": {"secretKeyRef": {"name": ADMIN_KEY_SECRET, "key": ADMIN_KEY}}}},
        {"op": "add", "path": f"{container}/ports/-", "value": {"containerPort": int(value("mcp_port")),
                                                              "name": "http-mcp"}},
    ]
    return {"target": {"kind": "Deployment", "name": "sandbox-manager"}, "patch": ops}


#: Upstream's root applies an nginx Ingress for placeholder hosts (replace.with.your.domain),
#: with a TLS Secret nobody creates; the trainer reaches the manager through its Service.
INGRESS_DELETE = {
    "target": {"kind": "Ingress", "name": "sandbox-manager"},
    "patch": "$patch: delete\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n"
             "  name: sandbox-manager\n  namespace: sandbox-system\n",
}


#: What the sandboxes stand on: upstream's CRDs (deleting one deletes every SandboxSet of its kind)
#: and the Namespace of the manager and its admin key. Removing this root (a swap to the ACK
#: add-ons, which serve the same CRDs) must leave them: Flux's garbage collection of a removed
#: Kustomization skips objects marked prune: disabled (kustomize-controller v1.9.4
#: ``deleteObjects``), Argo CD skips Prune=false,Delete=false. The name is a placeholder: the
#: target selects every object of the kind.
KEEP = tuple({
    "target": {"kind": kind},
    "patch": f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: kept\n  annotations:\n"
             "    kustomize.toolkit.fluxcd.io/prune: disabled\n"
             "    argocd.argoproj.io/sync-options: Prune=false,Delete=false\n",
} for kind, api in (("CustomResourceDefinition", "apiextensions.k8s.io/v1"), ("Namespace", "v1")))


@hookimpl
def rlgen_upstream_sources(ctx):
    o = ctx.options(NAME)
    ns = ctx.spec.sandbox_namespace
    controller, controller_tag = _split_image(o["controller_image"])
    manager, manager_tag = _split_image(manager_image(ctx))
    envoy, envoy_tag = _split_image(o["envoy_image"])
    tag = value("tag")
    return [
        UpstreamSource(
            "sandbox-operator", REPO, tag, value("operator_root"), ns,
            images=({"name": "agent-sandbox-controller", "newName": controller, "newTag": controller_tag},),
            creates_namespace=True,
            patches=KEEP,
            comment=f"CRDs, the agent-sandbox controller and the Namespace {ns}; upstream's image is\n"
                    "agent-sandbox-controller:latest. The CRDs and the Namespace are never deleted by the\n"
                    "sync (they hold the sandboxes): a swap to the ACK add-ons keeps them.",
        ),
        UpstreamSource(
            "sandbox-manager", REPO, tag, value("manager_root"), ns,
            images=(
                {"name": "sandbox-manager", "newName": manager, "newTag": manager_tag},
                {"name": "envoyproxy/envoy", "newName": envoy, "newTag": envoy_tag},
            ),
            patches=(manager_patch(ctx), INGRESS_DELETE),
            depends_on=("sandbox-operator",),
            comment=f"The E2B sandbox manager, built with the MCP server of openkruise/agents#165. Its root\n"
                    f"creates no Namespace: it waits for sandbox-operator, which creates {ns}. The patch puts\n"
                    "the admin key from a Secret in place of upstream's published one; the second deletes\n"
                    "upstream's Ingress for placeholder hosts.",
        ),
    ]


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    return [
        _sandbox_common.mcp_service(ctx, {"app.kubernetes.io/name": "sandbox-manager"}, int(value("mcp_port"))),
        _sandbox_common.sandbox_set(ctx, o),
        *_sandbox_common.isolation(ctx),
    ]


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(ADMIN_KEY_SECRET, ctx.spec.sandbox_namespace, (ADMIN_KEY,),
                      "admin API key of the E2B API and the MCP endpoint (a long random string)",
                      "the sandbox-manager Deployment (--e2b-admin-key)"),
            _sandbox_common.trainer_key_secret(ctx)]


MANAGER_CONTEXT = "images/sandbox-manager"
BUILD_SCRIPT = f"{MANAGER_CONTEXT}/build.sh"
#: The key store logs every key it creates at Info, whatever -v says (openkruise/agents v0.3.0
#: and #165, pkg/servers/e2b/keys/secret.go): the build logs their ids instead.
KEY_LOG_EDITS = (
    ('"key", adminKey.Key)', '"id", adminKey.ID)'),
    ('"key", apiKey)', '"id", apiKey.ID)'),
)
KEY_LOG_FILE = "pkg/servers/e2b/keys/secret.go"


def build_script(repo: str = REPO) -> str:
    """The manager's build from ``repo`` (upstream's, or the team's mirror of it). It names no
    image: its tag is a hash of this text, so it takes the reference to push as its argument
    (images/build.sh passes the tag rlgen wrote)."""
    commit = value("manager_commit")
    seds = " ".join(f"-e 's/{old}/{new}/'" for old, new in KEY_LOG_EDITS)
    return f"""\
#!/bin/sh
# Builds the sandbox-manager this repository runs and pushes it as the reference given:
# openkruise/agents pull request #165 (the MCP server; no release has one) at {commit[:8]},
# with the key store logging key ids instead of the keys themselves: upstream logs the admin
# key and every new API key at Info, whatever -v is, so they would land in the cluster's logs.
# images/build.sh runs it with the reference rlgen tagged with a hash of this folder, which
# is why the tag is not written here.
#
#   sh images/sandbox-manager/build.sh REGISTRY/sandbox-manager:TAG
set -eu
image="${{1:?usage: sh {BUILD_SCRIPT} IMAGE_REFERENCE}}"
work="$(mktemp -d)"
git clone --quiet {repo}.git "$work/agents"
cd "$work/agents"
git fetch --quiet origin pull/165/head
git checkout --quiet {commit}
sed -i {seds} {KEY_LOG_FILE}
# Stop rather than build an image that still logs a key (upstream changed the lines).
if grep -n '"key",' {KEY_LOG_FILE}; then
  echo "the key store still logs keys: check {KEY_LOG_FILE}" >&2
  exit 1
fi
make docker-build-manager MANAGER_IMG="$image"
docker push "$image"
"""


def manager_files(ctx) -> dict[str, str]:
    return {BUILD_SCRIPT: build_script(ctx.spec.mirrored(REPO))}


@hookimpl
def rlgen_files(ctx):
    return manager_files(ctx)


@hookimpl
def rlgen_images(ctx):
    return [image] if (image := manager_build(ctx)) else []


@hookimpl
def rlgen_readme(ctx):
    ns = ctx.spec.sandbox_namespace
    commit = value("manager_commit")
    return [
        "## Sandbox: open-source OpenKruise agents\n"
        f"The sync engine installs `{value('operator_root')}` (CRDs, controller, Namespace `{ns}`) and then "
        f"`{value('manager_root')}` of {ctx.spec.mirrored(REPO)} at `{value('tag')}`. The controller image is upstream's "
        f"`{ctx.options(NAME)['controller_image']}`. Upstream's sandbox-manager has no MCP endpoint yet: build "
        f"it from pull request #165 (commit `{commit[:8]}`): `sh {BUILD_SCRIPT} {manager_image(ctx)}` builds "
        f"and pushes `{manager_image(ctx)}`, and makes the key store log key ids instead of the admin key and "
        "new API keys (upstream logs them at Info at any `-v`). "
        + (f"The tag ends in a hash of `{MANAGER_CONTEXT}`: `images/build.sh` lists it, so the images workflow "
           "builds it with the other images, and a new build script is a new tag the cluster pulls.\n\n"
           if manager_build(ctx) else "\n\n")
        + f"#165 branches from `{BASE_COMMIT[:8]}`, {BASE_BEHIND} commits before `{value('tag')}`, whose CRDs, RBAC and "
        f"controller the cluster runs: those commits add optional fields to the CRDs and three rules to the "
        "manager's RBAC, which the older manager leaves unused. #165 does not merge cleanly into "
        f"`{value('tag')}` (a conflict in `pkg/sandbox-manager/infra/interface.go`), so the build stays on "
        "#165's own base until upstream releases the MCP server.\n\n"
        f"Its admin key comes from the Secret `{ADMIN_KEY_SECRET}`, never from Git; upstream's own patch "
        "sets a published key, which the sync engine replaces. "
        + _sandbox_common.mcp_unverified(ctx) + _sandbox_common.isolation_note(ctx)
    ]
