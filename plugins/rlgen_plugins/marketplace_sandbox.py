"""Sandbox plugin: the ACK add-ons ack-agent-sandbox-controller and ack-sandbox-manager.

ACK installs and upgrades the add-ons, so the repository keeps their parameters as a
reviewed file and, on the objects ACK created, owns only the fields the tutorial changes.
Everything the trainer uses (Service, SandboxSet, MCP tool) is shared with the open-source
plugin; only the pods the Service selects differ.
"""
from __future__ import annotations

import json
import re

from rlgen.plugin_api import Layer, Option, PluginInfo, Problem, Resource, SecretRef, hookimpl

from rlgen_plugins import _sandbox_common

# The MCP tool, its server list and its packages are the same for both sandbox plugins.
from rlgen_plugins._sandbox_common import (  # noqa: F401
    rlgen_config_files,
    rlgen_patches,
    rlgen_tools,
    rlgen_training_packages,
)

NAME = "marketplace-sandbox"
VALUES_FILE = "infrastructure/ack-sandbox-manager-values.yaml"
#: The Ingress ack-sandbox-manager creates for the E2B API.
INGRESS = "sandbox-manager"
ADMIN_KEY_SECRET = _sandbox_common.ADMIN_KEY_SECRET
ADMIN_KEY = _sandbox_common.ADMIN_KEY
#: Port of the MCP endpoint in the add-on's sandbox-manager image (the tutorial's Service
#: targets it); upstream's MCP server defaults to 8082, the add-on's port is not published.
MCP_TARGET_PORT = 18082
#: The add-on's sandbox-manager pods. The tutorial also selects app.kubernetes.io/instance:
#: release-name, a Helm template placeholder that no ACK-installed pod carries.
MANAGER_LABELS = {"app.kubernetes.io/name": "ack-sandbox-manager", "component": "sandbox-manager"}
LISTEN_PORTS = [{"HTTP": 80}, {"HTTPS": 443}]
#: For objects ACK created: apply only the fields given here (server-side apply), and never
#: delete the object when it leaves Git.
SHARED_OBJECT = {
    "kustomize.toolkit.fluxcd.io/ssa": "Merge",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
    "argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false",
}
_SHARED_NOTE = (
    "Partial object, applied with server-side apply (Flux ssa: Merge, Argo CD ServerSideApply=true):\n"
    "GitOps owns only the fields below and ACK keeps the rest; prune and delete are off because\n"
    "ACK, not this repository, created the object. The add-on must be installed before the first sync.")

_DNS_NAME = re.compile(r"(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+")


def _domain_error(value: str) -> str | None:
    if _DNS_NAME.fullmatch(value):
        return None
    return f"'{value}' is not a lower-case DNS name like sandbox.example.com (no scheme, port or wildcard)"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="sandbox",
        summary="ACK add-ons ack-agent-sandbox-controller + ack-sandbox-manager (E2B API behind ALB or MSE)",
        options=(
            Option("domain", "E2B domain of the sandbox manager (DNS for it and *.<domain>)", required=True,
                   check=_domain_error),
            Option("ingress_class", "IngressClass the add-on's Ingress uses", "alb", choices=("alb", "mse")),
            Option("certificate_id", "Certificate Management Service id for the HTTPS:443 ALB listener, "
                   "e.g. <id>-<region> (empty: ALB finds one for the Ingress TLS hosts)", ""),
            Option("alb_config", "AlbConfig behind IngressClass alb (ACK names it alb)", "alb"),
        ) + _sandbox_common.OPTIONS,
    )


@hookimpl
def rlgen_check(ctx):
    o = ctx.options(NAME)
    problems = []
    if o["ingress_class"] != "alb" and o["certificate_id"]:
        problems.append(Problem(
            f"certificate_id is for the ALB HTTPS listener, but ingress_class is {o['ingress_class']}: "
            "drop certificate_id or use ingress_class alb", (NAME,)))
    return problems


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    out = [_sandbox_common.mcp_service(ctx, MANAGER_LABELS, MCP_TARGET_PORT), _sandbox_common.sandbox_set(ctx, o),
           *_sandbox_common.isolation(ctx)]
    if o["ingress_class"] == "alb":
        out += _alb_https(ctx, o)
    return out


