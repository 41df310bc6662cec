"""Secrets plugin: the user creates each declared Secret with kubectl, once per cluster, before
the first sync. Git names the Secrets and never holds a value."""
from __future__ import annotations

from rlgen.plugin_api import PluginInfo, SecretDelivery, hookimpl
from rlgen_plugins._secrets_common import kubectl_create, kubectl_label

NAME = "manual-secrets"


@hookimpl
def rlgen_plugin():
    return PluginInfo(name=NAME, slot="secrets",
                      summary="Secrets created by hand with kubectl before the first sync (the README lists them)")


@hookimpl
def rlgen_secret_delivery(ctx, secrets):
    # The sync engine's namespace too: the README installs the engine after the Secrets are
    # created, and its installation applies into a namespace that exists.
    namespaces = "".join(f"kubectl create namespace {ns} --dry-run=client -o yaml | kubectl apply -f -\n"
                         for ns in sorted({s.namespace for s in secrets}))
    items = "".join(
        f"\n- `{s.name}` in `{s.namespace}`: {s.purpose}, used by {s.used_by}.\n\n"
        f"  ```sh\n  {kubectl_create(s, indent='    ')}\n  ```\n" for s in secrets)
    return SecretDelivery(
        "## Secrets to create before the first sync\n\n"
        "The repository names these Secrets and never holds their values. Their namespaces are created\n"
        "by the sync and the sync engine's installation, which have not run yet: create the namespaces\n"
        "first (both adopt them), then each Secret once per cluster, with the values read from your\n"
        "environment or secret store:\n\n"
        f"```sh\n{namespaces}```\n{items}",
        set_hints={f"{s.namespace}/{s.name}": _hint(s) for s in secrets},
    )


def _hint(s) -> str:
    values = " ".join(f'--from-literal={k}="${s.env(k)}"' for k in s.keys)
    return (f"Create the Secret on each cluster with all its keys ({', '.join(s.keys)}), values from your "
            f"environment:\n  kubectl create secret generic {s.name} -n {s.namespace} {values} "
            "--dry-run=client -o yaml | kubectl apply -f -" + kubectl_label(s, "  "))
