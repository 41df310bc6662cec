"""What both sandbox plugins share: the MCP Service, the SandboxSet warm pool and the
trainer's MCP tool. They differ only in how the sandbox manager is installed and which pods
the Service selects, as the tutorial's two variants do."""
from __future__ import annotations

import json

from rlgen.plugin_api import (
    ConfigFile,
    Layer,
    Option,
    Patch,
    Resource,
    SecretRef,
    dns1123_label_error,
    hookimpl,
    image_reference_error,
    int_range,
    verl_release,
)

ADMIN_KEY_SECRET = "sandbox-admin-api-key"
ADMIN_KEY = "adminApiKey"
#: The trainer's own copy of an API key: a pod reads Secrets of its namespace only.
TRAINER_KEY_SECRET = "sandbox-api-key"
TRAINER_KEY = "apiKey"
#: Header the MCP server of openkruise/agents#165 reads the API key from (pkg/servers/mcp/auth.go).
#: verl's own ``auth_token`` would send ``Authorization: Bearer`` over SSE, which that server,
#: speaking streamable HTTP, does not accept: the key goes in fastmcp's ``headers`` instead.
AUTH_HEADER = "E2B-API-KEY"
#: mcp_server.json with the key, written at pod start into memory, never into Git or a ConfigMap.
CREDENTIALS_DIR = "/var/run/mcp"
#: The operator's namespace unless told: the one rlgen's control-plane tests install it in. Which
#: namespace ACK's KubeRay add-on uses is not verifiable offline (docs/upstream.md); `rlgen doctor`
#: reports where the operator runs when the policy would shut it out.
KUBERAY_NAMESPACE = "kuberay-system"


#: The code-interpreter image the openkruise/agents v0.3.0 end-to-end tests and examples run
#: (test/e2b/assets/sandboxset-code-interpreter.yaml, examples/claude-code/README.md): upstream
#: publishes it in ACK's ap-southeast-1 public registry and nowhere else.
SANDBOX_IMAGE = "registry-ap-southeast-1.ack.aliyuncs.com/acs/code-interpreter:v1.6"


def mcp_unverified(ctx) -> str:
    """The README's word on the MCP endpoint that no offline check settles, and how to say it was checked."""
    return ("The MCP endpoint (path, port, the `E2B-API-KEY` header) is taken from the unmerged upstream pull "
            "request openkruise/agents#165 and cannot be verified offline against the image you run: check "
            "it on the cluster before the first run. `rlgen validate` warns about it until "
            f"`rlgen update --set {ctx.plugins['sandbox']}.mcp_checked=true` records in `rlgen.yaml` that you did.")


def isolation_note(ctx) -> str:
    """The README's word on where sandboxes run and what NetworkPolicy needs from the cluster."""
    return (f"\n\nThe sandboxes run model-written code in their own namespace `{sandboxes_namespace(ctx)}`, "
            "without a service-account token, beside no Secret. NetworkPolicies deny them any egress (the Ray "
            "dashboard, the ECS metadata service and OSS included) and admit only the sandbox manager's "
            f"namespace `{ctx.spec.sandbox_namespace}`; the Ray head's dashboard (port 8265, which accepts jobs "
            f"without authentication) answers only pods of `{ctx.spec.namespace}` and the KubeRay operator's "
            f"namespace `{_options(ctx)['kuberay_namespace']}` "
            f"(`rlgen update --set {ctx.plugins['sandbox']}.kuberay_namespace=...` if it runs elsewhere: KubeRay reads each job's status there). NetworkPolicies take "
            "effect only where the CNI enforces them: on ACK, Terway with NetworkPolicy support enabled "
            "(Flannel ignores them).")


