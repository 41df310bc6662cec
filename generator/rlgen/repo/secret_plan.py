"""The Secrets a generated repository reads and how its secrets plugin delivers them, from its
``rlgen.yaml``: what the generator, ``rlgen secret``, ``rlgen validate`` and ``rlgen doctor``
share."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlgen.contributions import Context, SecretDelivery, SecretRef
from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import discover
from rlgen.plugin_host.manager import Hooks
from rlgen.plugin_host.selection import select
from rlgen.repo import answers
from rlgen.spec import Spec


def hf_token(spec: Spec) -> SecretRef:
    """Only private or gated datasets and models need it; the dataset and model Jobs read it as
    optional."""
    return SecretRef("hf-token", spec.namespace, ("token",),
                     "optional Hugging Face token, only for private or gated datasets and models",
                     "the dataset and model Jobs", optional=True)


def declared_secrets(hooks: Hooks, ctx: Context) -> list[SecretRef]:
    """Every Secret the repository's objects read: the plugins' and the dataset Jobs' own."""
    return hooks.secrets(ctx) + [hf_token(ctx.spec)]


@dataclass(frozen=True)
class SecretPlan:
    secrets: list[SecretRef]
    delivery: SecretDelivery
    plugin: str

    @property
    def encrypted(self) -> bool:
        """Values live in Git, encrypted with sops, under ``secrets/<namespace>/<name>/``."""
        return bool(self.delivery.decryption)

    def find(self, name: str, namespace: str | None) -> SecretRef:
        found = [s for s in self.secrets if s.name == name and namespace in (None, s.namespace)]
        if len(found) > 1:
            raise RlgenError(f"Secret '{name}' is in several namespaces ({', '.join(s.namespace for s in found)}): "
                             "pass --namespace")
        if not found:
            known = ", ".join(sorted({s.name for s in self.secrets}))
            where = f" in namespace '{namespace}'" if namespace else ""
            raise RlgenError(f"the repository reads no Secret '{name}'{where} (its Secrets: {known})")
        return found[0]


def plan(root: Path, selection=None) -> SecretPlan:
    """The Secrets the repository at ``root`` reads; ``selection``: its plugins and answers,
    when the caller has them already."""
    if selection is None:
        doc = answers.read(root)
        selection = select(discover(), list(doc["plugins"].values()), doc["options"], None, recorded=True)
    hooks = selection.hooks()
    ctx = selection.context(selection.spec(hooks))
    secrets = declared_secrets(hooks, ctx)
    return SecretPlan(secrets, hooks.secret_delivery(ctx, secrets), selection.plugins["secrets"])
