"""KubeRay's controller-side checks of a RayJob, and the GPUs its pods request against what
the trainer config expects (verl's batch arithmetic over the world size)."""
from __future__ import annotations

from typing import Iterator

from rlgen.naming import MAX_RAYJOB_NAME, dns1035_label_error
from rlgen.spec import Spec
from rlgen.repo.objects import get, pod_specs
from rlgen.rules.base import Finding, Rendered
from rlgen.verl import batch_rules, releases
from rlgen.verl.trainer_config import effective_config

SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")


def rayjob_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        job = item.obj
        if job.get("kind") != "RayJob":
            continue
        say = lambda message: Finding(item.source, item.label, message)
        name = get(job, "metadata", "name", default="")
        if error := dns1035_label_error(name, MAX_RAYJOB_NAME):
            yield say(f"RayJob name: {error} (KubeRay appends a suffix for the RayCluster)")
        spec = job.get("spec", {})
        mode = spec.get("submissionMode", "K8sJobMode")
        if mode not in SUBMISSION_MODES:
            yield say(f"submissionMode '{mode}' is not one of {', '.join(SUBMISSION_MODES)}")
        if mode == "SidecarMode":
            yield from map(say, _sidecar_problems(spec))
        if mode == "K8sJobMode" and int(get(spec, "submitterConfig", "backoffLimit", default=2) or 0) < 2:
            yield say("submitterConfig.backoffLimit below 2: one dropped log stream fails a running job")
        submitter = get(spec, "submitterPodTemplate", "spec")
        for pod in pod_specs(job) + ([submitter] if submitter else []):
            for container in pod.get("containers", []) + pod.get("initContainers", []):
                added = get(container, "securityContext", "capabilities", "add", default=[]) or []
                if added and _non_root(pod, container):
                    yield say(f"container {container.get('name')} runs as non-root and adds {', '.join(added)}: "
                              "such capabilities reach only the bounding set and never take effect "
                              "(RDMA needs an unlimited memlock limit from the node instead)")
        if spec.get("ttlSecondsAfterFinished", 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
            yield say("ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true")
        for rule in get(spec, "deletionStrategy", "deletionRules", default=[]):
            if rule.get("policy") == "DeleteSelf":
                yield say("a DeleteSelf deletion rule makes the sync engine re-create the RayJob and train again")


def _sidecar_problems(spec: dict) -> Iterator[str]:
    restart = get(spec, "rayClusterSpec", "headGroupSpec", "template", "spec", "restartPolicy")
    if restart not in (None, "Never"):
        yield f"SidecarMode needs the head pod's restartPolicy Never or unset, not {restart}"
    for field in ("clusterSelector", "submitterPodTemplate", "submitterConfig"):
        if field in spec:
            yield f"SidecarMode does not allow {field}"
    if spec.get("shutdownAfterJobFinishes"):
        # kuberay v1.7.0 rayjob_controller.go: without the alpha SidecarSubmitterRestart gate
        # (Kubernetes >= 1.35) a non-zero exit of the submitter container fails the RayJob.
        yield ("SidecarMode fails the RayJob when `ray job logs --follow` drops on a transient "
               "disconnect, and shutdownAfterJobFinishes then deletes the cluster of the running "
               "job: use K8sJobMode (its submitter Job retries and reattaches)")


def _non_root(pod: dict, container: dict) -> bool:
    def setting(key):
        own = get(container, "securityContext", key)
        return own if own is not None else get(pod, "securityContext", key)
    user = setting("runAsUser")
    return (user is not None and int(user) != 0) or (user is None and setting("runAsNonRoot") is True)


def trainer_config(configmap: dict) -> dict | None:
    """The trainer config a run's pod sees, or None for a ConfigMap that holds none."""
    data = configmap.get("data") or {}
    return effective_config(data) if Spec.trainer_config_key in data else None


def mounted_config(rayjob: dict, configmaps: dict) -> dict | None:
    """The trainer config ``rayjob``'s pods mount, of ``configmaps`` by (namespace, name)."""
    ns = get(rayjob, "metadata", "namespace")
    return next((cfg for pod in pod_specs(rayjob) for v in pod.get("volumes", [])
                 if (name := get(v, "configMap", "name")) and (c := configmaps.get((ns, name)))
                 and (cfg := trainer_config(c)) is not None), None)


def with_trainer_configs(objects: list[Rendered]) -> list[Rendered]:
    """``objects`` as plugins' rules get them: each RayJob with the trainer config it mounts."""
    configmaps = {(get(o.obj, "metadata", "namespace"), get(o.obj, "metadata", "name")): o.obj
                  for o in objects if o.obj.get("kind") == "ConfigMap"}
    return [Rendered(o.source, o.obj, mounted_config(o.obj, configmaps)) if o.obj.get("kind") == "RayJob" else o
            for o in objects]


def trainer_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """The RayJob's GPU pods against the trainer config they mount, then verl's batch rules."""
    configmaps = {(get(o.obj, "metadata", "namespace"), get(o.obj, "metadata", "name")): o.obj
                  for o in objects if o.obj.get("kind") == "ConfigMap"}
    for item in objects:
        if item.obj.get("kind") != "RayJob":
            continue
        ns = get(item.obj, "metadata", "namespace")
        config = next((c for pod in pod_specs(item.obj) for v in pod.get("volumes", [])
                       if (name := get(v, "configMap", "name")) and (c := configmaps.get((ns, name)))
                       and trainer_config(c) is not None), None)
        if config is None:
            continue
        cfg = trainer_config(config)
        messages = [*_cluster_size(item.obj, batch_rules.size(cfg)),
                    *batch_rules.problems(cfg, releases.of_object(config))]
        yield from (Finding(item.source, item.label, message) for message in messages)


def _cluster_size(job: dict, size: batch_rules.Size) -> list[str]:
    """GPU pods add up to nnodes x n_gpus_per_node, n_gpus_per_node each, with the CPUs verl packs."""
    groups = _groups(job)
    requested = sum(gpus * count for _, _, gpus, count in groups)
    if requested != size.gpus:
        return [f"the RayJob's pods request {requested} GPUs but the trainer expects "
                f"n_gpus_per_node x nnodes = {size.gpus_per_node} x {size.nnodes} = {size.gpus}"]
    out = []
    gpu_pods = sum(count for _, _, gpus, count in groups if gpus)
    if gpu_pods != size.nnodes:
        out.append(f"the RayJob has {gpu_pods} GPU pods but trainer.nnodes is {size.nnodes} "
                   "(verl places one node's GPU workers per pod)")
    for name, pod, gpus, _ in groups:
        if gpus and gpus != size.gpus_per_node:
            out.append(f"{name} pods request {gpus} GPUs each but trainer.n_gpus_per_node is {size.gpus_per_node}")
        cpus = _ray_cpus(pod)
        if gpus and cpus is not None and cpus < 3 * gpus:
            out.append(f"{name} pods give Ray {cpus:g} CPUs for {gpus} GPUs: verl's placement group of a node "
                       f"needs 3 CPUs per GPU ({3 * gpus})")
    return out + _fixed_size(job) + _pod_group(groups)


def _pod_group(groups: list[tuple[str, dict, int, int]]) -> list[str]:
    """ACK Gang scheduling waits for min-available pods of one pod group: all of the RayJob's."""
    labels = [get(group, "template", "metadata", "labels", default={}) or {} for _, group, _, _ in groups]
    wanted = [l.get("pod-group.scheduling.sigs.k8s.io/min-available") for l in labels]
    if not any(wanted):
        return []
    pods = sum(count for *_, count in groups)
    names = {l.get("pod-group.scheduling.sigs.k8s.io/name") for l in labels}
    out = [f"pod-group min-available {w} but the RayJob has {pods} pods (head and GPU workers)"
           for w in sorted(set(wanted), key=str) if str(w) != str(pods)]
    if len(names) > 1:
        out.append(f"the RayJob's pods are in different pod groups ({', '.join(sorted(map(str, names)))})")
    return out


def _groups(job: dict) -> list[tuple[str, dict, int, int]]:
    """(name, group, GPUs per pod, pods) for the head and each worker group."""
    cluster = get(job, "spec", "rayClusterSpec", default={})
    head = get(cluster, "headGroupSpec", default={})
    out = [("the head", head, _gpus(get(head, "template", "spec", default={})), 1)]
    for group in cluster.get("workerGroupSpecs") or []:
        pods = _desired(group) * group.get("numOfHosts", 1)
        out.append((f"worker group '{group.get('groupName')}'", group,
                    _gpus(get(group, "template", "spec", default={})), pods))
    return out


def _desired(group: dict) -> int:
    # KubeRay's desired replicas: replicas clamped to [minReplicas, maxReplicas].
    low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2**31 - 1)
    return min(max(group.get("replicas", low), low), high)


