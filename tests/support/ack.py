"""What ACK leaves on a cluster whose team uses its managed add-ons, put there before the first
sync as the README asks: the ALB Ingress controller's AlbConfig ``alb`` and CRD, the
ack-sandbox-manager add-on's CRDs, Namespace and Ingress. No ACK controller runs."""
from __future__ import annotations

import json

from rlgen.e2e.ack_addons import add_address, albconfig_crd, console_albconfig
from support.toolchain import PROJECT

DOMAIN = "sandbox.rl-team.cn"
ROLE = "rl-oss-volumes"
PIPELINE_ROLE = "rl-oss-pipeline"
SANDBOX_NAMESPACE = "sandbox-system"


#: What ACK leaves when the ALB Ingress controller and ack-sandbox-manager are installed: the
#: AlbConfig of the console's defaults (one HTTP:80 listener) and the add-on's Ingress.
ACK_ALBCONFIG = console_albconfig("alb")
ACK_INGRESS = {
    "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
    "metadata": {"name": "sandbox-manager", "namespace": SANDBOX_NAMESPACE},
    "spec": {"ingressClassName": "alb", "rules": [
        {"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
            "service": {"name": "sandbox-manager", "port": {"number": 80}}}}]}}
        for host in (DOMAIN, f"*.{DOMAIN}")]},
}


def install_ack_addons(cp) -> None:
    for crd in sorted((PROJECT / "upstream" / "crds").glob("agents.kruise.io_*.yaml")):
        cp.kubectl("apply", "--server-side", "-f", str(crd))
    cp.kubectl("apply", "-f", "-", input=json.dumps(albconfig_crd()))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "crd", "albconfigs.alibabacloud.com",
               "sandboxsets.agents.kruise.io")
    cp.kubectl("create", "namespace", SANDBOX_NAMESPACE)
    for obj in (ACK_ALBCONFIG, ACK_INGRESS):
        cp.kubectl("create", "-f", "-", input=json.dumps(obj))
    # Argo CD counts an Ingress healthy only with the address the ALB Ingress controller writes.
    add_address(cp, ACK_INGRESS["metadata"]["name"], SANDBOX_NAMESPACE)
