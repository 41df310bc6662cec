"""The wiring of the MCP sandbox: the trainer's MCP server URL reaches a rendered Service and
port, and each ALB listen port of the sandbox Ingress has an AlbConfig listener."""
from __future__ import annotations

import json
from typing import Iterator
from urllib.parse import urlsplit

from rlgen.repo.objects import get
from rlgen.rules.base import Finding, Rendered


def mcp_rules(objects: list[Rendered]) -> Iterator[Finding]:
    services = {}
    for o in objects:
        if o.obj.get("kind") == "Service":
            ports = {p.get("port") for p in get(o.obj, "spec", "ports", default=[])}
            services[(get(o.obj, "metadata", "name"), get(o.obj, "metadata", "namespace"))] = ports
    for item in objects:
        if item.obj.get("kind") != "ConfigMap":
            continue
        raw = (item.obj.get("data") or {}).get("mcp_server.json")
        try:
            servers = json.loads(raw)["mcpServers"] if raw else {}
        except (ValueError, KeyError, TypeError):
            continue  # json_rules reports it
        for name, server in servers.items():
            url = urlsplit(server.get("url", ""))
            host = (url.hostname or "").split(".")
            key = (host[0], host[1] if len(host) > 1 else get(item.obj, "metadata", "namespace"))
            port = url.port or (443 if url.scheme == "https" else 80)
            if key not in services:
                yield Finding(item.source, item.label,
                              f"MCP server '{name}' points at {url.hostname}, which is no rendered Service")
            elif port not in services[key]:
                yield Finding(item.source, item.label,
                              f"MCP server '{name}' uses port {port}, which Service {key[1]}/{key[0]} does not expose")


def alb_rules(objects: list[Rendered]) -> Iterator[Finding]:
    listeners = {(l.get("port"), str(l.get("protocol", "")).upper())
                 for o in objects if o.obj.get("kind") == "AlbConfig"
                 for l in get(o.obj, "spec", "listeners", default=[])}
    for item in objects:
        if item.obj.get("kind") != "Ingress":
            continue
        raw = get(item.obj, "metadata", "annotations", "alb.ingress.kubernetes.io/listen-ports")
        if not raw:
            continue
        try:
            entries = json.loads(raw)
        except ValueError:
            yield Finding(item.source, item.label, "alb.ingress.kubernetes.io/listen-ports is not JSON")
            continue
        for entry in entries:
            for protocol, port in entry.items():
                if (port, protocol.upper()) not in listeners:
                    yield Finding(item.source, item.label,
                                  f"listen-ports {protocol}:{port} has no AlbConfig listener; ALB skips its rules")


def sandbox_isolation_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """Sandboxes run model-written code: never in the trainer's namespace, without a
    service-account token, and behind a NetworkPolicy that denies their egress."""
    ray_namespaces = {get(o.obj, "metadata", "namespace") for o in objects if o.obj.get("kind") == "RayJob"}
    policies = [o.obj for o in objects if o.obj.get("kind") == "NetworkPolicy"]
    for item in objects:
        if item.obj.get("kind") != "SandboxSet":
            continue
        ns = get(item.obj, "metadata", "namespace")
        if ns in ray_namespaces:
            yield Finding(item.source, item.label, f"sandboxes share namespace {ns} with the RayJobs: model-written "
                                                   "code would sit beside the trainer's Secrets and its Ray dashboard")
        if get(item.obj, "spec", "template", "spec", "automountServiceAccountToken") is not False:
            yield Finding(item.source, item.label, "the sandbox pod template mounts a service-account token: set "
                                                   "automountServiceAccountToken: false")
        if not any(_denies_egress(p) for p in policies if get(p, "metadata", "namespace") == ns):
            yield Finding(item.source, item.label, f"no NetworkPolicy in {ns} denies the sandboxes' egress (podSelector "
                                                   "{} with policyType Egress and no rule open to everything)")


def _denies_egress(policy: dict) -> bool:
    spec = policy.get("spec") or {}
    rules = spec.get("egress") or []
    return (spec.get("podSelector") or {}) == {} and "Egress" in (spec.get("policyTypes") or []) \
        and not any(rule in ({}, None) or not rule.get("to") for rule in rules)


#: The kustomize root of openkruise/agents that applies the sandbox manager (and, upstream, an
#: nginx Ingress for the placeholder hosts replace.with.your.domain).
MANAGER_ROOT = "config/sandbox-manager"


def upstream_ingress_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """The sync stage applying upstream's sandbox-manager root must delete its placeholder Ingress."""
    for item in objects:
        obj, kind = item.obj, item.obj.get("kind")
        if kind == "Kustomization" and str(obj.get("apiVersion", "")).startswith("kustomize.toolkit.fluxcd.io"):
            path, patches = get(obj, "spec", "path", default=""), get(obj, "spec", "patches", default=[])
        elif kind == "Application" and str(obj.get("apiVersion", "")).startswith("argoproj.io"):
            path = get(obj, "spec", "source", "path", default="")
            patches = get(obj, "spec", "source", "kustomize", "patches", default=[])
        else:
            continue
        if str(path).removeprefix("./").strip("/") != MANAGER_ROOT:
            continue
        if not any(get(p, "target", "kind") == "Ingress" and "$patch: delete" in str(p.get("patch", ""))
                   for p in patches or []):
            yield Finding(item.source, item.label, f"applies upstream's {MANAGER_ROOT} without deleting its nginx "
                                                   "Ingress for placeholder hosts (a $patch: delete entry)")
