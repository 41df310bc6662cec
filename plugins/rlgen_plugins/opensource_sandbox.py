"""Sandbox plugin: the open-source OpenKruise agents operator and sandbox-manager, installed
from the upstream repository at the versions of :mod:`rlgen_plugins._openkruise_pins`."""
from __future__ import annotations

from rlgen.plugin_api import (
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
            Option("manager_image", "sandbox-manager image with the MCP endpoint "
                   f"(default: <rlgen.registry>/sandbox-manager:{value('manager_tag')})", "", check=_image_error),
            Option("envoy_image", "Envoy sidecar of the sandbox-manager (upstream floats v1.33-latest)",
                   value("envoy_image"), check=_image_error),
        ) + _sandbox_common.OPTIONS,
    )


@hookimpl
def rlgen_check(ctx):
    return _sandbox_common.verl_line_problem(ctx, NAME)


def manager_image(ctx) -> str:
    return ctx.options(NAME)["manager_image"] or f"{ctx.spec.registry}/sandbox-manager:{value('manager_tag')}"


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
            comment=f"CRDs, the agent-sandbox controller and the Namespace {ns}; upstream's image is\n"
                    "agent-sandbox-controller:latest.",
        ),
        UpstreamSource(
            "sandbox-manager", REPO, tag, value("manager_root"), ns,
            images=(
                {"name": "sandbox-manager", "newName": manager, "newTag": manager_tag},
                {"name": "envoyproxy/envoy", "newName": envoy, "newTag": envoy_tag},
            ),
            patches=(manager_patch(ctx),),
            depends_on=("sandbox-operator",),
            comment=f"The E2B sandbox manager, built with the MCP server of openkruise/agents#165. Its root\n"
                    f"creates no Namespace: it waits for sandbox-operator, which creates {ns}. The patch puts\n"
                    "the admin key from a Secret in place of upstream's published one.",
        ),
    ]


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    return [
        _sandbox_common.mcp_service(ctx, {"app.kubernetes.io/name": "sandbox-manager"}, int(value("mcp_port"))),
        _sandbox_common.sandbox_set(ctx, o),
    ]


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(ADMIN_KEY_SECRET, ctx.spec.sandbox_namespace, (ADMIN_KEY,),
                      "admin API key of the E2B API and the MCP endpoint (a long random string)",
                      "the sandbox-manager Deployment (--e2b-admin-key)"),
            _sandbox_common.trainer_key_secret(ctx)]


@hookimpl
def rlgen_readme(ctx):
    ns = ctx.spec.sandbox_namespace
    commit = value("manager_commit")
    return [
        "## Sandbox: open-source OpenKruise agents\n"
        f"The sync engine installs `{value('operator_root')}` (CRDs, controller, Namespace `{ns}`) and then "
        f"`{value('manager_root')}` of {REPO} at `{value('tag')}`. The controller image is upstream's "
        f"`{ctx.options(NAME)['controller_image']}`. Upstream's sandbox-manager has no MCP endpoint yet: build "
        f"it from pull request #165 (commit `{commit[:8]}`) and push it as `{manager_image(ctx)}`:\n\n"
        "```sh\n"
        f"git clone {REPO}.git && cd agents && git fetch origin pull/165/head && git checkout {commit}\n"
        f"make docker-build-manager MANAGER_IMG={manager_image(ctx)} && docker push {manager_image(ctx)}\n"
        "```\n\n"
        f"Its admin key comes from the Secret `{ADMIN_KEY_SECRET}`, never from Git; upstream's own patch "
        "sets a published key, which the sync engine replaces. "
        + _sandbox_common.MCP_UNVERIFIED
    ]
