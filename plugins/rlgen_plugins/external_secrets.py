"""Secrets plugin: External Secrets Operator syncs every declared Secret from Alibaba Cloud KMS
Secrets Manager, one ExternalSecret per Secret, in the ``secrets`` stage before every other one.

Each Kubernetes Secret is one KMS secret holding a JSON object, one property per key
(the alibaba provider reads ``remoteRef.property`` with gjson). The provider exists in External
Secrets up to v1.3.2 (v2.0.0 removed it); the objects are ``external-secrets.io/v1``.

The provider fails an ExternalSecret whose KMS secret or property is missing, so a Secret whose
consumers start without it (``SecretRef.optional``) is synced by the ``optional-secrets`` stage,
which nothing waits for, and copies whatever properties its KMS secret holds (``dataFrom.extract``).
"""
from __future__ import annotations

import json
import posixpath

from rlgen.plugin_api import (
    OPTIONAL_SECRETS_FOLDER,
    SECRETS_FOLDER,
    Document,
    Option,
    PluginInfo,
    SecretDelivery,
    dns1123_label_error,
    hookimpl,
    ram_arn_error,
    region_error,
    same_account_error,
    tested_version,
)
from rlgen_plugins._secrets_common import namespace_names, namespaces

NAME = "external-secrets"
API = "external-secrets.io/v1"
#: Where External Secrets' documentation projects the RRSA token into its controller pod.
TOKEN_PATH = "/var/run/secrets/tokens/oidc-token"
#: The Helm release the README installs; the chart names the operator's ServiceAccount after it
#: (deploy/charts/external-secrets/templates/_helpers.tpl, serviceAccountName: the full name).
RELEASE = "external-secrets"
CHART_REPOSITORY = "https://charts.external-secrets.io"


def _role_arn_error(value: str) -> str | None:
    return ram_arn_error(value, "role") if value else None


def _provider_arn_error(value: str) -> str | None:
    return ram_arn_error(value, "oidc-provider") if value else None


def _provider_account_error(value: str, earlier: dict) -> str | None:
    return same_account_error(value, earlier.get("role_arn"), f"{NAME}.role_arn") if value else None


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME, slot="secrets",
        summary="External Secrets Operator (v1.3) syncs the Secrets from Alibaba Cloud KMS Secrets Manager",
        options=(
            # Each ACK cluster has its own RRSA OIDC provider (ack-rrsa-<cluster-id>), and may use
            # its own role and its region's KMS: rlgen cluster add asks these three again.
            Option("region", "Region of the KMS instance, e.g. cn-hangzhou", required=True, check=region_error,
                   per_cluster=True),
            Option("auth", "How the operator reaches KMS: rrsa (a RAM role for its ServiceAccount) or accesskey "
                   "(an AccessKey Secret made by hand)", "rrsa", choices=("rrsa", "accesskey")),
            Option("role_arn", "auth=rrsa: the RAM role the operator assumes (acs:ram::<account>:role/<name>)", "",
                   check=_role_arn_error, required_when=("auth", "rrsa"), per_cluster=True),
            Option("oidc_provider_arn", "auth=rrsa: the cluster's RRSA OIDC provider "
                   "(acs:ram::<account>:oidc-provider/ack-rrsa-<cluster-id>)", "", check=_provider_arn_error,
                   required_when=("auth", "rrsa"), cross_check=_provider_account_error, per_cluster=True),
            Option("oidc_token_file", "auth=rrsa: the projected token in the operator's pod", TOKEN_PATH),
            Option("accesskey_secret", "auth=accesskey: Secret with keys accessKeyID and accessKeySecret",
                   "alibaba-kms-credentials", check=dns1123_label_error),
            Option("operator_namespace", "Namespace of External Secrets Operator (and of the AccessKey Secret)",
                   "external-secrets", check=dns1123_label_error),
            Option("store", "Name of the ClusterSecretStore", "alibaba-kms", check=dns1123_label_error),
            Option("prefix", "Prefix of the KMS secret names (<prefix><namespace>-<secret>)", "rlgen-"),
            Option("refresh_interval", "How often each Secret is read again from KMS", "1h"),
        ),
    )


def kms_name(ctx, secret) -> str:
    """The KMS secret holding ``secret``'s keys as one JSON object."""
    return f"{ctx.options(NAME)['prefix']}{secret.namespace}-{secret.name}"


def store(ctx) -> dict:
    o = ctx.options(NAME)
    if o["auth"] == "rrsa":
        auth = {"rrsa": {"oidcProviderArn": o["oidc_provider_arn"], "oidcTokenFilePath": o["oidc_token_file"],
                         "roleArn": o["role_arn"], "sessionName": "rlgen-external-secrets"}}
    else:
        ref = {"name": o["accesskey_secret"], "namespace": o["operator_namespace"]}
        auth = {"secretRef": {"accessKeyIDSecretRef": {**ref, "key": "accessKeyID"},
                              "accessKeySecretSecretRef": {**ref, "key": "accessKeySecret"}}}
    return {"apiVersion": API, "kind": "ClusterSecretStore", "metadata": {"name": o["store"]},
            "spec": {"provider": {"alibaba": {"regionID": o["region"], "auth": auth}}}}


