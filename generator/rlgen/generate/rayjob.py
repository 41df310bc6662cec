"""The RayJob every run starts from: the project's template with the spec's names, GPU count
and volumes. Nothing else shapes the RayJob; plugins patch it through their training Component."""
from __future__ import annotations

from typing import Any

from rlgen import sources
from rlgen.spec import Spec

TEMPLATE = "base/training/rayjob.yaml"


def rayjob(spec: Spec) -> Any:
    job = sources.load(TEMPLATE)
    job["metadata"]["name"] = spec.rayjob_name
    pod = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    container = pod["containers"][0]
    container["resources"]["limits"]["nvidia.com/gpu"] = str(spec.gpus_per_node)
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    mounts["configs"]["mountPath"] = spec.configs_mount
    volumes = {v["name"]: v for v in pod["volumes"]}
    volumes["configs"]["configMap"]["name"] = spec.trainer_configmap
    for key, volume in spec.volumes.items():
        mounts[key]["mountPath"] = volume.mount_path
        volumes[key]["persistentVolumeClaim"]["claimName"] = volume.name
    return job
