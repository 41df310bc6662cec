"""What a cluster running rlgen's repositories has, put on a bare control plane: KubeRay's
operator, Flux's source- and kustomize-controller (each a process beside the API server, with
the Deployment its installation leaves), the CSI drivers ACK's add-ons register, and kwok nodes
shaped like the repository's GPU pool."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlgen import pool as node_pool
from rlgen.errors import RlgenError
from rlgen.e2e.controlplane import ControlPlane, free_port
from rlgen.e2e.programs import pinned

KUBERAY = "github.com/ray-project/kuberay/ray-operator"
SOURCE_CONTROLLER = "github.com/fluxcd/source-controller"
KUSTOMIZE_CONTROLLER = "github.com/fluxcd/kustomize-controller"
NOTIFICATION_CONTROLLER = "github.com/fluxcd/notification-controller"
OPERATOR = "kuberay-operator"
OPERATOR_NAMESPACE = "kuberay-system"
GPU = "nvidia.com/gpu"


def install_crds(cp: ControlPlane, folder: Path) -> None:
    # Server-side: some upstream CRDs are larger than client-side apply's annotation allows.
    cp.kubectl("apply", "--server-side", "-f", str(folder))
    # A controller started before its kinds are served stops at once ("no matches for kind").
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "-f", str(folder))


def spawn_operator(cp: ControlPlane, *flags: str) -> None:
    """KubeRay's operator as a process beside the API server, with ``flags`` added, and its
    installed Deployment saying the same (doctor reads the flags from there)."""
    cp.spawn(OPERATOR, [
        cp.tool("ray-operator"), "--enable-leader-election=false",
        "--metrics-addr", f"127.0.0.1:{free_port()}", "--health-probe-bind-address", f"127.0.0.1:{free_port()}",
        *flags,
    ], env=cp.env())
    cp.kubectl("patch", "deployment", OPERATOR, "-n", OPERATOR_NAMESPACE, "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": list(flags)}]))
    cp.kubectl("rollout", "status", "-n", OPERATOR_NAMESPACE, f"deployment/{OPERATOR}", "--timeout=90s")


def start_kuberay(cp: ControlPlane) -> None:
    install_crds(cp, cp.source(KUBERAY) / "config" / "crd" / "bases")
    cp.add_deployment(OPERATOR_NAMESPACE, OPERATOR, f"quay.io/kuberay/operator:{pinned(KUBERAY)}")
    spawn_operator(cp)


def addresses() -> list[str]:
    """Metrics and health endpoints of one Flux controller, on loopback ports of its own."""
    return ["--metrics-addr", f"127.0.0.1:{free_port()}", "--health-addr", f"127.0.0.1:{free_port()}"]


def start_flux(cp: ControlPlane, requeue_dependency: str | None = "5s", deployments: bool = True) -> None:
    """Flux's controllers as processes, with their CRDs (a controller stops at once without its
    kinds). ``deployments``: the Deployments ``flux bootstrap`` installs too, for a bootstrap
    without the flux CLI; the CLI applies its own (kwok keeps their pods Running, the processes
    do the work). ``requeue_dependency=None`` keeps kustomize-controller's own default, as on a
    cluster."""
    cp.kubectl("create", "namespace", "flux-system")
    for module in (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER, NOTIFICATION_CONTROLLER):
        name = module.rsplit("/", 1)[1]
        if deployments:
            cp.add_deployment("flux-system", name, f"ghcr.io/fluxcd/{name}:{pinned(module)}")
        install_crds(cp, cp.source(module) / "config" / "crd" / "bases")
    storage = cp.workdir / "flux-artifacts"
    storage.mkdir()
    artifacts = f"127.0.0.1:{free_port()}"
    env = {**cp.env(), "RUNTIME_NAMESPACE": "flux-system"}
    cp.spawn("source-controller", [
        cp.tool("source-controller"), *addresses(),
        "--storage-path", str(storage), "--storage-addr", artifacts, "--storage-adv-addr", artifacts,
    ], env=env)
    cp.spawn("kustomize-controller", [
        cp.tool("kustomize-controller"), *addresses(),
        # A stage waiting for the one before it retries this often: 5 s is what the generated
        # clusters/<c>/flux-system/kustomization.yaml has flux bootstrap install (30 s without it).
        *(["--requeue-dependency", requeue_dependency] if requeue_dependency else []),
    ], env=env)
    # The Git host's push webhooks arrive here (a cluster exposes it as the webhook-receiver Service).
    receiver = f"127.0.0.1:{free_port()}"
    cp.spawn("notification-controller", [
        cp.tool("notification-controller"), *addresses(),
        "--receiverAddr", receiver, "--events-addr", f"127.0.0.1:{free_port()}",
    ], env=env)
    cp.endpoints["webhook-receiver"] = f"http://{receiver}"


def add_csi_drivers(cp: ControlPlane, drivers) -> None:
    """The CSIDriver objects ACK's csi-plugin add-on registers (the OSS driver), for the drivers the
    repository's volumes name: no driver runs, the API server only needs them to exist."""
    for driver in sorted(drivers):
        cp.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
            "spec": {"attachRequired": False, "podInfoOnMount": True}}))


