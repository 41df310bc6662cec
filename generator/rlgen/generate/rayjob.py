"""The RayJob every run starts from: the project's template with the spec's names, size, volumes,
network and gang scheduling. The JSON patch that gives one run another size is
:mod:`rlgen.run.folder`'s.

The size lives in one place, the trainer config (``trainer.nnodes`` x ``trainer.n_gpus_per_node``):
the base RayJob is shaped from the repository's, a run's patch from its ``run.yaml``, and
``rlgen validate`` reports a RayJob whose GPUs disagree with the config its pods mount.
Plugins patch the RayJob through their training Component.
"""
from __future__ import annotations

import copy
from typing import Any

from rlgen import pool, sources
from rlgen.generate import cluster_network, gang
from rlgen.run.folder import GPU
from rlgen.spec import Spec
from rlgen.tools import yamlio
from rlgen.verl import releases

TEMPLATE = "base/training/rayjob.yaml"
#: The trainer module the template's entrypoint runs.
TEMPLATE_MODULE = "verl.trainer.main_ppo"
#: Run before verl by the entrypoint, from the trainer ConfigMap.
WAIT_SCRIPT = "wait_for_gpus.py"
CPU_NOTE = ("verl packs each node's GPU workers in one placement group of\n"
            "n_gpus_per_node x {CPU: 3, GPU: 1}: at least 3 CPUs per GPU.")
#: What the GPU container keeps of its own; the rest of its pod is the head's.
OWN_FIELDS = ("name", "resources")


def rayjob(spec: Spec) -> Any:
    job = sources.load(TEMPLATE)
    job["metadata"]["name"] = spec.rayjob_name
    # The template's command names verl's trainer module; the release says which it is.
    job["spec"]["entrypoint"] = job["spec"]["entrypoint"].replace(f"-m {TEMPLATE_MODULE} ", f"-m {releases.get(spec.verl_version).entrypoint} ")
    cluster = job["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]["spec"]
    _volumes(head, spec)
    group = cluster["workerGroupSpecs"][0]
    group["template"]["spec"] = _alike(head, group["template"]["spec"]["containers"][0])
    for field in ("replicas", "minReplicas", "maxReplicas"):
        group[field] = spec.nnodes
    _place(head, group["template"]["spec"], spec)
    cluster_network.apply(group["template"]["spec"], spec)
    gang.apply(job, spec)
    return job


def _place(head: dict, worker: dict, spec: Spec) -> None:
    """The GPU workers on the pool's nodes: its labels selected, its taints tolerated, a node's
    share of its CPU and memory asked; the head off the pool, so no worker waits for its room."""
    the_pool = pool.of(spec)
    worker["nodeSelector"] = the_pool.selector()
    if tolerations := the_pool.tolerations():
        worker["tolerations"] = tolerations
    worker["containers"][0]["resources"]["limits"] = the_pool.worker_resources(spec.gpus_per_node)
    if not the_pool.kind.taints and the_pool.pool_id:
        # An ECS GPU node pool has no taint of ACK's: the head is kept off it by its ID.
        head["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": pool.NODEPOOL_ID, "operator": "NotIn", "values": [the_pool.pool_id]}]}]}}}


def _volumes(pod: dict, spec: Spec) -> None:
    container = pod["containers"][0]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    mounts["configs"]["mountPath"] = spec.configs_mount
    volumes = {v["name"]: v for v in pod["volumes"]}
    volumes["configs"]["configMap"]["name"] = spec.trainer_configmap
    for key, volume in spec.volumes.items():
        mounts[key]["mountPath"] = volume.mount_path
        volumes[key]["persistentVolumeClaim"]["claimName"] = volume.name


def _alike(head: dict, own: dict) -> dict:
    """The head's pod spec with the GPU container's name and resources; the head's comments
    stay with the head (a copy would carry them to the wrong lines)."""
    pod = yamlio.literal_strings(yamlio.plain(head))
    container = pod["containers"][0]
    for field in OWN_FIELDS:
        container[field] = copy.deepcopy(own[field])
    container.yaml_set_comment_before_after_key("resources", before=CPU_NOTE, indent=16)
    return pod
