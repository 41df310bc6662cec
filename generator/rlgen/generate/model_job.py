"""The model Job: ``rlgen data model`` + ``rlgen data upload`` in the data image, writing the
model to the bucket folder the trainer loads it from (``spec.model_bucket_path``), the way
the dataset Job stages the data. Its name hashes its inputs, like the dataset Job's.

Resumable at two levels: within a pod, the hub's ``snapshot_download`` skips files it has
finished; across pods (a retry, a new Job), upload skips every object the bucket already
holds unchanged, so only the download is repeated, never the upload."""
from __future__ import annotations

import json

from rlgen.generate.dataset_job import pipeline_job
from rlgen.repo.secret_plan import hf_token
from rlgen.naming import hashed_name
from rlgen.spec import Spec

_SCRIPT = """\
set -eu
rlgen data model --source "$MODEL_SOURCE" --model "$MODEL" ${MODEL_REVISION:+--revision "$MODEL_REVISION"} --out /scratch/model
rlgen data upload /scratch/model "oss://$OSS_BUCKET/$OSS_PREFIX" --region "$OSS_REGION" --endpoint "$OSS_ENDPOINT"
"""

#: Room for the model's files: bf16 weights take 2 bytes a parameter (a 3B model ~7 GB).
SCRATCH = "200Gi"


def model_prefix(spec: Spec) -> str:
    return spec.model_bucket_path.rstrip("/") + "/"


def model_job(spec: Spec, patches: str = "") -> tuple[dict, str]:
    """``patches``: as :func:`rlgen.generate.dataset_job.dataset_job` takes them."""
    inputs = {"model": spec.model, "source": spec.model_source, "revision": spec.model_revision,
              "image": spec.data_image, "prefix": model_prefix(spec), "script": _SCRIPT, "patches": patches}
    name = hashed_name(spec.model_job, json.dumps(inputs, sort_keys=True).encode(), max_length=63)
    token = hf_token(spec)
    env = [
        {"name": "MODEL", "value": spec.model},
        {"name": "MODEL_SOURCE", "value": spec.model_source},
        {"name": "MODEL_REVISION", "value": spec.model_revision},
        {"name": "OSS_PREFIX", "value": model_prefix(spec)},
        {"name": "HF_HOME", "value": "/scratch/hf-cache"},
        {"name": "MODELSCOPE_CACHE", "value": "/scratch/modelscope-cache"},
        # Only gated or private models need a token; the Secret may be absent.
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": token.name, "key": token.keys[0], "optional": True}}},
    ]
    job = pipeline_job(spec, name, spec.model_job, _SCRIPT, env, SCRATCH)
    comment = (
        f"Downloads {spec.model} from {spec.model_source} and uploads it to the folder the trainer\n"
        f"loads ({spec.model_path}). A retry downloads again but uploads only what the bucket\n"
        "lacks. No ttlSecondsAfterFinished: a GitOps engine would re-create a deleted Job.\n"
        f"The name hashes the Job's inputs: another model, hub or revision creates a new Job.\n"
        f"The scratch folder ({SCRATCH}) must hold the whole model: patch it for larger ones."
    )
    return job, comment
