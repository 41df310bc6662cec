"""Kueue on the control plane: its CRDs at the pinned version, its webhooks registered by URL,
and ``cmd/kueue`` as a process beside the API server, the RayJob integration on: a RayJob that
names a LocalQueue is created suspended and starts once Kueue admits it, as on a cluster.

The API server reaches a webhook by URL here (no Service routes to a host process). Kueue's
own certificate management (cert-controller) keeps a CA and a serving certificate in a Secret,
writes the CA into its webhook configurations and into the conversion webhooks of its CRDs,
and waits for the serving files in its certificate folder, which a pod gets from that Secret
mounted. So this module makes the CA and a certificate valid for both the Service name Kueue checks
and 127.0.0.1, stores them in that Secret and in the folder, and points every webhook at
https://127.0.0.1:<port>: cert-controller finds them valid and keeps them.
"""
from __future__ import annotations

import base64
import json
import subprocess
import urllib.request
from pathlib import Path

import yaml

from rlgen.e2e.controlplane import ControlPlane, free_port, wait_until
from rlgen.e2e.programs import pinned

MODULE = "sigs.k8s.io/kueue"
NAMESPACE = "kueue-system"
#: Kueue's defaults (apis/config/v1beta2 defaults; pkg/util/cert/cert.go names the CA "kueue-ca").
SERVICE = "kueue-webhook-service"
SECRET = "kueue-webhook-server-cert"
CA_NAME = "kueue-ca"
#: The CRDs whose conversion webhook cert-controller fills (pkg/util/cert/cert.go).
CONVERTED = ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")
#: The webhooks of upstream's config/components/webhook/manifests.yaml kept: Kueue's own kinds
#: and KubeRay's. The others (pods, Jobs, Deployments...) would stop every pod of the control
#: plane at a webhook serving integrations that are off.
KEPT = {"rayjobs", "rayclusters", "clusterqueues", "cohorts", "localqueues", "resourceflavors", "workloads",
        "workloadpriorityclasses"}


def _certificates(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=folder)

    # cert-controller's checks: the CA verifies as DNS name "kueue-ca", the serving certificate as
    # <service>.<namespace>.svc for server auth, both valid beyond its 90-day look-ahead.
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650", "-keyout", "ca.key", "-out", "ca.crt",
            "-subj", f"/O=kueue/CN={CA_NAME}", "-addext", f"subjectAltName=DNS:{CA_NAME}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,digitalSignature")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
            "-subj", f"/CN={SERVICE}.{NAMESPACE}.svc")
    (folder / "ext.cnf").write_text(f"subjectAltName=DNS:{SERVICE}.{NAMESPACE}.svc,IP:127.0.0.1\n"
                                    "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "3650", "-out", "tls.crt", "-extfile", "ext.cnf")
    # cert-controller reads the CA key as PKCS #1 ("RSA PRIVATE KEY"); OpenSSL 3 writes PKCS #8.
    for key in ("ca.key", "tls.key"):
        openssl("rsa", "-in", key, "-out", key, "-traditional")
    return {name: (folder / name).read_bytes() for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")}


def _crds(cp: ControlPlane, source: Path, url: str, ca: bytes) -> None:
    folder = cp.workdir / "kueue-crds"
    folder.mkdir(exist_ok=True)
    for path in sorted((source / "config" / "components" / "crd" / "bases").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["plural"] in CONVERTED:
            # What upstream's patches/webhook_in_*.yaml add, by URL instead of Service.
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": f"{url}/convert", "caBundle": base64.b64encode(ca).decode()}}}
        (folder / f"{path.stem}.json").write_text(json.dumps(crd))
    cp.kubectl("apply", "--server-side", "-f", str(folder))
    # kubectl wait fails at once on a CRD the API server has not given a status yet.
    wait_until("Kueue's CRDs Established", lambda: cp.kubectl(
        "wait", "--for=condition=Established", "--timeout=20s", "-f", str(folder), check=False).returncode == 0,
        timeout=120)


def _webhooks(cp: ControlPlane, source: Path, url: str, ca: bytes) -> None:
    configs = []
    for config in yaml.safe_load_all((source / "config" / "components" / "webhook" / "manifests.yaml").read_text()):
        # config/default names them with the prefix "kueue-": the names cert-controller fills.
        config["metadata"]["name"] = f"kueue-{config['metadata']['name']}"
        kept = []
        for hook in config["webhooks"]:
            if not {r for rule in hook["rules"] for r in rule["resources"]} & KEPT:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": url + path, "caBundle": base64.b64encode(ca).decode()}
            kept.append(hook)
        config["webhooks"] = kept
        configs.append(config)
    cp.kubectl("apply", "-f", "-", input="\n".join(json.dumps(c) for c in configs))


def start_kueue(cp: ControlPlane) -> None:
    """Kueue's CRDs, webhooks and controller on ``cp``, ready to admit RayJobs."""
    source = cp.source(MODULE)
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    certs = cp.workdir / "kueue-certs"
    files = _certificates(certs)
    cp.add_deployment(NAMESPACE, "kueue-controller-manager", f"registry.k8s.io/kueue/kueue:{pinned(MODULE)}")
    cp.kubectl("create", "secret", "generic", SECRET, "-n", NAMESPACE,
               *(f"--from-file={name}={certs / name}" for name in files))
    _crds(cp, source, url, files["ca.crt"])
    _webhooks(cp, source, url, files["ca.crt"])
    health = f"127.0.0.1:{free_port()}"
    config = cp.workdir / "kueue-config.yaml"
    config.write_text(json.dumps({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": health},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": port, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": True, "webhookServiceName": SERVICE, "webhookSecretName": SECRET},
        "integrations": {"frameworks": ["ray.io/rayjob"]},
        # What the kueue plugin's README adds to the chart's configuration: the teams' queues share
        # the pool by admission fair sharing (the feature gate is on by default from v0.15).
        "admissionFairSharing": {"usageHalfLifeTime": "168h", "usageSamplingInterval": "5m",
                                 "resourceWeights": {"cpu": 0, "memory": 0, "nvidia.com/gpu": 1}},
    }))
    cp.spawn("kueue", [cp.tool("kueue"), "--config", str(config), "--visibility-server-port", str(free_port()),
                       # Its extension API server would need the API server's aggregation layer.
                       "--feature-gates=VisibilityOnDemand=false"], env=cp.env())
    wait_until("Kueue's /readyz", lambda: _ready(health), timeout=120, on_timeout=lambda: cp.logs(30))


def _ready(address: str) -> bool:
    with urllib.request.urlopen(f"http://{address}/readyz", timeout=2) as response:
        return response.status == 200