#: The defaults External Secrets' CRD gives each item of data[].remoteRef and dataFrom[].extract
#: (external-secrets v0.20.4, externalsecrets CRD): written out, because Argo CD compares a list
#: item whole, and an item without them would be OutOfSync for ever once the API server fills them.
LIST_ITEM_DEFAULTS = {"conversionStrategy": "Default", "decodingStrategy": "None", "metadataPolicy": "None"}


def external_secret(ctx, secret) -> dict:
    o = ctx.options(NAME)
    return {
        "apiVersion": API, "kind": "ExternalSecret",
        "metadata": {"name": secret.name, "namespace": secret.namespace},
        "spec": {
            "refreshInterval": o["refresh_interval"],
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": o["store"]},
            "target": {"name": secret.name, "creationPolicy": "Owner",
                       **({"template": {"metadata": {"labels": dict(secret.labels)}}} if secret.labels else {})},
            **({"dataFrom": [{"extract": {"key": kms_name(ctx, secret), **LIST_ITEM_DEFAULTS}}]} if secret.optional else
               {"data": [{"secretKey": k,
                          "remoteRef": {"key": kms_name(ctx, secret), "property": k, **LIST_ITEM_DEFAULTS}}
                         for k in secret.keys]}),
        },
    }


def _file(secret) -> str:
    return f"{secret.namespace}.{secret.name}.yaml"


# long: the README section is written out as it reads, one paragraph after the other.
@hookimpl
def rlgen_secret_delivery(ctx, secrets):
    o = ctx.options(NAME)
    rows = "".join(
        f"- `{kms_name(ctx, s)}` → Secret `{s.name}` in `{s.namespace}` ({s.purpose}, used by {s.used_by}): "
        + (f"optional, JSON with any of {', '.join(f'`{k}`' for k in s.keys)}.\n" if s.optional else
           f"JSON with {', '.join(f'`{k}`' for k in s.keys)}.\n") for s in secrets)
    auth = _auth(o)
    readme = (
        "## Secrets: External Secrets from Alibaba Cloud KMS\n\n"
        f"External Secrets Operator v1.3 (the last release with the `alibaba` provider) must run in "
        f"`{o['operator_namespace']}`. The `{SECRETS_FOLDER}` stage, synced before every other one, holds the "
        f"ClusterSecretStore `{o['store']}` (KMS Secrets Manager in `{o['region']}`) and one ExternalSecret per "
        "Secret; the stage is ready once every Secret is synced. An optional Secret's ExternalSecret is in the "
        f"`{OPTIONAL_SECRETS_FOLDER}` stage, which nothing waits for: leave its KMS secret out when you need none "
        "of its keys, and store only the keys you need. " + auth + "\n\n"
        "Create each KMS secret (generic secret, its value a JSON object with one property per key); "
        "`rlgen secret set NAME KEY` prints the name, `rlgen secret list` lists them:\n\n" + rows
    )
    if not secrets:
        return SecretDelivery(readme)
    required = [s for s in secrets if not s.optional]
    optional = [s for s in secrets if s.optional]
    files = {
        f"{SECRETS_FOLDER}/kustomization.yaml": [Document({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [*(["namespaces.yaml"] if namespace_names(secrets) else []), "store.yaml",
                          *sorted(_file(s) for s in required)],
        }, "The secrets stage, synced before every other stage: the store and one ExternalSecret per\n"
           "required Secret (External Secrets fails one whose KMS secret or key is missing).")],
        **({f"{SECRETS_FOLDER}/namespaces.yaml": namespaces(secrets)} if namespace_names(secrets) else {}),
        f"{SECRETS_FOLDER}/store.yaml": [Document(store(ctx), f"KMS Secrets Manager in {o['region']}; "
                                                  "one store for every namespace.")],
    }
    for s in required:
        files[f"{SECRETS_FOLDER}/{_file(s)}"] = [Document(
            external_secret(ctx, s), f"Used by {s.used_by}.\nKMS secret {kms_name(ctx, s)}: a JSON object, "
            "one property per key.")]
    if optional:
        files[f"{OPTIONAL_SECRETS_FOLDER}/kustomization.yaml"] = [Document({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": sorted(_file(s) for s in optional),
        }, "The optional Secrets, synced after the secrets stage; no stage waits for them, so one whose\n"
           "KMS secret does not exist holds back nothing.")]
    for s in optional:
        files[f"{OPTIONAL_SECRETS_FOLDER}/{_file(s)}"] = [Document(
            external_secret(ctx, s), f"Used by {s.used_by}, which start without it.\nKMS secret "
            f"{kms_name(ctx, s)}: a JSON object; every property it holds becomes a key (any of "
            f"{', '.join(s.keys)}).")]
    # One sentence: where the key goes, the one command that puts it there, when it arrives.
    hints = {f"{s.namespace}/{s.name}": (
        f"put '{{key}}' in KMS secret {kms_name(ctx, s)} (one JSON object of {', '.join(s.keys)}, "
        f"kept in {kms_name(ctx, s)}.json) with aliyun kms PutSecretValue --region {o['region']} "
        f"--SecretName {kms_name(ctx, s)} --VersionId \"$(date +%s)\" --SecretData \"$(cat {kms_name(ctx, s)}.json)\" "
        f"(CreateSecret with --VersionId v1 the first time), and External Secrets syncs it into Secret "
        f"{s.namespace}/{s.name} within {o['refresh_interval']}") for s in secrets}
    return SecretDelivery(readme, files, set_hints=hints)


