"""Storage plugin: OSS volumes and dataset uploads authenticated by RRSA (RAM roles for
service accounts), so no AccessKey exists anywhere, not even in a cluster Secret."""
from __future__ import annotations

import json
import re

from rlgen.plugin_api import REGION_IDS, Layer, Option, Patch, PluginInfo, hookimpl, rrsa_provider

from rlgen_plugins import _oss_volumes

NAME = "rrsa-storage"
#: The ossfs fuse pods that mount OSS run under this ServiceAccount of the CSI driver,
#: so they, not the trainer, assume the volume role.
FUSE_SERVICE_ACCOUNT = "system:serviceaccount:ack-csi-fuse:csi-fuse-ossfs"
ROLE_ANNOTATION = "pod-identity.alibabacloud.com/role-name"
INJECTION_LABEL = "pod-identity.alibabacloud.com/injection"

_RAM_ROLE = re.compile(r"[A-Za-z0-9.-]{1,64}")


def _role_error(value: str) -> str | None:
    if value in REGION_IDS:
        # An answer given to the wrong question (the bucket's region), which RAM would accept.
        return f"'{value}' is a region id, not a RAM role name: give the role's name (RAM console, Roles)"
    if value == "" or _RAM_ROLE.fullmatch(value):
        return None
    return f"'{value}' is not a RAM role name (1-64 letters, digits, '.' or '-')"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="storage",
        summary="OSS static volumes and dataset uploads with RRSA RAM roles (no AccessKey)",
        options=_oss_volumes.OPTIONS + (
            Option("role_name", "RAM role the CSI driver assumes to mount the bucket", required=True,
                   check=_role_error),
            Option("pipeline_role_name", "RAM role of the dataset Job (default: role_name)", "",
                   check=_role_error),
        ),
    )


def _pipeline_role(options: dict) -> str:
    return options["pipeline_role_name"] or options["role_name"]


@hookimpl
def rlgen_resources(ctx):
    o = ctx.options(NAME)
    return _oss_volumes.volumes(ctx, o, {"volumeAttributes": {"authType": "rrsa", "roleName": o["role_name"]}})


@hookimpl
def rlgen_patches(ctx):
    o = ctx.options(NAME)
    spec = ctx.spec
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": spec.namespace, "labels": {INJECTION_LABEL: "on"}},
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": spec.dataset_service_account, "annotations": {ROLE_ANNOTATION: _pipeline_role(o)}},
    }
    return [
        Patch(Layer.PLATFORM, {"kind": "Namespace", "name": spec.namespace}, namespace, "namespace-pod-identity",
              "ack-pod-identity-webhook injects RRSA credentials only into pods of labelled namespaces."),
        Patch(Layer.PLATFORM, {"kind": "ServiceAccount", "name": spec.dataset_service_account}, account,
              "dataset-service-account-role",
              "Pods of this ServiceAccount get a token the webhook's role accepts. The webhook mounts\n"
              "its own projected token, so automountServiceAccountToken: false stays."),
        _oss_volumes.pipeline_patch(ctx, _oss_volumes.pipeline_env(ctx, o),
                                   "Where the dataset Job uploads; its credentials come from the pod identity\n"
                                   "webhook (ALIBABA_CLOUD_ROLE_ARN and friends), never from a Secret."),
    ]


#: The cluster's OIDC provider when no answer names it (external-secrets' oidc_provider_arn does).
PROVIDER_PLACEHOLDER = "acs:ram::<account-id>:oidc-provider/ack-rrsa-<cluster-id>"


def trust_policy(provider: str, subjects: list[str]) -> dict:
    """A RAM role's trust policy: tokens of ``subjects`` (ServiceAccounts) from ``provider`` may assume it."""
    return {
        "Version": "1",
        "Statement": [{
            "Action": "sts:AssumeRole",
            "Effect": "Allow",
            "Principal": {"Federated": [provider]},
            "Condition": {"StringEquals": {"oidc:aud": "sts.aliyuncs.com",
                                           "oidc:sub": subjects[0] if len(subjects) == 1 else subjects}},
        }],
    }


def _role(name: str, provider: str, subjects: list[str]) -> str:
    """The trust policy of role ``name`` as JSON, and the aliyun CLI call that creates the role with it."""
    policy = trust_policy(provider, subjects)
    return ("```json\n" + json.dumps(policy, indent=2) + "\n```\n\n```sh\n"
            f"aliyun ram CreateRole --RoleName {name} --AssumeRolePolicyDocument "
            f"'{json.dumps(policy, separators=(',', ':'))}'\n```")


@hookimpl
def rlgen_readme(ctx):
    o = ctx.options(NAME)
    spec = ctx.spec
    pipeline_subject = f"system:serviceaccount:{spec.namespace}:{spec.dataset_service_account}"
    volume_role, pipeline_role = o["role_name"], _pipeline_role(o)
    provider = rrsa_provider(ctx) or PROVIDER_PLACEHOLDER
    if volume_role == pipeline_role:
        roles = (f"One RAM role, `{volume_role}`, serves both; its trust policy names both "
                 "ServiceAccounts:\n\n" + _role(volume_role, provider, [FUSE_SERVICE_ACCOUNT, pipeline_subject]))
    else:
        roles = (f"- `{volume_role}` (volumes) must trust `{FUSE_SERVICE_ACCOUNT}`:\n\n"
                 + _role(volume_role, provider, [FUSE_SERVICE_ACCOUNT]) + "\n\n"
                 f"- `{pipeline_role}` (dataset Job) must trust `{pipeline_subject}`:\n\n"
                 + _role(pipeline_role, provider, [pipeline_subject]))
    return [
        "## Storage: OSS with RRSA\n"
        "No AccessKey exists in this repository or the cluster: the OSS volumes use `authType: rrsa` and the "
        "dataset Job gets temporary credentials from `ack-pod-identity-webhook`.\n\n"
        "Prerequisites: RRSA enabled on the cluster (Kubernetes 1.26 or later), the `ack-pod-identity-webhook` "
        "add-on, and the CSI plugin v1.30.4 or later (static OSS volumes then also need `csi-provisioner`).\n\n"
        "The volumes are mounted by the CSI driver's ossfs pods, not by the trainer, so the volume role trusts "
        f"the driver's ServiceAccount; the dataset and model Jobs run as `{spec.dataset_service_account}` in "
        f"`{spec.namespace}`. {roles}\n\n"
        f"Grant the volume role read and write on `oss://{o['bucket']}/` (the trainer writes checkpoints), and the "
        f"Jobs' role read and write on `oss://{o['bucket']}/{spec.dataset_bucket_prefix()}` and "
        f"`oss://{o['bucket']}/{spec.model_bucket_path}/`."
        + ("" if provider != PROVIDER_PLACEHOLDER else
           " The trust policy names the cluster's RRSA OIDC provider, which rlgen was not told: replace "
           "`<account-id>` and `<cluster-id>` with your Alibaba Cloud account and the cluster's id (the "
           "cluster's *Security and auditing → RRSA OIDC* page shows the provider's ARN).")
        + " Another cluster of this repository has its own OIDC provider: add its ARN to `Federated`."
    ]
