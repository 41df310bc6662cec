"""Rules that no schema holds: KubeRay's controller-side checks, verl's batch arithmetic,
references between objects, and the wiring of the MCP sandbox and the ALB listeners.

Every rule takes the rendered objects of the whole repository and yields findings naming
the object; none of them needs a cluster.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Iterable, Iterator
from urllib.parse import urlsplit

from rlgen.naming import MAX_RAYJOB_NAME, dns1035_label_error
from rlgen.tools.yamlio import read_plain_all
from rlgen.verl.trainer_config import deep_merge

SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
#: Core and CRD kinds whose objects carry pod templates, and where.
POD_PATHS = {
    "Job": [("spec", "template", "spec")],
    "Deployment": [("spec", "template", "spec")],
    "StatefulSet": [("spec", "template", "spec")],
    "DaemonSet": [("spec", "template", "spec")],
    "SandboxSet": [("spec", "template", "spec")],
    "RayJob": [("spec", "rayClusterSpec", "headGroupSpec", "template", "spec")],
}
_UNESCAPED_VAR = re.compile(r"(?<!\$)\$\{[^}]*\}")


@dataclass(frozen=True)
class Finding:
    source: str
    obj: str
    message: str


@dataclass(frozen=True)
class Rendered:
    """One rendered object and the kustomization root (or file) it came from."""

    source: str
    obj: dict

    @property
    def label(self) -> str:
        meta = self.obj.get("metadata", {})
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.obj.get('kind')}/{ns}{meta.get('name')}"


def _get(obj, *path, default=None):
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def pod_specs(obj: dict) -> list[dict]:
    specs = [s for path in POD_PATHS.get(obj.get("kind"), []) if (s := _get(obj, *path))]
    if obj.get("kind") == "RayJob":
        specs += [g["template"]["spec"] for g in _get(obj, "spec", "rayClusterSpec", "workerGroupSpecs", default=[])
                  if _get(g, "template", "spec")]
    return specs


def check(objects: list[Rendered], external_secrets: Iterable[str] = ()) -> list[Finding]:
    rules = (rayjob_rules, reference_rules(set(external_secrets)), trainer_rules, json_rules, mcp_rules,
             alb_rules, image_rules, substitution_rules)
    return [f for rule in rules for f in rule(objects)]


def rayjob_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        job = item.obj
        if job.get("kind") != "RayJob":
            continue
        say = lambda message: Finding(item.source, item.label, message)
        name = _get(job, "metadata", "name", default="")
        if error := dns1035_label_error(name, MAX_RAYJOB_NAME):
            yield say(f"RayJob name: {error} (KubeRay appends a suffix for the RayCluster)")
        spec = job.get("spec", {})
        mode = spec.get("submissionMode", "K8sJobMode")
        if mode not in SUBMISSION_MODES:
            yield say(f"submissionMode '{mode}' is not one of {', '.join(SUBMISSION_MODES)}")
        if mode == "SidecarMode":
            restart = _get(spec, "rayClusterSpec", "headGroupSpec", "template", "spec", "restartPolicy")
            if restart not in (None, "Never"):
                yield say(f"SidecarMode needs the head pod's restartPolicy Never or unset, not {restart}")
            for field in ("clusterSelector", "submitterPodTemplate", "submitterConfig"):
                if field in spec:
                    yield say(f"SidecarMode does not allow {field}")
        if spec.get("ttlSecondsAfterFinished", 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
            yield say("ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true")
        for rule in _get(spec, "deletionStrategy", "deletionRules", default=[]):
            if rule.get("policy") == "DeleteSelf":
                yield say("a DeleteSelf deletion rule makes the sync engine re-create the RayJob and train again")


def reference_rules(external_secrets: set[str]):
    def rule(objects: list[Rendered]) -> Iterator[Finding]:
        present = {(o.obj.get("kind"), _get(o.obj, "metadata", "namespace"), _get(o.obj, "metadata", "name"))
                   for o in objects}
        for item in objects:
            ns = _get(item.obj, "metadata", "namespace")
            for pod in pod_specs(item.obj):
                for kind, name in _pod_references(pod):
                    if (kind, ns, name) in present or (kind == "Secret" and name in external_secrets):
                        continue
                    if kind == "ServiceAccount" and name == "default":
                        continue
                    yield Finding(item.source, item.label,
                                  f"{kind} '{name}' is referenced but neither rendered in namespace {ns} "
                                  "nor declared external in rlgen.yaml")
    return rule


def _pod_references(pod: dict) -> Iterator[tuple[str, str]]:
    if sa := pod.get("serviceAccountName"):
        yield "ServiceAccount", sa
    for volume in pod.get("volumes", []):
        if claim := _get(volume, "persistentVolumeClaim", "claimName"):
            yield "PersistentVolumeClaim", claim
        if cm := _get(volume, "configMap", "name"):
            yield "ConfigMap", cm
        if secret := _get(volume, "secret", "secretName"):
            yield "Secret", secret
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        for env in container.get("env", []):
            ref = _get(env, "valueFrom", "secretKeyRef")
            if ref and not ref.get("optional"):
                yield "Secret", ref["name"]
            ref = _get(env, "valueFrom", "configMapKeyRef")
            if ref and not ref.get("optional"):
                yield "ConfigMap", ref["name"]
        for source in container.get("envFrom", []):
            if (ref := source.get("secretRef")) and not ref.get("optional"):
                yield "Secret", ref["name"]
            if (ref := source.get("configMapRef")) and not ref.get("optional"):
                yield "ConfigMap", ref["name"]
    for secret in pod.get("imagePullSecrets", []):
        yield "Secret", secret["name"]


def trainer_config(configmap: dict) -> dict | None:
    """The trainer config a run's pod sees: trainer.yaml, then run.yaml on top."""
    data = configmap.get("data") or {}
    if "trainer.yaml" not in data:
        return None
    merged = next(iter(read_plain_all(data["trainer.yaml"])), {})
    if "run.yaml" in data:
        deep_merge(merged, next(iter(read_plain_all(data["run.yaml"])), {}))
    return merged