OPTIONS = (
    Option("warm_pool", "Sandboxes kept ready (a bit above the expected burst)", 3, int,
           check=int_range(0, 10000)),
    # Where upstream publishes it: openkruise/agents@v0.3.0 names this image in one registry only
    # (docs/upstream.md). An answer recorded in rlgen.yaml, asked on a terminal: a team in
    # another region points it at its own mirror.
    Option("sandbox_image", "Code-interpreter image of each sandbox (upstream's, in ACK's public "
           "ap-southeast-1 registry; your registry's mirror of it pulls faster and stays)", SANDBOX_IMAGE,
           check=image_reference_error, ask=True),
    Option("runtime_image", "Agent runtime (envd) image copied into each sandbox",
           "registry-cn-hangzhou.ack.aliyuncs.com/acs/agent-runtime:v0.0.1", check=image_reference_error),
    Option("mcp_path", "HTTP path of the MCP endpoint of the sandbox-manager image", "/mcp"),
    # validate's warning that the endpoint follows an unmerged pull request, answered once for
    # the repository (rlgen.rules.tools.acknowledged) instead of on every validate.
    Option("mcp_checked", "Whether the team checked the MCP endpoint (path, port, E2B-API-KEY header) "
           "against the sandbox-manager image on its cluster: true stops rlgen validate's warning", False, bool),
    Option("tool", "Sandbox tool the trainer may call", "run_code_once"),
    # Sandboxes run model-written code: bounded, so a runaway cell cannot starve the node.
    Option("sandbox_cpu", "CPU of each sandbox (request = limit)", "1"),
    Option("sandbox_memory", "Memory of each sandbox (request = limit)", "2Gi"),
    # Recorded at its default too: a repository keeps the namespace its policy admits.
    Option("kuberay_namespace", "Namespace of the KubeRay operator, which the Ray head's dashboard "
           "(port 8265) admits: it polls each job's status there", KUBERAY_NAMESPACE,
           check=dns1123_label_error, ask=True),
)

#: The agent-runtime sidecar only serves envd.
RUNTIME_RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}


def mcp_service(ctx, selector: dict, target_port: int) -> Resource:
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
            "ports": [{"name": "mcp", "protocol": "TCP", "port": spec.mcp_port, "targetPort": target_port}],
        },
    }
    return Resource(Layer.PLATFORM, "mcp-service.yaml", svc,
                    "The trainer's MCP tool calls the sandbox manager through this Service.\n"
                    "A Service selects pods of its own namespace only, so it lives beside the manager.")


def sandboxes_namespace(ctx) -> str:
    """Where the sandboxes run: not beside the trainer, its Secrets and the Ray dashboard."""
    return f"{ctx.spec.namespace[:53]}-sandboxes"


def isolation(ctx) -> list[Resource]:
    """The sandboxes' own Namespace and NetworkPolicies: model-written code runs there."""
    spec, ns = ctx.spec, sandboxes_namespace(ctx)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    sandboxes = _sandboxes_policy(ns, spec.sandbox_namespace)
    dashboard = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "ray-dashboard-in-namespace", "namespace": spec.namespace},
        "spec": {
            "podSelector": {"matchLabels": {"ray.io/node-type": "head"}},
            "policyTypes": ["Ingress"],
            "ingress": dashboard_ingress(ctx),
        },
    }
    return [
        Resource(Layer.PLATFORM, "sandboxes-namespace.yaml", namespace,
                 "Sandboxes run model-written code: their own namespace, without the trainer's Secrets."),
        Resource(Layer.PLATFORM, "sandboxes-network-policy.yaml", sandboxes,
                 "Default deny for the sandboxes: nothing out (not the Ray dashboard, the ECS metadata\n"
                 "service or OSS), and in only from the sandbox manager's namespace. Needs a CNI that\n"
                 "enforces NetworkPolicy (ACK: Terway with NetworkPolicy support on)."),
        Resource(Layer.PLATFORM, "ray-dashboard-network-policy.yaml", dashboard,
                 "The Ray head admits the run's own pods on every port (workers, the submitter) and the\n"
                 "KubeRay operator's namespace on the dashboard port alone: KubeRay reads each job's\n"
                 "status there, and without it a RayJob turns Failed once its submitter ends. No port\n"
                 "ranges where avoidable: a CNI without endPort support applies only a range's first port."),
    ]


def _sandboxes_policy(ns: str, manager_namespace: str) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "sandboxes-isolated", "namespace": ns},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            # Only the sandbox manager (and the controller beside it) call into a sandbox.
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": manager_namespace}}}]}],
            # No egress at all: a tool call's answer rides back on the manager's connection.
            "egress": [],
        },
    }


