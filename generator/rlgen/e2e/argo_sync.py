"""An Argo CD repository synced on the throwaway control plane: the root Application applied as
the README applies it, then every Application of the cluster's folder created and Synced, or
the first that failed and why.

Waves gate one another (the generated health check), so an Application exists only once the
waves before it are healthy: every one of them Synced means the last wave applied too. Whether
its runs' pods can be scheduled is ``rlgen status --wait``'s to say, as for Flux.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from rlgen.e2e import argo
from rlgen.e2e.stages import Synced
from rlgen.repo import sync_engines
from rlgen.tools import kustomize, yamlio

#: Seconds an Application must stay failing before it is the run's failure: the generated retry
#: policy tries a failed sync again after 30 s, then 60 s (its backoff), which is how a sync that
#: failed on something arriving late (a CRD an earlier wave created) finishes.
FAILING_FOR = 100
#: How often the Applications are refreshed while the run waits (rlgen.e2e.argo.refresh).
REFRESH_EVERY = 10
WAVE = "argocd.argoproj.io/sync-wave"


def applications(root: Path, folder: str) -> list[str]:
    """The Applications the root creates from ``folder``, as it builds it (kustomize), in the
    order their waves sync: the cluster's own stages and the upstream sources its kustomization
    adds."""
    apps = [d for d in yamlio.read_manifests_all(kustomize.build(root / folder))
            if isinstance(d, dict) and d.get("kind") == sync_engines.ARGO.kind]

    def wave(app: dict) -> int:
        try:
            return int(((app.get("metadata") or {}).get("annotations") or {}).get(WAVE, 0))
        except ValueError:
            return 0
    return [a["metadata"]["name"] for a in sorted(apps, key=lambda a: (wave(a), a["metadata"]["name"]))]


def sync(cp, root_documents: list[dict], names: list[str], timeout: float) -> Synced:
    """``root_documents`` (the root Application's file) applied, then :func:`wait`."""
    cp.kubectl("apply", "-n", argo.NAMESPACE, "-f", "-",
               input=json.dumps({"apiVersion": "v1", "kind": "List", "items": root_documents}))
    return wait(cp, names, timeout)


def _row(app: dict | None) -> dict:
    if app is None:
        return {"status": "Unknown", "reason": "not created yet", "message": "the waves before it are not healthy"}
    state = sync_engines.stage_state(sync_engines.ARGO, app)
    status = app.get("status") or {}
    operation = status.get("operationState") or {}
    message = operation.get("message") or (status.get("health") or {}).get("message") or ""
    healthy = state.healthy
    # A failed sync the retry policy will try again is Running again at once: failing until a
    # retry finishes it (FAILING_FOR).
    if operation.get("phase") == "Running" and operation.get("retryCount"):
        healthy = False
    return {"status": {True: "True", False: "False"}.get(healthy, "Unknown"), "reason": state.summary,
            "message": message}


def wait(cp, names: list[str], timeout: float) -> Synced:
    """Until every Application of ``names`` is Synced, one has failed for :data:`FAILING_FOR`
    seconds, or ``timeout``."""
    start = time.monotonic()
    failing_since: dict[str, float] = {}
    refreshed = start
    while True:
        apps = argo.applications(cp)
        rows = {f"Application {name}": _row(apps.get(name)) for name in names}
        now = time.monotonic()
        for name in names:
            if rows[f"Application {name}"]["status"] == "False":
                failing_since.setdefault(name, now)
            else:
                failing_since.pop(name, None)
        failed = [n for n in names if n in failing_since and now - failing_since[n] >= FAILING_FOR]
        if failed:
            name = f"Application {failed[0]}"
            row = rows[name]
            return Synced(rows, name, f"stage {name} failed: {row['reason']}: {row['message']}".rstrip(": "))
        if not failing_since and all(
                name in apps and ((apps[name].get("status") or {}).get("sync") or {}).get("status") == "Synced"
                for name in names):
            return Synced(rows)
        if now - start > timeout:
            waiting = next((n for n in rows if rows[n]["status"] != "True"), f"Application {names[0]}")
            row = rows[waiting]
            return Synced(rows, waiting, f"timed out after {int(timeout)} s waiting for {waiting} "
                                         f"({row['reason']}: {row['message']})")
        if now - refreshed >= REFRESH_EVERY:
            argo.refresh(cp, apps)
            refreshed = now
        time.sleep(2)
