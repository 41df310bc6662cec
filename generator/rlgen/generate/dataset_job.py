"""The dataset Job: ``rlgen data prepare`` + ``rlgen data upload`` in the data image, writing
to the folder the trainer reads. Its name carries a hash of its inputs, so changing the
dataset, source or image creates a new Job (a Job's pod template is immutable)."""
from __future__ import annotations

import json

from rlgen.repo.image_tags import split_reference
from rlgen.naming import hashed_name
from rlgen.plugin_host.install import effective, needs_git, pip_arguments, plugin_requirements
from rlgen.repo.secret_plan import hf_token
from rlgen.spec import MODELSCOPE_PREFIX, Spec

_SCRIPT = """\
set -eu
rlgen data prepare --dataset "$DATASET" --source "$DATASET_SOURCE" --out /scratch/prepared
rlgen data upload /scratch/prepared "oss://$OSS_BUCKET/$OSS_PREFIX" --region "$OSS_REGION" --endpoint "$OSS_ENDPOINT"
"""


#: The data image's Python packages, pinned to the versions rlgen's tests run with.
DATA_PACKAGES = ("datasets==5.2.0", "pyarrow==26.0.1", "pillow==13.0.0", "alibabacloud-oss-v2==1.4.1",
                 "huggingface_hub==2.4.0", "modelscope==1.40.2")


def data_dockerfile(spec: Spec) -> str:
    """``images/data/Dockerfile``: the image the dataset and model Jobs run, with rlgen in it,
    so the cluster runs the very ``rlgen data`` code that was tested."""
    packages = " ".join(f'"{p}"' for p in DATA_PACKAGES)
    install = effective(spec.rlgen_install)
    plugins = plugin_requirements(spec.plugin_packages, spec.plugin_distributions)
    git = ""
    if needs_git(install) or any(needs_git(p) for p in plugins):
        git = ("# pip clones rlgen.install's Git repository; the slim base image has no git.\n"
               "RUN apt-get update \\\n"
               " && apt-get install --yes --no-install-recommends git \\\n"
               " && rm -rf /var/lib/apt/lists/*\n")
    return f"""\
# Dataset pipeline image, pushed to {split_reference(spec.data_image)[0]} under a tag that
# hashes this folder's files (images/build.sh): a change here gives the Jobs a new image.
# The Jobs run `rlgen data prepare`/`model` and `rlgen data upload` from this image: nothing
# is installed when a Job starts, so a re-run cannot pick up different packages.
# rlgen comes from rlgen.install (rlgen.yaml), the source validate.yaml installs it from too,
# with the plugin distributions of rlgen.plugin_packages (a dataset plugin's code runs here).
FROM python:3.11.11-slim-bookworm

{git}RUN pip install --no-cache-dir {pip_arguments(install, extra="data", plugins=plugins)} {packages} \\
 && useradd --create-home --uid 1000 --user-group pipeline
USER 1000
WORKDIR /home/pipeline
"""


def dataset_job(spec: Spec, patches: str = "") -> tuple[dict, str]:
    """``patches``: what plugins patch into the Jobs (:func:`job_patches`), hashed with the rest."""
    inputs = {"dataset": spec.dataset, "source": spec.dataset_source, "image": spec.data_image,
              "prefix": spec.dataset_bucket_prefix(), "script": _SCRIPT, "patches": patches}
    name = hashed_name(spec.dataset_job, json.dumps(inputs, sort_keys=True).encode(), max_length=63)
    env = [
        {"name": "DATASET", "value": spec.dataset},
        {"name": "DATASET_SOURCE", "value": spec.dataset_source},
        {"name": "OSS_PREFIX", "value": spec.dataset_bucket_prefix()},
        {"name": "HF_HOME", "value": "/scratch/hf-cache"},
        # ModelScope's own cache beside the download (only a ModelScope source sets it: the pod
        # template of a Job already synced never changes in place).
        *([{"name": "MODELSCOPE_CACHE", "value": "/scratch/modelscope-cache"}]
          if spec.dataset_source.startswith(MODELSCOPE_PREFIX) else []),
        # Only private datasets need a token; the Secret may be absent.
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": hf_token(spec).name, "key": hf_token(spec).keys[0], "optional": True}}},
    ]
    job = pipeline_job(spec, name, spec.dataset_job, _SCRIPT, env, "50Gi")
    comment = (
        f"Prepares {spec.dataset} and uploads it to the folder the trainer reads ({spec.dataset_dir()}).\n"
        "No ttlSecondsAfterFinished: a GitOps engine would re-create a deleted Job and run it again.\n"
        "The name hashes the Job's inputs, the bucket a storage plugin patches in included: a change\n"
        "creates a new Job instead of failing on the immutable pod template."
    )
    return job, comment


def job_patches(patches: list[tuple[str, list]]) -> str:
    """The plugins' patches of Jobs (the storage plugin's bucket, endpoint and credentials),
    as text: a Job's pod template never changes in place, so what they change must rename it."""
    return json.dumps([[plugin, [[p.target, p.patch] for p in items if p.target.get("kind") == "Job"]]
                       for plugin, items in patches], sort_keys=True, default=str)


def pipeline_job(spec: Spec, name: str, app: str, script: str, env: list[dict], scratch: str) -> dict:
    """A Job of the data image that runs ``script`` as an unprivileged user with a scratch
    folder of ``scratch``; the dataset and model Jobs share it, so they share its hardening.
    Both carry ``spec.bucket_writer_label``: the storage plugin gives them the bucket by it."""
    labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "rlgen", spec.bucket_writer_label: "true"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": spec.namespace, "labels": labels},
        "spec": {
            "backoffLimit": 3,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": app}},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": spec.dataset_service_account,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "pipeline",
                        "image": spec.data_image,
                        "command": ["/bin/sh", "-c", script],
                        "env": env,
                        "securityContext": {"allowPrivilegeEscalation": False,
                                            "capabilities": {"drop": ["ALL"]}},
                        "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                      "limits": {"cpu": "4", "memory": "8Gi"}},
                        "volumeMounts": [{"name": "work", "mountPath": "/scratch"}],
                    }],
                    "volumes": [{"name": "work", "emptyDir": {"sizeLimit": scratch}}],
                },
            },
        },
    }


def service_account(spec: Spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": spec.dataset_service_account, "namespace": spec.namespace},
        "automountServiceAccountToken": False,
    }