#: KubeRay's default dashboard port (utils/constant.go DefaultDashboardPort).
RAY_DASHBOARD_PORT = 8265


def dashboard_ingress(ctx) -> list[dict]:
    """Who reaches the Ray head: the run's pods on every port, the KubeRay operator on the dashboard."""
    operator_ns = _options(ctx)["kuberay_namespace"]
    rules = [
        # No ports: workers reach the GCS, the raylet, the object manager and Ray's worker
        # ports (10002-19999 unless set), and the submitter Job submits to the dashboard.
        {"from": [{"podSelector": {}}]},
        # KubeRay reads the job's status from the dashboard on every reconcile; without it a
        # RayJob turns Failed 30 s after its submitter ends, successful runs included. Its pods'
        # labels depend on how it was installed (only the kustomize manifest's are known
        # offline): the namespace alone.
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": operator_ns}}}],
         "ports": [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}]},
    ]
    if ctx.spec.network == "rdma" and ctx.spec.rdma_host_network:
        # Host-network workers connect from their node's address, which no pod selector
        # matches: every other port stays open to any source. These need a CNI that
        # implements endPort; one that does not opens only the first port of each range.
        rules.append({"ports": [{"protocol": "TCP", "port": 1, "endPort": RAY_DASHBOARD_PORT - 1},
                                {"protocol": "TCP", "port": RAY_DASHBOARD_PORT + 1, "endPort": 65535},
                                {"protocol": "UDP", "port": 1, "endPort": 65535}]})
    return rules


