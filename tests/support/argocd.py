"""Argo CD on the local control plane as a user meets it: the release's own install manifest
applied as the README says, and the programs behind its application controller and repo-server
started as ``rlgen e2e`` starts them (rlgen.e2e.argo), from the pinned build
(``toolchain/argocd``), with a Redis server as their cache."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from rlgen.e2e import argo
from support.controlplane import ControlPlane, wait_until
from support.flux import readme_blocks
from support.toolchain import missing, pinned

VERSION = pinned("argocd", argo.MODULE)
NAMESPACE = argo.NAMESPACE
#: The README's install command names the release manifest by URL; the test applies the same
#: file from the pinned module (no network here).
INSTALL_URL = re.compile(r"https://raw\.githubusercontent\.com/argoproj/argo-cd/(v[\d.]+)/manifests/install\.yaml")
SYNC_TIMEOUT = 300


def redis_server() -> str:
    found = shutil.which("redis-server")
    if not found:
        missing("redis-server is not installed: Argo CD keeps its cache in Redis (scripts/ci.sh installs "
                "Debian's redis-server)")
    return found


def install_as_the_readme_says(cp: ControlPlane, repo: Path) -> None:
    """The README's *Sync: Argo CD* commands, run in the clone ``repo`` as written, with the
    release manifest's URL read from the pinned module; then the controller and repo-server start."""
    blocks = readme_blocks((repo / "README.md").read_text(), "Sync: Argo CD")
    manifest = argo.install_manifest(cp)
    for block in blocks:
        for release in INSTALL_URL.findall(block):
            assert release == VERSION, f"the README installs Argo CD {release}; the tests run {VERSION}"
        script = INSTALL_URL.sub(str(manifest), block)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=repo, capture_output=True, text=True,
                                env={**os.environ, **cp.env()})
        assert result.returncode == 0, f"the README's command fails:\n{script}\n{result.stdout}{result.stderr}"
        if "install.yaml" in script and "argocd-application-controller" not in cp.processes:
            argo.start(cp, redis_server())


def applications(cp: ControlPlane) -> dict[str, dict]:
    return argo.applications(cp)


def state(app: dict) -> tuple[str, str]:
    status = app.get("status", {})
    return status.get("sync", {}).get("status", ""), status.get("health", {}).get("status", "")


def describe(cp: ControlPlane) -> str:
    lines = []
    for name, app in sorted(applications(cp).items()):
        status = app.get("status", {})
        operation = status.get("operationState", {})
        lines.append(f"{name}: {state(app)} {operation.get('phase', '')} {operation.get('message', '')[:300]}")
        # Argo CD 3 keeps each resource's health out of the Application (its resource tree
        # holds it): the Application's own health message names the resource that is not healthy.
        if message := status.get("health", {}).get("message"):
            lines.append(f"  health: {message[:300]}")
        for condition in status.get("conditions", []):
            lines.append(f"  {condition['type']}: {condition['message'][:300]}")
        for resource in status.get("resources", []):
            if resource["kind"] in ("Application", "RayJob"):
                lines.append(f"  {resource['kind']}/{resource['name']}: {resource.get('status')}")
    return "\n".join(lines)


def refresh(cp: ControlPlane) -> None:
    argo.refresh(cp, applications(cp))


def sync_now(cp: ControlPlane, name: str, timeout: float = SYNC_TIMEOUT) -> dict:
    """``argocd app sync NAME``: the sync operation Argo CD's API server writes into the
    Application (with the Application's own syncOptions, server/application/application.go),
    run by the controller now though nothing is out of sync. The operation's state once Succeeded."""
    app = applications(cp)[name]
    started = (app.get("status", {}).get("operationState") or {}).get("startedAt", "")
    operation = {"initiatedBy": {"username": "e2e"}, "sync": {
        "revision": app["spec"]["source"]["targetRevision"], "prune": True,
        "syncOptions": app["spec"].get("syncPolicy", {}).get("syncOptions", [])}}
    cp.kubectl("patch", "application", name, "-n", NAMESPACE, "--type=merge",
               "-p", json.dumps({"operation": operation}))

    def done():
        state = applications(cp)[name].get("status", {}).get("operationState") or {}
        return state.get("startedAt", "") != started and state.get("phase") == "Succeeded" and state
    return wait_until(f"Argo CD's sync of {name} run now", done, timeout=timeout, interval=2,
                      on_timeout=lambda: describe(cp))


#: Applications whose own health follows a training run: Progressing while a RayJob runs.
RUNNING = ("runs",)


def synced_at(cp: ControlPlane, revision: str, timeout: float = SYNC_TIMEOUT) -> dict[str, dict]:
    """Every Application of the repository synced to ``revision`` (the upstream sources at their
    tags) and Healthy, the runs Progressing or Healthy: their objects, by name."""
    def done():
        apps = applications(cp)
        repo = apps.get("root", {}).get("spec", {}).get("source", {}).get("repoURL")
        if repo and all(_settled(name, app, repo, revision) for name, app in apps.items()):
            return apps
        refresh(cp)
        return None
    return wait_until(f"every Argo CD Application Synced at {revision[:12]} and healthy", done, timeout=timeout,
                      interval=10, on_timeout=lambda: describe(cp) + "\n" + cp.logs(20))


def _settled(name: str, app: dict, repo: str, revision: str) -> bool:
    sync, health = state(app)
    at = app["spec"]["source"]["repoURL"] != repo or app["status"]["sync"].get("revision") == revision
    # An operation still running (a retry between attempts) is not settled, whatever the comparison says.
    running = app.get("status", {}).get("operationState", {}).get("phase") == "Running"
    return sync == "Synced" and at and not running and (health == "Healthy" or (name in RUNNING and health == "Progressing"))
