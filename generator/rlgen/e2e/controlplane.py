"""A local Kubernetes control plane on 127.0.0.1, from programs found on PATH (the pinned
toolchain: ``make toolchain`` in rlgen's project, the e2e workflow's install step in a repository).

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run as this process's children,
as kwokctl's binary runtime runs them; kwok makes the Node objects of ``add_node`` behave like
kubelets (Ready, pods Running, Job pods Succeeded). Operators (KubeRay, Flux's controllers) run
beside them against the same API server, outside the cluster, as their own ``main`` allows.
Every process logs to ``<workdir>/logs/<name>.log``; a failure prints their tails. ``rlgen e2e``
and rlgen's own tests share this one implementation.
"""
from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from rlgen import pool
from rlgen.e2e.programs import module_source, program

#: A node of an ACK Lingjun node pool: the label and taint ACK gives every Lingjun node (rlgen.pool,
#: sources in docs/upstream.md), the instance type, and the GPU labels of ACK's GPU device
#: plugin; ``rdma/hca`` comes from the ack-rdma-device-plugin add-on.
LINGJUN_TAINT = {"key": pool.LINGJUN_TAINT, "effect": "NoSchedule"}
LINGJUN_LABELS = {
    **dict(pool.KINDS["lingjun"].labels),
    "node.kubernetes.io/instance-type": "ml.gu7xf.8xlarge-gu108",
    "aliyun.accelerator/nvidia_name": "NVIDIA-H20",
    "aliyun.accelerator/nvidia_count": "8",
}
#: A node of an ACK node pool of ECS GPU instances (ecs.gn7i-c32g1.8xlarge: 1 A10, 32 vCPUs,
#: 188 GiB): no taint of ACK's, the node pool's ID as a label.
ECS_GPU_LABELS = {
    "node.kubernetes.io/instance-type": "ecs.gn7i-c32g1.8xlarge",
    "aliyun.accelerator/nvidia_name": "NVIDIA-A10",
    "aliyun.accelerator/nvidia_count": "1",
}
#: The label kwok manages nodes by: only the nodes this control plane creates.
KWOK_LABEL = "rlgen.test/kwok"
#: KubeRay's name for the container that submits a RayJob (ray-operator utils/constant.go
#: SubmitterContainerName), the one rlgen's submitterPodTemplate uses too.
SUBMITTER = "ray-job-submitter"
#: The label kwok's chaos stage (kustomize/stage/pod/chaos) fails a Running pod by: nothing a
#: repository holds carries it; a test fails a submitter with it, as one that lost its head.
FAIL_POD = "pod-container-running-failed.stage.kwok.x-k8s.io"


