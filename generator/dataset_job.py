"""The dataset Job: ``rlgen data prepare`` + ``rlgen data upload`` in the data image, writing
to the folder the trainer reads. Its name carries a hash of its inputs, so changing the
dataset, source or image creates a new Job (a Job's pod template is immutable)."""
from __future__ import annotations

import json

from rlgen.naming import hashed_name
from rlgen.spec import Spec

_SCRIPT = """\
set -eu
rlgen data prepare --dataset "$DATASET" --source "$DATASET_SOURCE" --out /work/prepared
rlgen data upload /work/prepared "oss://$OSS_BUCKET/$OSS_PREFIX" --region "$OSS_REGION" --endpoint "$OSS_ENDPOINT"
"""


def dataset_job(spec: Spec) -> tuple[dict, str]:
    inputs = {"dataset": spec.dataset, "source": spec.dataset_source, "image": spec.data_image,
              "prefix": spec.dataset_bucket_prefix(), "script": _SCRIPT}
    name = hashed_name(spec.dataset_job, json.dumps(inputs, sort_keys=True).encode(), max_length=63)
    env = [
        {"name": "DATASET", "value": spec.dataset},
        {"name": "DATASET_SOURCE", "value": spec.dataset_source},
        {"name": "OSS_PREFIX", "value": spec.dataset_bucket_prefix()},
        {"name": "HF_HOME", "value": "/work/hf-cache"},
        # Only private datasets need a token; the Secret may be absent.
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
    ]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "labels": {"app.kubernetes.io/name": spec.dataset_job, "app.kubernetes.io/part-of": "rlgen"},
        },
        "spec": {
            "backoffLimit": 3,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": spec.dataset_job}},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": spec.dataset_service_account,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "pipeline",
                        "image": spec.data_image,
                        "command": ["/bin/sh", "-c", _SCRIPT],
                        "env": env,
                        "securityContext": {"allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}},
                        "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                      "limits": {"cpu": "4", "memory": "8Gi"}},
                        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
                    }],
                    "volumes": [{"name": "work", "emptyDir": {"sizeLimit": "50Gi"}}],
                },
            },
        },
    }
    comment = (
        f"Prepares {spec.dataset} and uploads it to the folder the trainer reads ({spec.dataset_dir()}).\n"
        "No ttlSecondsAfterFinished: a GitOps engine would re-create a deleted Job and run it again.\n"
        "The name hashes the Job's inputs: a change creates a new Job instead of failing on the\n"
        "immutable pod template."
    )
    return job, comment


def service_account(spec: Spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": spec.dataset_service_account, "namespace": spec.namespace},
        "automountServiceAccountToken": False,
    }