def _fixed_size(job: dict) -> list[str]:
    out = []
    if get(job, "spec", "rayClusterSpec", "enableInTreeAutoscaling"):
        out.append("enableInTreeAutoscaling: the autoscaler would resize a verl run, whose world size is fixed")
    for group in get(job, "spec", "rayClusterSpec", "workerGroupSpecs", default=[]):
        bounds = [group.get(k) for k in ("replicas", "minReplicas", "maxReplicas")]
        if _gpus(get(group, "template", "spec", default={})) and len(set(bounds)) > 1:
            out.append(f"worker group '{group.get('groupName')}': replicas, minReplicas, maxReplicas = "
                       f"{', '.join(str(b) for b in bounds)} differ: a verl run has a fixed number of GPU nodes")
    return out


def _gpus(pod: dict) -> int:
    total = 0
    for container in pod.get("containers", []):
        limits = get(container, "resources", "limits", default={}) or {}
        total += int(str(limits.get("nvidia.com/gpu", 0)))
    return total


def _ray_cpus(group: dict) -> float | None:
    """The CPUs Ray sees on a pod: rayStartParams num-cpus, else the container's CPU limit."""
    explicit = (group.get("rayStartParams") or {}).get("num-cpus")
    containers = get(group, "template", "spec", "containers", default=[]) or [{}]
    resources = containers[0].get("resources") or {}
    quantity = explicit or (resources.get("limits") or {}).get("cpu") or (resources.get("requests") or {}).get("cpu")
    if quantity is None:
        return None
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