@dataclass
class Pool:
    """The GPU nodes of a repository's node pool, as ACK makes them (rlgen.pool): what the
    answers say, never what the pods select, so a selector ACK would not match fails here too."""

    nodes: int
    gpus: int
    cpu: str = "180"
    memory: str = "1800Gi"
    labels: dict = field(default_factory=dict)
    taints: list = field(default_factory=list)
    #: Device-plugin resources (RDMA) each node advertises, and how many.
    devices: dict = field(default_factory=dict)

    def describe(self) -> str:
        extra = "".join(f", {k}" for k in sorted(self.devices))
        taints = "".join(f", taint {t['key']}" + (f"={t['value']}" if t.get("value") else "") + f":{t['effect']}"
                         for t in self.taints)
        return f"{self.nodes} node(s) of {self.gpus} {GPU}{extra}{taints}"


def pool_of(spec, needs, nodes: int) -> Pool:
    """``nodes`` nodes of the answered pool (its kind's labels and taints, the team's, a node's
    CPU and memory), with the RDMA resources the runs' containers ask for."""
    the_pool = node_pool.of(spec)
    devices = {resource: "1k" for resource in sorted(needs.extended)}
    return Pool(nodes, the_pool.gpus, str(the_pool.cpu), f"{the_pool.memory}Gi", the_pool.node_labels(),
                the_pool.taint_list(), devices)


def add_pool(cp: ControlPlane, pool: Pool, cpu_nodes: int = 2, deadline: float | None = None) -> None:
    """The pool's kwok nodes; past ``deadline`` (time.monotonic) a one-line error, not a wait."""
    for i in range(pool.nodes):
        if deadline is not None and time.monotonic() > deadline:
            raise RlgenError(f"--timeout passed with {i} of the pool's {pool.nodes} GPU nodes made")
        cp.add_node(f"gpu-{i}", gpus=pool.gpus, cpu=pool.cpu, memory=pool.memory, labels=pool.labels,
                    taints=pool.taints, extra=pool.devices)
    # The heads, the dataset and model Jobs, the sandbox: CPU pods, on nodes without a taint.
    for i in range(cpu_nodes):
        cp.add_node(f"cpu-{i}", cpu="32", memory="128Gi")


def start_operators(cp: ControlPlane, csi_drivers=(), flux: bool = True, flux_deployments: bool = True) -> None:
    """KubeRay, the CSI drivers, and Flux's controllers unless ``flux`` is False (Argo CD's
    install is rlgen.e2e.argo's)."""
    start_kuberay(cp)
    if flux:
        start_flux(cp, deployments=flux_deployments)
    add_csi_drivers(cp, csi_drivers)
    # An installed operator is an available Deployment; doctor reads it so.
    cp.kubectl("wait", "--for=condition=Available", "deployment", "--all", "-A", "--timeout=180s")