def trainer_rules(objects: list[Rendered]) -> Iterator[Finding]:
    configmaps = {(_get(o.obj, "metadata", "namespace"), _get(o.obj, "metadata", "name")): o.obj
                  for o in objects if o.obj.get("kind") == "ConfigMap"}
    for item in objects:
        if item.obj.get("kind") != "RayJob":
            continue
        ns = _get(item.obj, "metadata", "namespace")
        say = lambda message: Finding(item.source, item.label, message)
        pods = pod_specs(item.obj)
        config = next((c for pod in pods for v in pod.get("volumes", [])
                       if (name := _get(v, "configMap", "name")) and (c := configmaps.get((ns, name)))
                       and trainer_config(c) is not None), None)
        if config is None:
            continue
        cfg = trainer_config(config)
        gpus_per_node = _get(cfg, "trainer", "n_gpus_per_node", default=0)
        nnodes = _get(cfg, "trainer", "nnodes", default=1)
        wanted = gpus_per_node * nnodes
        requested = sum(_gpus(pod) * _replicas(item.obj, i) for i, pod in enumerate(pods))
        if requested != wanted:
            yield say(f"the RayJob's pods request {requested} GPUs but the trainer expects "
                      f"n_gpus_per_node x nnodes = {gpus_per_node} x {nnodes} = {wanted}")
        tp = _get(cfg, "actor_rollout_ref", "rollout", "tensor_model_parallel_size", default=1)
        if gpus_per_node and gpus_per_node % tp:
            yield say(f"tensor_model_parallel_size {tp} does not divide n_gpus_per_node {gpus_per_node}")
        batch = _get(cfg, "data", "train_batch_size", default=0)
        n = _get(cfg, "actor_rollout_ref", "rollout", "n", default=1)
        if wanted and (batch * n) % wanted:
            yield say(f"data.train_batch_size x rollout.n = {batch} x {n} is not divisible by {wanted} GPUs")
        mini = _get(cfg, "actor_rollout_ref", "actor", "ppo_mini_batch_size", default=0)
        if batch < mini:
            yield say(f"data.train_batch_size {batch} is smaller than actor.ppo_mini_batch_size {mini}")


def _gpus(pod: dict) -> int:
    total = 0
    for container in pod.get("containers", []):
        limits = _get(container, "resources", "limits", default={}) or {}
        total += int(str(limits.get("nvidia.com/gpu", 0)))
    return total


def _replicas(rayjob: dict, index: int) -> int:
    """Pod 0 is the head; pod i is worker group i-1 with its replicas (x numOfHosts)."""
    if index == 0:
        return 1
    group = _get(rayjob, "spec", "rayClusterSpec", "workerGroupSpecs", default=[])[index - 1]
    return group.get("replicas", group.get("minReplicas", 1)) * group.get("numOfHosts", 1)


def json_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        if item.obj.get("kind") != "ConfigMap":
            continue
        for key, value in (item.obj.get("data") or {}).items():
            if key.endswith(".json"):
                try:
                    json.loads(value)
                except ValueError as exc:
                    yield Finding(item.source, item.label, f"{key} is not valid JSON: {exc}")


def mcp_rules(objects: list[Rendered]) -> Iterator[Finding]:
    services = {}
    for o in objects:
        if o.obj.get("kind") == "Service":
            ports = {p.get("port") for p in _get(o.obj, "spec", "ports", default=[])}
            services[(_get(o.obj, "metadata", "name"), _get(o.obj, "metadata", "namespace"))] = ports
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
            key = (host[0], host[1] if len(host) > 1 else _get(item.obj, "metadata", "namespace"))
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
                 for l in _get(o.obj, "spec", "listeners", default=[])}
    for item in objects:
        if item.obj.get("kind") != "Ingress":
            continue
        raw = _get(item.obj, "metadata", "annotations", "alb.ingress.kubernetes.io/listen-ports")
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


def image_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        for pod in pod_specs(item.obj):
            for container in pod.get("containers", []) + pod.get("initContainers", []):
                image = container.get("image", "")
                name = image.split("@")[0]
                tag = name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""
                if "@" not in image and tag in ("", "latest"):
                    yield Finding(item.source, item.label,
                                  f"container {container.get('name')} image '{image}' is not pinned (tag or digest)")


def substitution_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """Flux post-build substitution turns an unknown ``${var}`` into an empty string."""
    substituted = {str(_get(o.obj, "spec", "path", default="")).strip("./")
                   for o in objects if o.obj.get("kind") == "Kustomization"
                   and str(o.obj.get("apiVersion", "")).startswith("kustomize.toolkit.fluxcd.io")
                   and _get(o.obj, "spec", "postBuild")}
    for item in objects:
        if item.source.strip("./") not in substituted:
            continue
        annotations = _get(item.obj, "metadata", "annotations", default={}) or {}
        if annotations.get("kustomize.toolkit.fluxcd.io/substitute") == "disabled":
            continue
        if match := _UNESCAPED_VAR.search(json.dumps(item.obj)):
            yield Finding(item.source, item.label,
                          f"'{match.group()}' would be replaced by Flux post-build substitution; "
                          "write $${...} or annotate kustomize.toolkit.fluxcd.io/substitute: disabled")
