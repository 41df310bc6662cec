"""OSS static volumes shared by both storage plugins; they differ only in how ossfs
authenticates (an AccessKey Secret or an RRSA role)."""
from __future__ import annotations

from rlgen.plugin_api import (
    Layer,
    Option,
    Patch,
    Resource,
    endpoint_error,
    endpoint_region_error,
    oss_bucket_error,
    region_error,
)

CSI_DRIVER = "ossplugin.csi.alibabacloud.com"

OPTIONS = (
    # No defaults: OSS bucket names are global, so any default names somebody else's bucket.
    Option("bucket", "OSS bucket holding datasets, models and checkpoints", required=True, check=oss_bucket_error),
    Option("region", "OSS region of the bucket, e.g. cn-hangzhou", required=True, check=region_error),
    Option("endpoint", "OSS endpoint (empty: the region's internal endpoint)", "",
           check=lambda v: endpoint_error(v) if v else None, ask=True, cross_check=endpoint_region_error),
)

#: The ossfs options for every volume. No dbglevel/curldbg: debug logs of every request
#: slow ossfs down and fill the node's disk.
_BASE_OPTS = "-o umask=022 -o max_stat_cache_size=100000 -o allow_other"
#: The trainer runs as uid/gid 1000 and must own what it writes.
_WRITE_OPTS = " -o uid=1000 -o gid=1000"
_PROTECT = {
    # Deleting a PV or PVC from Git must never take data access away from a running job.
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
    "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
}


#: Why the names carry a hash and why Retain (the objects' comment).
RENAME_NOTE = (
    "OSS ignores the capacity; Kubernetes requires one.\n"
    "Kubernetes never changes a volume's csi source or a claim's spec in place: the names end in a\n"
    "hash of them, so another bucket, endpoint, role or namespace gives a new volume and claim.\n"
    "Retain (and no pruning) leaves the old ones and the data in the bucket untouched: delete them\n"
    "by hand once no run mounts them.")


def endpoint(options: dict) -> str:
    return options["endpoint"] or f"oss-{options['region']}-internal.aliyuncs.com"


def volumes(ctx, options: dict, auth: dict) -> list[Resource]:
    """PV + PVC for every volume of the spec; ``auth`` is merged into each PV's ``csi``."""
    out = []
    for volume in ctx.spec.volumes.values():
        attributes = {
            "bucket": options["bucket"],
            "url": endpoint(options),
            "path": f"/{volume.bucket_prefix}",
            "otherOpts": _BASE_OPTS + ("" if volume.read_only else _WRITE_OPTS),
        }
        attributes.update(auth.get("volumeAttributes", {}))
        csi = {"driver": CSI_DRIVER, "volumeHandle": volume.name}
        csi.update({k: v for k, v in auth.items() if k != "volumeAttributes"})
        csi["volumeAttributes"] = attributes
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume.name, "labels": {"alicloud-pvname": volume.name}, "annotations": dict(_PROTECT)},
            "spec": {
                "capacity": {"storage": "20Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                # Static volume: an empty class keeps a default StorageClass from provisioning one.
                "storageClassName": "",
                "csi": csi,
            },
        }
        note = f"oss://{options['bucket']}/{volume.bucket_prefix}/ mounted at {volume.mount_path}"
        note += " (read-only in the trainer)." if volume.read_only else " (the trainer writes here)."
        # The file keeps the base name while the objects' names follow their hash.
        filename = f"volume-{volume.base or volume.name}.yaml"
        out.append(Resource(Layer.PLATFORM, filename, pv, note + "\n" + RENAME_NOTE))
        out.append(Resource(Layer.PLATFORM, filename, _claim(volume.name, ctx.spec.namespace)))
    return out


def _claim(name: str, namespace: str) -> dict:
    """The claim bound to the PersistentVolume ``name`` by its label."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(_PROTECT)},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "resources": {"requests": {"storage": "20Gi"}},
            "selector": {"matchLabels": {"alicloud-pvname": name}},
        },
    }


def pipeline_env(ctx, options: dict) -> list[dict]:
    """Where the dataset Job uploads: plain values, no credentials."""
    return [
        {"name": "OSS_BUCKET", "value": options["bucket"]},
        {"name": "OSS_REGION", "value": options["region"]},
        {"name": "OSS_ENDPOINT", "value": endpoint(options)},
    ]


def pipeline_patch(ctx, env: list[dict], comment: str) -> Patch:
    """Add ``env`` to the container of every Job that writes to the bucket (the dataset and
    model Jobs; their names carry a hash, so match their label)."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": ctx.spec.dataset_job},
        "spec": {"template": {"spec": {"containers": [{"name": "pipeline", "env": env}]}}},
    }
    return Patch(Layer.PLATFORM, {"kind": "Job", "labelSelector": f"{ctx.spec.bucket_writer_label}=true"},
                 job, "dataset-job-oss-target", comment)
