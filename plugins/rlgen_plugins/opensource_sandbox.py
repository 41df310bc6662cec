"""Sandbox plugin: the open-source OpenKruise agents operator and sandbox-manager,
installed from the upstream repository pinned to a tag."""
from __future__ import annotations

from rlgen.contributions import Option, PluginInfo, UpstreamSource
from rlgen.hookspecs import hookimpl

from rlgen_plugins import sandbox_common

# The MCP tool, its server list and its packages are the same for both sandbox plugins.
from rlgen_plugins.sandbox_common import (  # noqa: F401
    rlgen_config_files,
    rlgen_tools,
    rlgen_training_packages,
)

NAME = "opensource-sandbox"
UPSTREAM = "https://github.com/openkruise/agents"


def _split_image(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    return name, tag


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="sandbox",
        summary="OpenKruise agents operator + sandbox-manager from the upstream repository",
        options=(
            Option("tag", "openkruise/agents release whose kustomize roots are installed", "v0.3.0"),
            Option("controller_image", "Controller image built from that tag (upstream publishes none)",
                   "registry.example.com/openkruise/agent-sandbox-controller:v0.3.0"),
            Option("manager_image", "sandbox-manager image with the MCP endpoint",
                   "baicun-business-registry.cn-beijing.cr.aliyuncs.com/baicun-dev/sandbox:sandbox-manager-v12"),
            Option("envoy_image", "Envoy sidecar of the sandbox-manager (upstream floats v1.33-latest)",
                   "envoyproxy/envoy:v1.33.0"),
        ) + sandbox_common.OPTIONS,
    )


@hookimpl
def rlgen_check(ctx):
    return sandbox_common.verl_line_problem(ctx, NAME)


@hookimpl
def rlgen_upstream_sources(ctx):
    o = ctx.options(NAME)
    ns = ctx.spec.sandbox_namespace
    controller, controller_tag = _split_image(o["controller_image"])
    manager, manager_tag = _split_image(o["manager_image"])
    envoy, envoy_tag = _split_image(o["envoy_image"])
    return [
        UpstreamSource(
            "sandbox-operator", UPSTREAM, o["tag"], "config/default", ns,
            images=({"name": "agent-sandbox-controller", "newName": controller, "newTag": controller_tag},),
            comment="CRDs and the agent-sandbox controller; upstream's image is agent-sandbox-controller:latest.",
        ),
        UpstreamSource(
            "sandbox-manager", UPSTREAM, o["tag"], "config/sandbox-manager", ns,
            images=(
                {"name": "sandbox-manager", "newName": manager, "newTag": manager_tag},
                {"name": "envoyproxy/envoy", "newName": envoy, "newTag": envoy_tag},
            ),
            comment="The E2B sandbox manager, with an image that serves MCP (not yet upstream).",
        ),
    ]


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    return [
        sandbox_common.mcp_service(ctx, {"app.kubernetes.io/name": "sandbox-manager"}),
        sandbox_common.sandbox_set(ctx, o),
    ]


@hookimpl
def rlgen_readme(ctx):
    o = ctx.options(NAME)
    return [
        "## Sandbox: open-source OpenKruise agents\n"
        f"The sync engine installs `config/default` and `config/sandbox-manager` of {UPSTREAM} at "
        f"`{o['tag']}` into `{ctx.spec.sandbox_namespace}`. Upstream publishes no controller image: "
        "build it from that tag (`make docker-build`) and push it to the registry named in "
        f"`{NAME}.controller_image`. The sandbox-manager generates a random admin API key when "
        "none is given; the trainer reaches it inside the cluster only."
    ]
