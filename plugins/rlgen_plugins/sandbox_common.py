"""What both sandbox plugins share: the MCP Service, the SandboxSet warm pool and the
trainer's MCP tool. They differ only in how the sandbox manager is installed and which pods
the Service selects, as the tutorial's two variants do."""
from __future__ import annotations

import json

from rlgen.contributions import ConfigFile, Layer, Option, Resource
from rlgen.hookspecs import hookimpl

#: Port of the MCP endpoint in the MCP-enabled sandbox-manager image; upstream sandbox-manager
#: has no MCP endpoint, so this is the tutorial's image's port, not an upstream default.
MCP_TARGET_PORT = 18082

OPTIONS = (
    Option("warm_pool", "Sandboxes kept ready (a bit above the expected burst)", 3, int,
           check=lambda v: None if v >= 0 else "must be >= 0"),
    Option("sandbox_image", "Code-interpreter image of each sandbox",
           "acs-image-test-01-registry.cn-hangzhou.cr.aliyuncs.com/e2b/code-interpreter:v1.6"),
    Option("runtime_image", "Agent runtime (envd) image copied into each sandbox",
           "registry-cn-hangzhou.ack.aliyuncs.com/acs/agent-runtime:v0.0.1"),
    Option("mcp_path", "HTTP path of the MCP endpoint of the sandbox-manager image", "/mcp"),
    Option("tool", "Sandbox tool the trainer may call", "run_code_once"),
)


def mcp_service(ctx, selector: dict) -> Resource:
    spec = ctx.spec
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": spec.mcp_service, "namespace": spec.sandbox_namespace},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            # MCP sessions are long-lived: keep a trainer on the manager replica it started with.
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "ports": [{"name": "mcp", "protocol": "TCP", "port": spec.mcp_port, "targetPort": MCP_TARGET_PORT}],
        },
    }
    return Resource(Layer.PLATFORM, "mcp-service.yaml", svc,
                    "The trainer's MCP tool calls the sandbox manager through this Service.\n"
                    "A Service selects pods of its own namespace only, so it lives beside the manager.")


def sandbox_set(ctx, options: dict) -> Resource:
    envd = {"name": "envd-volume", "mountPath": "/mnt/envd"}
    env = [{"name": "ENVD_DIR", "value": "/mnt/envd"}]
    sbs = {
        "apiVersion": "agents.kruise.io/v1alpha1",
        "kind": "SandboxSet",
        "metadata": {"name": "code-interpreter", "namespace": ctx.spec.namespace},
        "spec": {
            "replicas": options["warm_pool"],
            "template": {
                "spec": {
                    "initContainers": [{
                        "name": "agent-runtime",
                        "image": options["runtime_image"],
                        "imagePullPolicy": "IfNotPresent",
                        "env": env,
                        "volumeMounts": [envd],
                        # A native sidecar: copies envd, then keeps running beside the sandbox.
                        "restartPolicy": "Always",
                    }],
                    "containers": [{
                        "name": "sandbox",
                        "image": options["sandbox_image"],
                        "imagePullPolicy": "IfNotPresent",
                        "env": env,
                        "volumeMounts": [envd],
                        "lifecycle": {"postStart": {"exec": {"command": ["bash", "/mnt/envd/envd-run.sh"]}}},
                        # 49999 is the code interpreter's own server (envd listens on 49983).
                        "startupProbe": {
                            "httpGet": {"path": "/health", "port": 49999, "scheme": "HTTP"},
                            "initialDelaySeconds": 1, "periodSeconds": 2, "timeoutSeconds": 1,
                            "successThreshold": 1, "failureThreshold": 20,
                        },
                    }],
                    "terminationGracePeriodSeconds": 1,
                    "restartPolicy": "Always",
                    "volumes": [{"name": "envd-volume", "emptyDir": {}}],
                }
            },
        },
    }
    return Resource(Layer.PLATFORM, "sandboxset.yaml", sbs,
                    "Warm pool the sandbox manager hands out during rollouts.\n"
                    "No e2b.agents.kruise.io/should-init-envd annotation: upstream removed it; the\n"
                    "agent-runtime init container installs envd. terminationGracePeriodSeconds: 1\n"
                    "frees a used sandbox fast so the pool refills.")


def _options(ctx) -> dict:
    # Both sandbox plugins register these hooks; only the selected one is ever called.
    return ctx.options(ctx.plugins["sandbox"])


@hookimpl
def rlgen_config_files(ctx) -> list[ConfigFile]:
    return [mcp_config(ctx, _options(ctx))]


@hookimpl
def rlgen_tools(ctx) -> list[dict]:
    return [mcp_tool(ctx, _options(ctx))]


@hookimpl
def rlgen_training_packages(ctx) -> list[str]:
    return TRAINING_PACKAGES


def mcp_config(ctx, options: dict) -> ConfigFile:
    url = f"http://{ctx.spec.mcp_host}:{ctx.spec.mcp_port}{options['mcp_path']}"
    servers = {"mcpServers": {"sandbox": {"url": url}}}
    return ConfigFile(ctx.spec.mcp_config_key, json.dumps(servers, indent=2, sort_keys=True) + "\n")


def mcp_tool(ctx, options: dict) -> dict:
    return {
        "class_name": "verl.tools.mcp_search_tool.MCPSearchTool",
        "config": {"type": "mcp", "rate_limit": 120, "timeout": 120},
        "mcp": {
            "mcp_servers_config_path": ctx.spec.config_path(ctx.spec.mcp_config_key),
            "tool_selected_list": [options["tool"]],
        },
    }


#: verl 0.7's MCP tool imports fastmcp (2.x API), which verl's dependency images lack.
TRAINING_PACKAGES = ["fastmcp>=2.3,<3"]


def verl_line_problem(ctx, plugin: str):
    """MCPSearchTool and ``type: mcp`` exist only in verl 0.7.x (removed in 0.8.0)."""
    from rlgen.contributions import Problem

    if not ctx.spec.verl_version.startswith("0.7."):
        return [Problem(f"the MCP sandbox tool needs verl 0.7.x, not {ctx.spec.verl_version}", (plugin, "rlgen"))]
    return []
