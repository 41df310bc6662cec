"""Argo CD on the local control plane as a user meets it: the release's own install manifest
applied as the README says, and the programs behind its two workloads, the application
controller and the repo-server, running beside the API server from the pinned build
(``toolchain/argocd``), with a Redis server as their cache.

The pods of the install manifest stay kwok's (Running, doing nothing), as Flux's Deployments do;
the processes here do their work. Argo CD's own local runs (its Procfile at the pinned release)
start them the same way: ``ARGOCD_FAKE_IN_CLUSTER`` makes the controller reach the in-cluster
destination ``https://kubernetes.default.svc`` through ``$KUBECONFIG`` instead of a pod's
service account, and the repo-server keeps its TLS, SSH and GnuPG folders where it is told.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from support.controlplane import ControlPlane, free_port, wait_until
from support.flux import readme_blocks
from support.toolchain import missing, module_dir, pinned, tool

MODULE = "github.com/argoproj/argo-cd/v3"
VERSION = pinned("argocd", MODULE)
NAMESPACE = "argocd"
#: The README's install command names the release manifest by URL; the test applies the same
#: file from the pinned module (no network here).
INSTALL_URL = re.compile(r"https://raw\.githubusercontent\.com/argoproj/argo-cd/(v[\d.]+)/manifests/install\.yaml")
SYNC_TIMEOUT = 300


def source() -> Path:
    return module_dir("argocd", MODULE)


def redis_server() -> str:
    found = shutil.which("redis-server")
    if not found:
        missing("redis-server is not installed: Argo CD keeps its cache in Redis (scripts/ci.sh installs "
                "Debian's redis-server)")
    return found


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_argocd(cp: ControlPlane) -> None:
    """Redis, the repo-server and the application controller, in the order each needs the one
    before; the controller reads its settings from the ``argocd`` namespace the install makes."""
    work = cp.workdir / "argocd"
    folders = {name: work / name for name in ("tls", "ssh", "gpg", "gpg-source", "cmp", "tmp")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    redis_port = free_port()
    cp.spawn("redis", [redis_server(), "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                       "--appendonly", "no", "--dir", str(work)])
    wait_until("redis listening", lambda: _listening(redis_port), timeout=30, on_timeout=cp.logs)
    argocd = tool("argocd")
    # The scripts the release image puts beside the binary (its Dockerfile's COPY of hack/): the
    # repo-server runs git-verify-wrapper.sh on every revision it renders.
    scripts = work / "bin"
    scripts.mkdir(exist_ok=True)
    for name in ("git-verify-wrapper.sh", "gpg-wrapper.sh"):
        shutil.copy(source() / "hack" / name, scripts / name)
        (scripts / name).chmod(0o755)
    common = {
        "ARGOCD_TLS_DATA_PATH": str(folders["tls"]), "ARGOCD_SSH_DATA_PATH": str(folders["ssh"]),
        # The repo-server runs git and kustomize from PATH, and git runs "argocd" as its askpass
        # helper: the pinned build's folder first.
        "PATH": os.pathsep.join([str(scripts), str(Path(argocd).parent), str(Path(tool("kustomize")).parent),
                                 os.environ.get("PATH", "")]),
        "TMPDIR": str(folders["tmp"]),
    }
    repo_port = free_port()
    cp.spawn("argocd-repo-server", [
        argocd, "--address", "127.0.0.1", "--port", str(repo_port), "--metrics-address", "127.0.0.1",
        "--metrics-port", str(free_port()), "--redis", f"127.0.0.1:{redis_port}", "--loglevel", "info",
    ], env={**common, "ARGOCD_BINARY_NAME": "argocd-repo-server", "ARGOCD_GPG_ENABLED": "false",
            "ARGOCD_GNUPGHOME": str(folders["gpg"]), "ARGOCD_GPG_DATA_PATH": str(folders["gpg-source"]),
            "ARGOCD_PLUGINSOCKFILEPATH": str(folders["cmp"])})
    wait_until("argocd-repo-server listening", lambda: _listening(repo_port), timeout=60, on_timeout=cp.logs)
    cp.spawn("argocd-application-controller", [
        argocd, "--namespace", NAMESPACE, "--repo-server", f"127.0.0.1:{repo_port}",
        "--redis", f"127.0.0.1:{redis_port}", "--metrics-port", str(free_port()), "--loglevel", "info",
    ], env={**common, "ARGOCD_BINARY_NAME": "argocd-application-controller", "ARGOCD_FAKE_IN_CLUSTER": "true",
            **cp.env()})


def install_as_the_readme_says(cp: ControlPlane, repo: Path) -> None:
    """The README's *Sync: Argo CD* commands, run in the clone ``repo`` as written, with the
    release manifest's URL read from the pinned module; then the controller and repo-server start."""
    blocks = readme_blocks((repo / "README.md").read_text(), "Sync: Argo CD")
    manifest = source() / "manifests" / "install.yaml"
    for block in blocks:
        for release in INSTALL_URL.findall(block):
            assert release == VERSION, f"the README installs Argo CD {release}; the tests run {VERSION}"
        script = INSTALL_URL.sub(str(manifest), block)
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=repo, capture_output=True, text=True,
                                env={**os.environ, **cp.env()})
        assert result.returncode == 0, f"the README's command fails:\n{script}\n{result.stdout}{result.stderr}"
        if "install.yaml" in script and "argocd-application-controller" not in cp.processes:
            start_argocd(cp)


def applications(cp: ControlPlane) -> dict[str, dict]:
    return {a["metadata"]["name"]: a for a in cp.objects("applications", "-n", NAMESPACE)}


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
    """What ``argocd app get --refresh`` asks of every Application: compare with Git and the
    cluster again now. Argo CD's own look comes at its resync, every two to three minutes: the
    release's argocd-cm ignores status-only updates of tracked objects, and a CRD turning
    Established or a child Application turning healthy was seen to wait for that resync (four
    minutes on a loaded machine) before the next wave started. The push webhook does this on a
    real cluster for a new commit."""
    for name in applications(cp):
        # An Application the new revision removed may be gone by now (the root pruned it).
        cp.kubectl("annotate", "--overwrite", "-n", NAMESPACE, f"application/{name}",
                   "argocd.argoproj.io/refresh=normal", check=False)


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
    return sync == "Synced" and at and (health == "Healthy" or (name in RUNNING and health == "Progressing"))