def _alb_https(ctx, o: dict) -> list[Resource]:
    https = {"port": 443, "protocol": "HTTPS"}
    if o["certificate_id"]:
        https["certificates"] = [{"CertificateId": o["certificate_id"], "IsDefault": True}]
        certificate = "Certificate keys are PascalCase, unlike the camelCase ones ALB reports in status."
    else:
        certificate = ("No certificate listed: ALB picks certificates matching the Ingress TLS hosts from\n"
                       "Certificate Management Service (set certificate_id to pin one).")
    albconfig = {
        "apiVersion": "alibabacloud.com/v1",
        "kind": "AlbConfig",
        "metadata": {"name": o["alb_config"], "annotations": dict(SHARED_OBJECT)},
        "spec": {"listeners": [{"port": 80, "protocol": "HTTP"}, https]},
    }
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": INGRESS,
            "namespace": ctx.spec.sandbox_namespace,
            "annotations": {"alb.ingress.kubernetes.io/listen-ports": json.dumps(LISTEN_PORTS), **SHARED_OBJECT},
        },
    }
    return [
        Resource(Layer.INFRASTRUCTURE, "albconfig.yaml", albconfig,
                 "The HTTPS:443 listener the E2B API needs, on the AlbConfig that ACK created with the\n"
                 "ALB Ingress controller.\n" + _SHARED_NOTE + "\n"
                 "spec.listeners is an atomic list: whoever applies it sets every listener. So port 80 is\n"
                 "listed again, and a listener added in the console is removed at the next sync: add it here.\n"
                 + certificate),
        Resource(Layer.INFRASTRUCTURE, "ingress.yaml", ingress,
                 "Puts the add-on's sandbox-manager Ingress on both listeners; ALB silently skips rules for a\n"
                 "port that has no listener, so this and the AlbConfig change go together.\n" + _SHARED_NOTE),
    ]


@hookimpl
def rlgen_files(ctx):
    o = ctx.options(NAME)
    ns = ctx.spec.sandbox_namespace
    text = f"""\
# Parameters of the ACK add-ons ack-agent-sandbox-controller and ack-sandbox-manager.
# ACK installs add-ons from the console or its API, not from Kubernetes objects: no sync engine
# applies this file. It is the reviewed record of what to enter when installing or upgrading.
# ACK documents only className, domain and adminApiKey publicly; the other keys follow the
# console's parameter labels and may be spelled differently in the add-on's form.
sandboxManager:
  replicaCount: 3
e2b:
  domain: {o['domain']}
  # "Enable E2B_API_KEY verification": every E2B call must carry an API key.
  enableAuth: true
  # adminApiKey is never written here. Enter it from the Secret that holds it:
  #   kubectl get secret {ADMIN_KEY_SECRET} -n {ns} -o jsonpath='{{.data.{ADMIN_KEY}}}' | base64 -d
controller:
  logLevel: 1
  resources:
    requests:
      cpu: "2"
      memory: 4Gi
proxy:
  resources:
    requests:
      cpu: "2"
      memory: 4Gi
ingress:
  className: {o['ingress_class']}
"""
    return {VALUES_FILE: text}


@hookimpl
def rlgen_secrets(ctx):
    return [SecretRef(ADMIN_KEY_SECRET, ctx.spec.sandbox_namespace, (ADMIN_KEY,),
                      "initial admin API key of the E2B API (a long random string)",
                      f"the ack-sandbox-manager add-on parameter adminApiKey ({VALUES_FILE})"),
            _sandbox_common.trainer_key_secret(ctx)]


@hookimpl
def rlgen_readme(ctx):
    o = ctx.options(NAME)
    ns = ctx.spec.sandbox_namespace
    if o["ingress_class"] == "alb":
        ingress = ("an ALB Ingress controller (IngressClass `alb`; its AlbConfig is "
                   f"`{o['alb_config']}`)")
        synced = ("Then the sync engine adds the HTTPS:443 listener to the AlbConfig and the "
                  "`alb.ingress.kubernetes.io/listen-ports` annotation to the `sandbox-manager` Ingress "
                  "(`components/marketplace-sandbox/infrastructure/`), owning only those fields.")
    else:
        ingress = "an MSE Ingress controller (IngressClass `mse`)"
        synced = "The MSE gateway needs no change from this repository."
    return [
        "## Sandbox: ACK marketplace add-ons\n"
        "Install, in this order, from the cluster's Add-ons page:\n\n"
        f"1. {ingress};\n"
        "2. `ack-agent-sandbox-controller` with its defaults;\n"
        f"3. create the Secret `{ADMIN_KEY_SECRET}` (see *Secrets* above);\n"
        f"4. `ack-sandbox-manager` with the parameters in `{VALUES_FILE}`, and `adminApiKey` read from that "
        "Secret.\n\n"
        f"Point DNS for `{o['domain']}` and `*.{o['domain']}` at the Ingress address, with a certificate for "
        f"both. {synced} The trainer reaches the sandbox manager inside the cluster through the Service "
        f"`{ctx.spec.mcp_service}` in `{ns}`. " + _sandbox_common.mcp_unverified(ctx) + _sandbox_common.isolation_note(ctx)
    ]
