"""KubeRay's controller-side checks of a RayJob, and the GPUs its pods request against what
the trainer config expects (verl's batch arithmetic over the world size)."""
from __future__ import annotations

from typing import Iterator

from rlgen.naming import MAX_RAYJOB_NAME, dns1035_label_error
from rlgen.spec import Spec
from rlgen.validate.rules.base import Finding, Rendered, get, pod_specs
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
            restart = get(spec, "rayClusterSpec", "headGroupSpec", "template", "spec", "restartPolicy")
            if restart not in (None, "Never"):
                yield say(f"SidecarMode needs the head pod's restartPolicy Never or unset, not {restart}")
            for field in ("clusterSelector", "submitterPodTemplate", "submitterConfig"):
                if field in spec:
                    yield say(f"SidecarMode does not allow {field}")
        if spec.get("ttlSecondsAfterFinished", 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
            yield say("ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true")
        for rule in get(spec, "deletionStrategy", "deletionRules", default=[]):
            if rule.get("policy") == "DeleteSelf":
                yield say("a DeleteSelf deletion rule makes the sync engine re-create the RayJob and train again")


def trainer_config(configmap: dict) -> dict | None:
    """The trainer config a run's pod sees, or None for a ConfigMap that holds none."""
    data = configmap.get("data") or {}
    return effective_config(data) if Spec.trainer_config_key in data else None


def trainer_rules(objects: list[Rendered]) -> Iterator[Finding]:
    configmaps = {(get(o.obj, "metadata", "namespace"), get(o.obj, "metadata", "name")): o.obj
                  for o in objects if o.obj.get("kind") == "ConfigMap"}
    for item in objects:
        if item.obj.get("kind") != "RayJob":
            continue
        ns = get(item.obj, "metadata", "namespace")
        say = lambda message: Finding(item.source, item.label, message)
        pods = pod_specs(item.obj)
        config = next((c for pod in pods for v in pod.get("volumes", [])
                       if (name := get(v, "configMap", "name")) and (c := configmaps.get((ns, name)))
                       and trainer_config(c) is not None), None)
        if config is None:
            continue
        cfg = trainer_config(config)
        gpus_per_node = get(cfg, "trainer", "n_gpus_per_node", default=0)
        nnodes = get(cfg, "trainer", "nnodes", default=1)
        wanted = gpus_per_node * nnodes
        requested = sum(_gpus(pod) * _replicas(item.obj, i) for i, pod in enumerate(pods))
        if requested != wanted:
            yield say(f"the RayJob's pods request {requested} GPUs but the trainer expects "
                      f"n_gpus_per_node x nnodes = {gpus_per_node} x {nnodes} = {wanted}")
        tp = get(cfg, "actor_rollout_ref", "rollout", "tensor_model_parallel_size", default=1)
        if gpus_per_node and gpus_per_node % tp:
            yield say(f"tensor_model_parallel_size {tp} does not divide n_gpus_per_node {gpus_per_node}")
        batch = get(cfg, "data", "train_batch_size", default=0)
        n = get(cfg, "actor_rollout_ref", "rollout", "n", default=1)
        if wanted and (batch * n) % wanted:
            yield say(f"data.train_batch_size x rollout.n = {batch} x {n} is not divisible by {wanted} GPUs")
        mini = get(cfg, "actor_rollout_ref", "actor", "ppo_mini_batch_size", default=0)
        if batch < mini:
            yield say(f"data.train_batch_size {batch} is smaller than actor.ppo_mini_batch_size {mini}")


def _gpus(pod: dict) -> int:
    total = 0
    for container in pod.get("containers", []):
        limits = get(container, "resources", "limits", default={}) or {}
        total += int(str(limits.get("nvidia.com/gpu", 0)))
    return total


def _replicas(rayjob: dict, index: int) -> int:
    """Pod 0 is the head; pod i is worker group i-1 with its replicas (x numOfHosts)."""
    if index == 0:
        return 1
    group = get(rayjob, "spec", "rayClusterSpec", "workerGroupSpecs", default=[])[index - 1]
    return group.get("replicas", group.get("minReplicas", 1)) * group.get("numOfHosts", 1)
