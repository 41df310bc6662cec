"""The openkruise/agents versions that must agree, in one table: the tag whose kustomize roots
are installed, the images those roots run, and the flags the pinned sandbox-manager accepts.

Each row names the upstream source it was checked against. Upstream's sandbox-manager has no
MCP endpoint at any tag (v0.3.0 and master have none); it exists only in the open pull request
openkruise/agents#165. The manager image is therefore built from that pull request's head,
whose flag set contains every flag the v0.3.0 Deployment passes (the flags arrived in commit
1cecc1da, an ancestor of that head), plus the MCP ones. The tutorial's image
sandbox-manager-v12 predates 1cecc1da: it reads environment variables and would refuse the
v0.3.0 flags, so it is not used.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pin:
    value: str
    source: str


REPO = "https://github.com/openkruise/agents"

PINS = {
    "tag": Pin("v0.3.0", "openkruise/agents tag v0.3.0 = commit a4e640d23293a90f7b0053a7f4ad8cf5b16a4888"),
    "operator_root": Pin("config/default", "openkruise/agents@v0.3.0 config/default/kustomization.yaml "
                         "(creates Namespace sandbox-system)"),
    "manager_root": Pin("config/sandbox-manager", "openkruise/agents@v0.3.0 config/sandbox-manager/"
                        "kustomization.yaml (no Namespace; every object in sandbox-system)"),
    "controller_image": Pin("openkruise/agent-sandbox-controller:v0.3.0",
                            "openkruise/agents@v0.3.0 .github/workflows/docker-image-agent-sandbox-controller.yml "
                            "(pushes openkruise/agent-sandbox-controller:<ref name>)"),
    "manager_commit": Pin("136236a8095d93a02416246ba7f3f38a90f8bf76",
                          "openkruise/agents refs/pull/165/head (MCP server, not merged), 2026-05-06"),
    "manager_tag": Pin("mcp-136236a8", "the start of the tag this repository builds the manager under, "
                       "before the hash of images/sandbox-manager "
                       "(make docker-build-manager at manager_commit)"),
    "envoy_image": Pin("envoyproxy/envoy:v1.33.0", "openkruise/agents@v0.3.0 config/sandbox-manager/"
                       "image_patch.yaml floats envoyproxy/envoy:v1.33-latest; pinned to its release"),
    "mcp_port": Pin("8082", "openkruise/agents@136236a8 pkg/servers/mcp/types.go DefaultServerConfig().Port"),
    "mcp_path": Pin("/mcp", "openkruise/agents@136236a8 pkg/servers/mcp/types.go MCPEndpointPath"),
    "mcp_auth_header": Pin("E2B-API-KEY", "openkruise/agents@136236a8 pkg/servers/mcp/auth.go HTTPAuthMiddleware"),
}

#: The Deployment args upstream's patches leave at v0.3.0, by index: the manager patch below
#: replaces these two and kustomize's JSON-patch ``test`` op stops if upstream reorders them.
MANAGER_ARGS_AT_TAG = {6: "--e2b-domain=localhost", 7: "--e2b-admin-key=some-api-key"}
MANAGER_ARGS_SOURCE = ("openkruise/agents@v0.3.0 config/sandbox-manager/deployment.yaml args, "
                       "after configuration_patch.yaml")

#: Every flag the manager built at ``manager_commit`` accepts (pflag parses strictly: an
#: unknown flag stops the process).
MANAGER_FLAGS = frozenset({
    # cmd/sandbox-manager/main.go at manager_commit, pflag.*Var
    "enable-pprof", "pprof-addr", "port", "e2b-admin-key", "e2b-enable-auth", "e2b-domain", "e2b-max-timeout",
    "system-namespace", "peer-selector", "sandbox-namespace", "sandbox-label-selector", "max-claim-workers",
    "max-create-qps", "ext-proc-max-concurrency", "kube-client-qps", "kube-client-burst", "memberlist-bind-port",
    "e2b-key-storage", "e2b-key-storage-disable-schema-auto-update",
    "mcp-enabled", "mcp-port", "mcp-sandbox-ttl", "mcp-session-sync-port",
    # utilfeature.DefaultMutableFeatureGate.AddFlag
    "feature-gates",
    # controller-runtime v0.20.2 pkg/log/zap Options.BindFlags
    "zap-devel", "zap-encoder", "zap-log-level", "zap-stacktrace-level", "zap-time-encoding",
    # k8s.io/klog/v2 v2.130.1 InitFlags
    "v", "vmodule", "logtostderr", "alsologtostderr", "log_dir", "log_file", "log_file_max_size",
    "skip_headers", "skip_log_headers", "add_dir_header", "one_output", "stderrthreshold", "log_backtrace_at",
})
MANAGER_FLAGS_SOURCE = ("openkruise/agents@136236a8 cmd/sandbox-manager/main.go; go.mod pins "
                        "sigs.k8s.io/controller-runtime v0.20.2 and k8s.io/klog/v2 v2.130.1")


def value(key: str) -> str:
    return PINS[key].value
