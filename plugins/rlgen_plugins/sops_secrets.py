"""Secrets plugin: every value encrypted with SOPS for age recipients, in Git, decrypted by Flux.

``rlgen secret set NAME KEY`` encrypts one value with the real ``sops`` (from stdin, never a
file) into ``secrets/<namespace>/<name>/<key>`` and adds it to the ``secrets`` stage's
``secretGenerator``; kustomize-controller decrypts each generator file before it builds
(``spec.decryption``) with the age key of one Secret in ``flux-system``. Encrypting needs only
the public keys (the recipients), so anyone with write access to the repository can set a value.
Only Flux decrypts: with the ``argo`` sync plugin the selection is refused (:func:`rlgen_check`).
"""
from __future__ import annotations

import re

from rlgen.plugin_api import SECRETS_FOLDER, Document, Option, PluginInfo, Problem, SecretDelivery, hookimpl
from rlgen_plugins._secrets_common import namespace_names, namespaces

NAME = "sops"
#: kustomize-controller imports each key of the decryption Secret whose name ends in ``.agekey``
#: as age identities (internal/decryptor/decryptor.go, ``DecryptionAgeExt``).
AGE_KEY = "age.agekey"
FLUX_NAMESPACE = "flux-system"
#: An age X25519 recipient: "age1" and 58 bech32 characters.
_RECIPIENT = re.compile(r"age1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{58}")


def recipients_error(value: str) -> str | None:
    keys = [k.strip() for k in value.split(",")]
    if not value.strip() or not all(keys):
        return "expected one or more age public keys (age1...), comma-separated"
    for key in keys:
        if not _RECIPIENT.fullmatch(key):
            shown = key if key.startswith("age1") and len(key) < 80 else key[:8] + "..."
            return f"'{shown}' is not an age public key (age1 and 58 characters, as age-keygen -y prints)"
    if len(set(keys)) != len(keys):
        return "an age public key is given twice"
    return None


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME, slot="secrets",
        summary="Secrets encrypted with SOPS (age) in Git; Flux decrypts them, Argo CD cannot (rlgen secret set)",
        options=(
            Option("age_recipients", "age public keys the values are encrypted for, comma-separated "
                   "(age-keygen -y KEYFILE prints one)", required=True, check=recipients_error),
            Option("key_secret", f"Secret in {FLUX_NAMESPACE} holding the age private key ({AGE_KEY})",
                   "sops-age"),
        ),
    )


@hookimpl
def rlgen_check(ctx):
    # Argo CD's repo server runs plain `kustomize build`, which puts each encrypted
    # secretGenerator file into its Secret as it is; KSOPS decrypts only its own generator
    # (kind: ksops), not these files (docs/upstream.md).
    sync = ctx.plugins["sync"]
    if sync != "argo":
        return []
    return [Problem(
        "Argo CD cannot decrypt SOPS: it would apply the encrypted files as the Secrets' values; "
        "with argo use the external-secrets or manual-secrets secrets plugin, or keep sops with the "
        "flux sync plugin", (NAME, sync))]


def recipients(ctx) -> list[str]:
    return [k.strip() for k in ctx.options(NAME)["age_recipients"].split(",")]


def sops_config(keys: list[str]) -> str:
    return (
        "# sops reads this when rlgen secret set encrypts a value: every file under secrets/ is\n"
        "# encrypted for these age recipients (rlgen validate checks each file against them).\n"
        "creation_rules:\n"
        f"  - path_regex: ^{SECRETS_FOLDER}/\n"
        f"    age: {','.join(keys)}\n"
    )


def kustomization(secrets) -> Document:
    return Document({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": ["namespaces.yaml"] if namespace_names(secrets) else [],
        "generatorOptions": {"disableNameSuffixHash": True},
        "secretGenerator": [],
    }, "The secrets stage, synced before every other stage. rlgen secret set NAME KEY adds each\n"
       "encrypted value to secretGenerator; Flux decrypts the files before it builds. The consumers\n"
       "name the Secrets, so no content hash is added to their names.")


@hookimpl
def rlgen_secret_delivery(ctx, secrets):
    o = ctx.options(NAME)
    keys = recipients(ctx)
    readme = _readme(o, keys, secrets)
    if not secrets:
        return SecretDelivery(readme)
    return SecretDelivery(readme, {
        ".sops.yaml": sops_config(keys),
        f"{SECRETS_FOLDER}/kustomization.yaml": [kustomization(secrets)],
        **({f"{SECRETS_FOLDER}/namespaces.yaml": namespaces(secrets)} if namespace_names(secrets) else {}),
    }, decryption=o["key_secret"])


def _readme(o, keys: list, secrets) -> str:
    lines = "".join(
        f"- `{s.name}` in `{s.namespace}`: {s.purpose}, used by {s.used_by}; "
        f"keys {', '.join(f'`{k}`' for k in s.keys)}.\n" for s in secrets)
    first = secrets[0] if secrets else None
    example = f"rlgen secret set {first.name} {first.keys[0]} --from-env {first.env(first.keys[0])}\n" if first else ""
    return (
        "## Secrets: SOPS with age\n\n"
        "Every value lives in Git, encrypted with SOPS for the age public keys of `.sops.yaml` "
        f"({len(keys)} recipient{'s' if len(keys) != 1 else ''}): one file per key under "
        f"`{SECRETS_FOLDER}/<namespace>/<secret>/`, listed by the `secretGenerator` of "
        f"`{SECRETS_FOLDER}/kustomization.yaml`. The `{SECRETS_FOLDER}` stage syncs before every other one. "
        "Set a value from standard input or an environment variable (never an argument; one trailing "
        "newline is dropped); rlgen encrypts it with `sops` and commits the encrypted file:\n\n"
        f"```sh\n{example}rlgen secret list    # each Secret, its keys, which are set, who uses them\n```\n\n"
        f"{lines}\n"
        "Once per cluster, give the sync engine the age private key (the only Secret made by hand):\n\n"
        "```sh\n"
        f"kubectl create namespace {FLUX_NAMESPACE} --dry-run=client -o yaml | kubectl apply -f -\n"
        f"kubectl create secret generic {o['key_secret']} -n {FLUX_NAMESPACE} "
        f"--from-file={AGE_KEY}=\"$AGE_KEY_FILE\"\n"
        "```\n\n"
        f"Flux decrypts the stage with it (`spec.decryption: {{provider: sops, secretRef: {o['key_secret']}}}`).\n\n"
        "To rotate a value, set it again. To add or remove a recipient, change `.sops.yaml` "
        "(`rlgen update --set sops.age_recipients=...`) and set every value again; `rlgen validate` "
        "reports a file whose recipients differ from `.sops.yaml`. With no private key on your "
        "machine a value cannot be read back, only replaced.\n"
    )
