"""Who reaches whom under the NetworkPolicies of every sandbox x sync variant, as cyclonus (an
existing NetworkPolicy engine, built from source by the toolchain) evaluates them.

The pods are those the rendered objects make, labelled as their controllers label them: KubeRay
(v1.6.2 ``controllers/ray/common/pod.go`` ``labelPod``) the head and worker pods, the Job
controller the submitter, the MCP Service's selector the sandbox manager, the SandboxSet's
template the sandboxes, the KubeRay operator in its own namespace (labels of its kustomize
manifest ``config/manager/manager.yaml``).
"""
from __future__ import annotations

import copy

import pytest
from support.cyclonus import Host, Pod, allowed
from support.repos import all_objects

SANDBOXES = {"opensource": ("--plugin", "opensource-sandbox"),
             "marketplace": ("--plugin", "marketplace-sandbox",
                             "--set", "marketplace-sandbox.domain=sandbox.example.com")}
SYNCS = {"flux": ("--plugin", "flux"), "argo": ("--plugin", "argo")}
VARIANTS = [(s, y) for s in SANDBOXES for y in SYNCS]

OPERATOR_NAMESPACE = "kuberay-system"
OPERATOR_LABELS = {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/component": "kuberay-operator"}
DASHBOARD = 8265
#: Ports workers and the head open to each other: the GCS, the Ray client server, the metrics
#: exporter, the dashboard agent, a worker process (10002-19999) and a raylet/object manager
#: port Ray picks at random.
RAY_PORTS = (6379, 10001, 8080, 52365, 10002, 19999, 40123)
#: The sandbox's own servers: envd and the code interpreter.
SANDBOX_PORTS = (49983, 49999)
#: Outside the pods: the API server's endpoint, ECS's metadata service, an OSS internal
#: endpoint's address and a host on the internet.
OUTSIDE = {"API server": (Host("192.168.0.10"), 6443), "metadata": (Host("100.100.100.200"), 80),
           "OSS": (Host("100.118.28.5"), 443), "internet": (Host("203.0.113.7"), 443)}


class Cluster:
    """The pods a rendered repository makes, and its NetworkPolicies."""

    def __init__(self, objects: list[dict]):
        self.policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
        rayjob = next(o for o in objects if o["kind"] == "RayJob")
        ns, name = rayjob["metadata"]["namespace"], rayjob["metadata"]["name"]
        spec = rayjob["spec"]
        cluster = f"{name}-x7k2p"  # KubeRay names the RayCluster <RayJob>-<random suffix>
        head = spec["rayClusterSpec"]["headGroupSpec"]
        worker = spec["rayClusterSpec"]["workerGroupSpecs"][0]
        self.head = Pod(ns, {**_template_labels(head), **_kuberay_labels("head", cluster, "headgroup")}, "10.0.1.1")
        self.worker = Pod(ns, {**_template_labels(worker), **_kuberay_labels("worker", cluster, worker["groupName"])},
                          "10.0.1.2")
        submitter = spec.get("submitterPodTemplate", {})
        self.submitter = Pod(ns, {**_template_labels(submitter), "batch.kubernetes.io/job-name": name,
                                  "job-name": name}, "10.0.1.3")
        self.other_pod = Pod("default", {"app": "anything"}, "10.0.9.9")
        self.operator = Pod(OPERATOR_NAMESPACE, OPERATOR_LABELS, "10.0.2.1")
        mcp = next(o for o in objects if o["kind"] == "Service"
                   and any(p.get("name") == "mcp" for p in o["spec"].get("ports", [])))
        self.manager = Pod(mcp["metadata"]["namespace"], mcp["spec"]["selector"], "10.0.3.1")
        self.mcp_port = mcp["spec"]["ports"][0]["targetPort"]
        sandbox_set = next(o for o in objects if o["kind"] == "SandboxSet")
        self.sandbox = Pod(sandbox_set["metadata"]["namespace"], _template_labels(sandbox_set["spec"]), "10.0.4.1")


def _template_labels(owner: dict) -> dict:
    return dict(((owner.get("template") or {}).get("metadata") or {}).get("labels") or {})


def _kuberay_labels(node_type: str, cluster: str, group: str) -> dict:
    """KubeRay v1.6.2 ``labelPod``: what every Ray pod carries, over its template's labels."""
    return {"ray.io/is-ray-node": "yes", "ray.io/cluster": cluster, "ray.io/node-type": node_type,
            "ray.io/group": group, "ray.io/identifier": f"{cluster}-{node_type}",
            "app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator"}


def matrix(c: Cluster) -> dict[str, tuple]:
    """Traffic by a name a failure reads well, with the verdict the repository must give."""
    cases = {
        "KubeRay operator -> head dashboard": (c.operator, c.head, DASHBOARD, "TCP", True),
        "KubeRay operator -> head GCS": (c.operator, c.head, 6379, "TCP", False),
        "submitter -> head dashboard": (c.submitter, c.head, DASHBOARD, "TCP", True),
        "pod of another namespace -> head dashboard": (c.other_pod, c.head, DASHBOARD, "TCP", False),
        "trainer head -> MCP Service's pods": (c.head, c.manager, c.mcp_port, "TCP", True),
        "trainer worker -> MCP Service's pods": (c.worker, c.manager, c.mcp_port, "TCP", True),
    }
    for port in RAY_PORTS:
        cases[f"worker -> head {port}"] = (c.worker, c.head, port, "TCP", True)
        cases[f"head -> worker {port}"] = (c.head, c.worker, port, "TCP", True)
    for port in SANDBOX_PORTS:
        cases[f"sandbox manager -> sandbox {port}"] = (c.manager, c.sandbox, port, "TCP", True)
        cases[f"trainer -> sandbox {port}"] = (c.head, c.sandbox, port, "TCP", False)
    for port in (DASHBOARD, 6379):
        cases[f"sandbox -> head {port}"] = (c.sandbox, c.head, port, "TCP", False)
    for name, (host, port) in OUTSIDE.items():
        cases[f"sandbox -> {name}"] = (c.sandbox, host, port, "TCP", False)
    cases["sandbox -> sandbox manager"] = (c.sandbox, c.manager, c.mcp_port, "TCP", False)
    return cases


def verdicts(policies: list[dict], cases: dict[str, tuple], workdir) -> dict[str, bool]:
    found = allowed(policies, [case[:4] for case in cases.values()], workdir)
    return dict(zip(cases, found))


@pytest.fixture(scope="module", params=VARIANTS, ids=[f"{s}-{y}" for s, y in VARIANTS])
def cluster(request, generate):
    sandbox, sync = request.param
    return Cluster(all_objects(generate(*SANDBOXES[sandbox], *SYNCS[sync])))


def test_the_engine_gives_every_pair_the_verdict_the_runs_need(cluster, tmp_path):
    cases = matrix(cluster)
    expected = {name: case[4] for name, case in cases.items()}
    assert verdicts(cluster.policies, cases, tmp_path) == expected


def test_a_cni_without_endport_support_gives_the_same_verdicts(cluster, tmp_path):
    # Such a CNI applies only `port` of a port range (Kubernetes docs, "Targeting a range of ports").
    stripped = copy.deepcopy(cluster.policies)
    for policy in stripped:
        for rule in policy["spec"].get("ingress", []) + policy["spec"].get("egress", []):
            for port in rule.get("ports", []):
                port.pop("endPort", None)
    cases = matrix(cluster)
    assert verdicts(stripped, cases, tmp_path / "stripped") == verdicts(cluster.policies, cases, tmp_path)


def test_the_dashboard_follows_the_operators_namespace_answer(generate, tmp_path):
    objects = all_objects(generate("--set", "opensource-sandbox.kuberay_namespace=ray-system"))
    c = Cluster(objects)
    moved = Pod("ray-system", OPERATOR_LABELS)
    found = allowed(c.policies, [(moved, c.head, DASHBOARD, "TCP"), (c.operator, c.head, DASHBOARD, "TCP")], tmp_path)
    assert found == [True, False]


def test_host_network_workers_reach_the_head_by_their_nodes_address(generate, tmp_path):
    # Shared-mode RDMA puts the GPU workers on the host network: they connect from the node's address.
    c = Cluster(all_objects(generate("--set", "rlgen.network=rdma")))
    node = Host("192.168.5.20")
    traffic = [(node, c.head, port, "TCP") for port in (*RAY_PORTS, DASHBOARD)]
    assert allowed(c.policies, traffic, tmp_path) == [True] * len(RAY_PORTS) + [False]
