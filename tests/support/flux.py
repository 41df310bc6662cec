"""Flux on the local control plane as a user meets it: the README's set-up steps, the objects
``flux bootstrap`` leaves, and waiting for Kustomizations the way ``flux reconcile`` does."""
from __future__ import annotations

import re
import time

from support.controlplane import ControlPlane, wait_until

from rlgen.e2e.run import bootstrap  # noqa: F401 - the objects flux bootstrap leaves, as rlgen e2e makes them

REGISTRY = "registry.cn-hangzhou.aliyuncs.com/rl-team"
NAMESPACE = "rl-training"
SYNC_TIMEOUT = 300


def readme_blocks(readme: str, heading: str) -> list[str]:
    """The ``sh`` code blocks of one README section, as a user copies them."""
    section = readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return [re.sub(r"^  ", "", block, flags=re.M) for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def ready(obj: dict) -> dict | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == "Ready"), None)


def kustomizations(cp: ControlPlane) -> dict[str, dict]:
    return {k["metadata"]["name"]: k for k in cp.objects("kustomizations", "-n", "flux-system")}


def fetch(cp: ControlPlane, timeout: float = SYNC_TIMEOUT) -> tuple[str, str]:
    """``flux reconcile source git flux-system`` and every Kustomization asked to follow:
    (the request's stamp, the revision fetched). The annotation is what the flux CLI sets."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{time.monotonic_ns()}"
    cp.kubectl("annotate", "--overwrite", "-n", "flux-system", "gitrepository/flux-system",
               f"reconcile.fluxcd.io/requestedAt={stamp}")

    def fetched():
        repo = cp.objects("gitrepositories", "-n", "flux-system")
        source = next(r for r in repo if r["metadata"]["name"] == "flux-system")
        return source["status"].get("lastHandledReconcileAt") == stamp and source["status"]["artifact"]["revision"]

    revision = wait_until("the flux-system GitRepository to fetch", fetched, timeout=timeout)
    for name in kustomizations(cp):
        # A stage the new revision removed may be gone by now (flux-system pruned it).
        done = cp.kubectl("annotate", "--overwrite", "-n", "flux-system", f"kustomization/{name}",
                          f"reconcile.fluxcd.io/requestedAt={stamp}", check=False)
        assert done.returncode == 0 or "NotFound" in done.stderr, done.stderr
    return stamp, revision


def reconcile(cp: ControlPlane, timeout: float = SYNC_TIMEOUT) -> dict[str, dict]:
    """Fetch and wait: every Kustomization Ready at the new revision of the repository."""
    _, revision = fetch(cp, timeout)
    return wait_until(
        "every Flux Kustomization Ready at the pushed revision",
        lambda: (ks := kustomizations(cp)) and all(
            (r := ready(k)) and r["status"] == "True" and (
                k["spec"]["sourceRef"]["name"] != "flux-system" or k["status"].get("lastAppliedRevision") == revision)
            for k in ks.values()) and ks,
        timeout=timeout, interval=2,
        on_timeout=lambda: "\n".join(f"{n}: {ready(k)}" for n, k in kustomizations(cp).items()))