def kwok_stages(path: Path, source: Path | None = None) -> Path:
    """kwok's own pod stages at the pinned version (kustomize/stage/pod/fast), with one change:
    a RayJob's submitter pod is not completed. kwok completes every Job's pod at once; KubeRay
    then marks the RayJob Failed 30 s later (no Ray job behind it) and deletes its cluster, where
    a real submitter follows the training for hours. Plus its chaos stage that fails a pod on a
    label (``FAIL_POD``). Node stages stay kwok's defaults."""

    folder = (source or module_source("sigs.k8s.io/kwok")) / "kustomize" / "stage" / "pod" / "fast"
    stages = []
    for name in ("pod-ready", "pod-complete", "pod-delete"):
        stage = yaml.safe_load((folder / f"{name}.yaml").read_text())
        if name == "pod-complete":
            stage["spec"]["selector"]["matchExpressions"].append(
                {"key": ".spec.containers.[].name", "operator": "NotIn", "values": [SUBMITTER]})
        stages.append(stage)
    stages.append(yaml.safe_load((folder.parent / "chaos" / "pod-container-running-failed.yaml").read_text()))
    path.write_text(yaml.safe_dump_all(stages))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what: str, check, timeout: float = 60, interval: float = 0.5, on_timeout=None):
    """Poll ``check`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as err:  # noqa: BLE001 - a server still starting answers anything
            last = err
        else:
            if last:
                return last
        time.sleep(interval)
    detail = on_timeout() if on_timeout else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last: {last!r}\n{detail}")


@dataclass
class ControlPlane:
    workdir: Path
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    token: str = "rlgen-test-admin-token"
    #: The path of a program by name (default: PATH; the tests: the project's .toolchain/bin).
    tool: Callable[[str], str] = program
    #: The source folder of a Go module at its pinned version (CRDs, kwok's stages).
    source: Callable[[str], Path] = module_source
    #: Base URLs of the host processes' servers a client outside calls (the push webhook's receiver), by name.
    endpoints: dict[str, str] = field(default_factory=dict)

    # -- the core ------------------------------------------------------------------------------

    # long: the control plane's programs in the order they must start, each waited for before the next.
    def start(self) -> "ControlPlane":
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        pki = self.workdir / "pki"
        pki.mkdir(exist_ok=True)
        subprocess.run(["openssl", "genrsa", "-out", str(pki / "sa.key"), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")],
                       check=True, capture_output=True)
        (pki / "tokens.csv").write_text(f'{self.token},rlgen-admin,rlgen-admin,"system:masters"\n')

        etcd_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self.spawn("etcd", [
            self.tool("etcd"), "--data-dir", str(self.workdir / "etcd"), "--name", "rlgen-test",
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
            "--initial-cluster", f"rlgen-test=http://127.0.0.1:{peer_port}",
            # Test data need not survive a power cut: no fsync keeps etcd fast on a shared disk.
            "--unsafe-no-fsync", "--log-level", "warn",
        ])
        self.port = free_port()
        self.spawn("kube-apiserver", [
            self.tool("kube-apiserver"), "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--cert-dir", str(pki), "--token-auth-file", str(pki / "tokens.csv"),
            "--authorization-mode", "Node,RBAC", "--allow-privileged=true",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(pki / "sa.pub"),
            "--service-account-signing-key-file", str(pki / "sa.key"),
            "--service-cluster-ip-range", "10.96.0.0/16",
            # Pods would reach the API server through the kubernetes Service; its endpoint would be
            # 127.0.0.1, which the API server refuses, and nothing runs in a pod here.
            "--endpoint-reconciler-type=none",
        ])
        wait_until("kube-apiserver /readyz", lambda: self.get("/readyz") == b"ok", timeout=120,
                   on_timeout=self.logs)
        self.kubeconfig = self.workdir / "kubeconfig"
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "rlgen-test",
            "clusters": [{"name": "rlgen-test", "cluster": {
                "server": self.server,
                "certificate-authority-data": base64.b64encode(self.ca_bundle()).decode()}}],
            "users": [{"name": "rlgen-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "rlgen-test", "context": {"cluster": "rlgen-test", "user": "rlgen-admin"}}],
        }))
        self.spawn("kube-controller-manager", [
            self.tool("kube-controller-manager"), "--kubeconfig", str(self.kubeconfig), "--leader-elect=false",
            "--secure-port=0", "--service-account-private-key-file", str(pki / "sa.key"),
            "--root-ca-file", str(pki / "apiserver.crt"), "--use-service-account-credentials=false",
            # kwok renews a node's status every 10 to 20 minutes (its heartbeat-with-lease stage);
            # a gap must not mark nodes NotReady (and every pod on them unready, for good) as it
            # would a dead kubelet, however long the session runs.
            "--node-monitor-grace-period=1h",
        ])
        self.spawn("kube-scheduler", [self.tool("kube-scheduler"), "--kubeconfig", str(self.kubeconfig),
                                      "--leader-elect=false", "--secure-port=0"])
        self.spawn("kwok", [
            self.tool("kwok"), "--kubeconfig", str(self.kubeconfig),
            "--manage-nodes-with-label-selector", KWOK_LABEL, "--server-address", f"127.0.0.1:{free_port()}",
            "--cidr", "10.244.0.1/16", "--node-ip", "10.0.0.1",
            "--config", str(kwok_stages(self.workdir / "kwok-stages.yaml", self.source("sigs.k8s.io/kwok"))),
        ])
        wait_until("the default ServiceAccount", lambda: self.kubectl(
            "get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0, timeout=90,
            on_timeout=self.logs)
        return self

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def ca_bundle(self) -> bytes:
        return (self.workdir / "pki" / "apiserver.crt").read_bytes()

    def get(self, path: str) -> bytes:
        context = ssl.create_default_context(cadata=self.ca_bundle().decode())
        request = urllib.request.Request(self.server + path, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, context=context, timeout=5) as response:
            return response.read()

    def spawn(self, name: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> None:
        log = open(self.workdir / "logs" / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        self.processes[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
            env={**os.environ, **(env or {})})

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.kubeconfig)}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(["kubectl", "--kubeconfig", str(self.kubeconfig), *args], input=input,
                                capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def objects(self, *args: str) -> list[dict]:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)["items"]

    def logs(self, lines: int = 15) -> str:
        out = []
        for name, proc in self.processes.items():
            state = "running" if proc.poll() is None else f"exited {proc.returncode}"
            text = (self.workdir / "logs" / f"{name}.log").read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {name} ({state})\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        for proc in reversed(list(self.processes.values())):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    # -- nodes ---------------------------------------------------------------------------------

    def add_node(self, name: str, *, gpus: int = 0, cpu: str = "32", memory: str = "256Gi",
                 labels: dict | None = None, taints: list | None = None, extra: dict | None = None) -> None:
        """A Node kwok keeps Ready; status is written through the status subresource as a kubelet does."""
        allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "500Gi"}
        if gpus:
            allocatable["nvidia.com/gpu"] = str(gpus)
        allocatable.update(extra or {})
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                     "kubernetes.io/arch": "amd64", KWOK_LABEL: "true", **(labels or {})},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": allocatable, "capacity": allocatable}}
        self.kubectl("create", "-f", "-", input=json.dumps(node))
        # kwok keeps an allocatable it finds; whichever writes first, the node ends with this one.
        status = {"status": {"allocatable": allocatable, "capacity": allocatable}}
        self.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status))

    def add_lingjun_node(self, name: str, gpus: int = 8) -> None:
        self.add_node(name, gpus=gpus, cpu="180", memory="1800Gi", labels=LINGJUN_LABELS,
                      taints=[LINGJUN_TAINT], extra={"rdma/hca": "1k"})

    def add_ecs_gpu_node(self, name: str, pool_id: str, gpus: int = 1) -> None:
        self.add_node(name, gpus=gpus, cpu="32", memory="188Gi",
                      labels={**ECS_GPU_LABELS, pool.NODEPOOL_ID: pool_id})

    # -- what an installation leaves -----------------------------------------------------------

    def add_deployment(self, namespace: str, name: str, image: str) -> None:
        """The Deployment an operator's installation creates (Helm chart, ``flux bootstrap``).
        kwok keeps its pod Running; the operator's work is done by its process beside the API
        server, so the cluster reads as one where the operator is installed."""
        labels = {"app.kubernetes.io/name": name}
        self.kubectl("create", "namespace", namespace, check=False)
        self.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "manager", "image": image}]}}}}))