# long: one SandboxSet laid out as the YAML it becomes; in pieces it would no longer read as one object.
def sandbox_set(ctx, options: dict) -> Resource:
    envd = {"name": "envd-volume", "mountPath": "/mnt/envd"}
    env = [{"name": "ENVD_DIR", "value": "/mnt/envd"}]
    sized = {"cpu": options["sandbox_cpu"], "memory": options["sandbox_memory"]}
    sbs = {
        "apiVersion": "agents.kruise.io/v1alpha1",
        "kind": "SandboxSet",
        "metadata": {"name": "code-interpreter", "namespace": sandboxes_namespace(ctx)},
        "spec": {
            "replicas": options["warm_pool"],
            "template": {
                "spec": {
                    # Model-written code gets no Kubernetes API credentials.
                    "automountServiceAccountToken": False,
                    "initContainers": [{
                        "name": "agent-runtime",
                        "image": options["runtime_image"],
                        "imagePullPolicy": "IfNotPresent",
                        "env": env,
                        "volumeMounts": [envd],
                        "resources": RUNTIME_RESOURCES,
                        # A native sidecar: copies envd, then keeps running beside the sandbox.
                        "restartPolicy": "Always",
                    }],
                    "containers": [{
                        "name": "sandbox",
                        "image": options["sandbox_image"],
                        "imagePullPolicy": "IfNotPresent",
                        "env": env,
                        "volumeMounts": [envd],
                        "resources": {"requests": dict(sized), "limits": dict(sized)},
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
                    + _image_note(ctx, options) +
                    "No e2b.agents.kruise.io/should-init-envd annotation: upstream removed it; the\n"
                    "agent-runtime init container installs envd. terminationGracePeriodSeconds: 1\n"
                    "frees a used sandbox fast so the pool refills.")


def _image_note(ctx, options: dict) -> str:
    if options["sandbox_image"] != SANDBOX_IMAGE:
        return ""
    return ("The sandbox image is upstream's (openkruise/agents v0.3.0), named by upstream in ACK's\n"
            "ap-southeast-1 registry alone: to pull from a mirror of your own,\n"
            f"rlgen update --set {ctx.plugins['sandbox']}.sandbox_image=<your registry>/code-interpreter:v1.6\n")


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
    # "transport": the server speaks streamable HTTP; the key header is added at pod start.
    servers = {"mcpServers": {"sandbox": {"url": url, "transport": "http"}}}
    return ConfigFile(ctx.spec.mcp_config_key, json.dumps(servers, indent=2, sort_keys=True) + "\n")


#: rlgen's code-execution tool (images/training/rlgen_verl_tools/sandbox.py), a native verl tool
#: in every release: verl 0.9 removed its MCP tools, and 0.7's MCPSearchTool kept only a search
#: 'results' substring, so print() output and errors would never reach the model.
TOOL_CLASS = "rlgen_verl_tools.sandbox.SandboxCodeTool"
#: Seconds a call may take, and how much of its output the model gets.
TOOL_TIMEOUT = 120
MAX_OUTPUT_CHARS = 4000


def mcp_tool(ctx, options: dict) -> dict:
    return {
        "class_name": TOOL_CLASS,
        "config": {
            "type": verl_release(ctx.spec).tool_type,
            "mcp_servers_config_path": f"{CREDENTIALS_DIR}/{ctx.spec.mcp_config_key}",
            "remote_tool": options["tool"],
            "timeout": TOOL_TIMEOUT,
            "max_output_chars": MAX_OUTPUT_CHARS,
        },
        "tool_schema": {
            "type": "function",
            "function": {
                "name": options["tool"],
                "description": "Run Python code in a fresh sandbox and return what it prints (stdout, "
                               "stderr and errors). Print every value you want to see.",
                "parameters": {
                    "type": "object",
                    "properties": {"code": {"type": "string", "description": "Python code to run"}},
                    "required": ["code"],
                },
            },
        },
    }


def trainer_key_secret(ctx) -> SecretRef:
    return SecretRef(TRAINER_KEY_SECRET, ctx.spec.namespace, (TRAINER_KEY,),
                     f"API key the trainer sends to the MCP endpoint ({AUTH_HEADER} header): the admin key, "
                     "or a key created with the E2B API (POST /api-keys)",
                     "the RayJob's mcp-credentials init container")


_WRITE_CREDENTIALS = (
    "import json, os, sys\n"
    "servers = json.load(open(sys.argv[1]))\n"
    "for server in servers['mcpServers'].values():\n"
    f"    server.setdefault('headers', {{}})['{AUTH_HEADER}'] = os.environ['MCP_API_KEY']\n"
    "fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
    "os.write(fd, json.dumps(servers).encode())\n")


@hookimpl
def rlgen_patches(ctx) -> list[Patch]:
    spec = ctx.spec
    pods = [f"/spec/rayClusterSpec/{group}/template/spec" for group in ("headGroupSpec", "workerGroupSpecs/0")]
    source, target = spec.config_path(spec.mcp_config_key), f"{CREDENTIALS_DIR}/{spec.mcp_config_key}"
    init = {
        "name": "mcp-credentials",
        "image": "training",
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", _WRITE_CREDENTIALS, source, target],
        "env": [{"name": "MCP_API_KEY",
                 "valueFrom": {"secretKeyRef": {"name": TRAINER_KEY_SECRET, "key": TRAINER_KEY}}}],
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
        "volumeMounts": [{"name": "configs", "mountPath": spec.configs_mount, "readOnly": True},
                         {"name": "mcp-credentials", "mountPath": CREDENTIALS_DIR}],
    }
    # verl's agent-loop workers, which call the tools, run on the head and the GPU workers.
    ops = [op for pod in pods for op in (
        {"op": "add", "path": f"{pod}/initContainers", "value": [init]},
        {"op": "add", "path": f"{pod}/volumes/-",
         "value": {"name": "mcp-credentials", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}},
        {"op": "add", "path": f"{pod}/containers/0/volumeMounts/-",
         "value": {"name": "mcp-credentials", "mountPath": CREDENTIALS_DIR, "readOnly": True}},
    )]
    return [Patch(Layer.TRAINING, {"kind": "RayJob"}, ops, "rayjob-mcp-credentials",
                  f"The MCP API key from the Secret {TRAINER_KEY_SECRET}: an init container adds it as the\n"
                  f"{AUTH_HEADER} header to a copy of mcp_server.json in memory ({CREDENTIALS_DIR}), so the\n"
                  "key is never in Git or in the trainer ConfigMap.")]


#: rlgen's sandbox tool calls the MCP endpoint with fastmcp (2.x API), which verl's dependency
#: images lack.
TRAINING_PACKAGES = ["fastmcp>=2.3,<3"]
