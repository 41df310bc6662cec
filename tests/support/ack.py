"""What ACK leaves on a cluster whose team uses its managed add-ons, put there before the first
sync as the README asks: the ALB Ingress controller's AlbConfig ``alb`` and CRD, the
ack-sandbox-manager add-on's CRDs, Namespace and Ingress. No ACK controller runs."""
from __future__ import annotations

import json

from support.toolchain import PROJECT

DOMAIN = "sandbox.rl-team.cn"
ROLE = "rl-oss-volumes"
PIPELINE_ROLE = "rl-oss-pipeline"
SANDBOX_NAMESPACE = "sandbox-system"
#: The DNS name ACK gives an ALB instance (the form of its console's "DNS name").
ALB_ADDRESS = "alb-e2e.cn-hangzhou.alb.aliyuncsslb.com"


def albconfig_crd() -> dict:
    """The CRD the ALB Ingress controller registers when it starts. Upstream ships no manifest of
    it: alibaba/alibaba-load-balancer-controller v1.2.0 builds it in code (``crd.Conf`` in
    pkg/controller/ingress/register.go, ``EnsurePresent`` in pkg/util/crd/crd.go) with a schema
    that keeps every field (docs/upstream.md). The same facts here, as that code states them."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "albconfigs.alibabacloud.com"},
        "spec": {"group": "alibabacloud.com", "scope": "Cluster",
                 "names": {"kind": "AlbConfig", "plural": "albconfigs", "listKind": "AlbConfigList",
                           "singular": "albconfig", "categories": ["all", "kooper"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"x-kubernetes-preserve-unknown-fields": True}}}]},
    }


#: What ACK leaves when the ALB Ingress controller and ack-sandbox-manager are installed: the
#: AlbConfig of the console's defaults (one HTTP:80 listener) and the add-on's Ingress.
ACK_ALBCONFIG = {
    "apiVersion": "alibabacloud.com/v1", "kind": "AlbConfig", "metadata": {"name": "alb"},
    "spec": {"config": {"name": "alb", "addressType": "Internet",
                        "zoneMappings": [{"vSwitchId": "vsw-e2e-a"}, {"vSwitchId": "vsw-e2e-b"}]},
             "listeners": [{"port": 80, "protocol": "HTTP"}]},
}
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
    # What the ALB Ingress controller writes once the ALB serves the Ingress: its address. Argo CD
    # counts an Ingress healthy only with one (its built-in Ingress health check).
    address = {"status": {"loadBalancer": {"ingress": [{"hostname": ALB_ADDRESS}]}}}
    cp.kubectl("patch", "ingress", ACK_INGRESS["metadata"]["name"], "-n", SANDBOX_NAMESPACE, "--subresource=status",
               "--type=merge", "-p", json.dumps(address))
