"""What ACK's managed add-ons leave on a cluster before the first sync, for a repository whose
objects are partial ones the add-ons created (the ALB Ingress controller's AlbConfig, the
ack-sandbox-manager add-on's Ingress): the AlbConfig CRD, each such object as the add-on creates
it, and the address the ALB Ingress controller writes once its ALB serves an Ingress (Argo CD
counts an Ingress healthy only with one). No ALB exists: the address is a stand-in's."""
from __future__ import annotations

import json

from rlgen.e2e.controlplane import ControlPlane

GROUP = "alibabacloud.com"
#: The DNS name ACK gives an ALB instance (the form of its console's "DNS name").
ALB_ADDRESS = "alb-rlgen-e2e.cn-hangzhou.alb.aliyuncsslb.com"
#: The annotations a repository marks an object the add-ons created with (server-side apply of
#: its own fields only, never pruned): Flux's and Argo CD's.
SHARED = {"kustomize.toolkit.fluxcd.io/ssa": "Merge"}
ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"


def albconfig_crd() -> dict:
    """The CRD the ALB Ingress controller registers when it starts. Upstream ships no manifest of
    it: alibaba/alibaba-load-balancer-controller v1.2.0 builds it in code (``crd.Conf`` in
    pkg/controller/ingress/register.go, ``EnsurePresent`` in pkg/util/crd/crd.go) with a schema
    that keeps every field (docs/upstream.md). The same facts here, as that code states them."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "albconfigs.alibabacloud.com"},
        "spec": {"group": GROUP, "scope": "Cluster",
                 "names": {"kind": "AlbConfig", "plural": "albconfigs", "listKind": "AlbConfigList",
                           "singular": "albconfig", "categories": ["all", "kooper"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def console_albconfig(name: str) -> dict:
    """The AlbConfig ACK's console creates with the ALB Ingress controller: its defaults, one
    HTTP:80 listener, two zones (the vSwitch ids are the stand-in's)."""
    return {"apiVersion": f"{GROUP}/v1", "kind": "AlbConfig", "metadata": {"name": name},
            "spec": {"config": {"name": name, "addressType": "Internet",
                                "zoneMappings": [{"vSwitchId": "vsw-e2e-a"}, {"vSwitchId": "vsw-e2e-b"}]},
                     "listeners": [{"port": 80, "protocol": "HTTP"}]}}


def addon_ingress(name: str, namespace: str) -> dict:
    """An add-on's Ingress behind ALB: IngressClass ``alb``, its Service of the same name on port 80."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"ingressClassName": "alb", "rules": [{"http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}]}}


def shared(obj: dict) -> bool:
    """Whether the repository marks ``obj`` as one an add-on created (it applies only its fields)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    argo = annotations.get(ARGO_SYNC_OPTIONS, "")
    return (all(annotations.get(k) == v for k, v in SHARED.items())
            or ("ServerSideApply=true" in argo and "Prune=false" in argo))


def install(cp: ControlPlane, needs) -> list[str]:
    """The add-ons' objects the repository's partial objects complete; what was installed, one
    line each (none when the repository has no such object)."""
    albconfigs = [o for (api, kind), objs in needs.custom.items() if kind == "AlbConfig"
                  and api.startswith(GROUP + "/") for o in objs]
    ingresses = [o for o in needs.custom.get(("networking.k8s.io/v1", "Ingress"), []) if shared(o)]
    done = []
    if albconfigs:
        cp.kubectl("apply", "-f", "-", input=json.dumps(albconfig_crd()))
        cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "crd", "albconfigs.alibabacloud.com")
        for obj in albconfigs:
            cp.kubectl("create", "-f", "-", input=json.dumps(console_albconfig(obj["metadata"]["name"])))
        done.append(f"ALB Ingress controller's AlbConfig {', '.join(o['metadata']['name'] for o in albconfigs)} "
                    "as ACK's console creates it")
    for obj in ingresses:
        meta = obj["metadata"]
        cp.kubectl("create", "namespace", meta["namespace"], check=False)
        cp.kubectl("create", "-f", "-", input=json.dumps(addon_ingress(meta["name"], meta["namespace"])))
        add_address(cp, meta["name"], meta["namespace"])
        done.append(f"the add-on's Ingress {meta['namespace']}/{meta['name']}, its ALB address {ALB_ADDRESS}")
    return done


def add_address(cp: ControlPlane, name: str, namespace: str) -> None:
    """What the ALB Ingress controller writes once the ALB serves the Ingress: its address."""
    address = {"status": {"loadBalancer": {"ingress": [{"hostname": ALB_ADDRESS}]}}}
    cp.kubectl("patch", "ingress", name, "-n", namespace, "--subresource=status", "--type=merge",
               "-p", json.dumps(address))