def _install(o) -> str:
    """The operator's install at the release rlgen's tests run, its RRSA token projected where the
    ClusterSecretStore reads it (External Secrets' alibaba provider documentation)."""
    version = tested_version("external-secrets")
    values = ""
    if o["auth"] == "rrsa":
        folder, name = posixpath.split(o["oidc_token_file"])
        values = (f"cat > {RELEASE}-values.yaml <<'EOF'\n"
                  "extraVolumes:\n  - name: oidc-token\n    projected:\n      sources:\n"
                  f"        - serviceAccountToken: {{path: {name}, expirationSeconds: 7200, "
                  "audience: sts.aliyuncs.com}\n"
                  f"extraVolumeMounts:\n  - name: oidc-token\n    mountPath: {folder}\nEOF\n")
    return (f"Install External Secrets {version} (the release rlgen's tests run; the `alibaba` provider is in every "
            "release up to v1.3.2) with its Helm chart" + (", the RRSA token projected where the store reads it"
                                                            if values else "") + ":\n\n```sh\n" + values +
            f"helm install {RELEASE} {RELEASE} --repo {CHART_REPOSITORY} --version {version.removeprefix('v')} "
            f"--namespace {o['operator_namespace']} --create-namespace"
            + (f" -f {RELEASE}-values.yaml" if values else "") + "\n```")


def _rrsa_role(o) -> str:
    """The operator's RAM role: its trust policy on the cluster's OIDC provider, and KMS reads."""
    account, _, role = o["role_arn"].removeprefix("acs:ram::").partition(":role/")
    subject = f"system:serviceaccount:{o['operator_namespace']}:{RELEASE}"
    trust = {"Version": "1", "Statement": [{
        "Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Federated": [o["oidc_provider_arn"]]},
        "Condition": {"StringEquals": {"oidc:aud": "sts.aliyuncs.com", "oidc:sub": subject}}}]}
    reads = {"Version": "1", "Statement": [{
        "Action": ["kms:GetSecretValue"], "Effect": "Allow",
        "Resource": [f"acs:kms:{o['region']}:{account}:secret/{o['prefix']}*"]}]}
    return (f"The role `{role}` trusts the operator's ServiceAccount `{subject}` through the cluster's OIDC "
            f"provider, and may read the KMS secrets named `{o['prefix']}*`:\n\n```json\n"
            + json.dumps(trust, indent=2) + "\n```\n\n```sh\n"
            f"aliyun ram CreateRole --RoleName {role} --AssumeRolePolicyDocument '{_compact(trust)}'\n"
            f"aliyun ram CreatePolicy --PolicyName {role}-kms-read --PolicyDocument '{_compact(reads)}'\n"
            f"aliyun ram AttachPolicyToRole --PolicyType Custom --PolicyName {role}-kms-read --RoleName {role}\n"
            "```\n\nAnother cluster has its own OIDC provider, and its own role or region "
            "(`rlgen cluster add ... --set external-secrets.role_arn=...`): its role trusts its own provider.")


def _compact(doc: dict) -> str:
    """A policy as one line, for the aliyun CLI's argument."""
    return json.dumps(doc, separators=(",", ":"))


def _auth(o) -> str:
    """How the operator authenticates to KMS, said in the README."""
    if o["auth"] == "rrsa":
        return (f"It authenticates by RRSA as the RAM role `{o['role_arn']}`: enable RRSA on the cluster, let "
                f"the operator's ServiceAccount in `{o['operator_namespace']}` assume that role (trust policy "
                "on the OIDC provider), and project its token into the operator's pod at "
                f"`{o['oidc_token_file']}` (audience `sts.aliyuncs.com`). The role needs "
                "`kms:GetSecretValue` on these secrets.\n\n" + _install(o) + "\n\n" + _rrsa_role(o))
    return (_install(o) + "\n\nIt authenticates with an AccessKey (a RAM user allowed `kms:GetSecretValue` on these "
            "secrets), the one Secret made by hand:\n\n```sh\n"
            f"kubectl create secret generic {o['accesskey_secret']} -n {o['operator_namespace']} \\\n"
            "  --from-literal=accessKeyID=\"$ALIBABA_CLOUD_ACCESS_KEY_ID\" \\\n"
            "  --from-literal=accessKeySecret=\"$ALIBABA_CLOUD_ACCESS_KEY_SECRET\"\n```")
