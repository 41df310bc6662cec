"""Argo CD on the throwaway control plane: the pinned release's own install manifest (its CRDs,
``argocd-cm`` and the other settings, and workloads whose pods kwok keeps Running, as it does
Flux's), and the programs behind the two that do the work, the application controller and the
repo-server, running beside the API server from the pinned build with a Redis server as their
cache.

Argo CD's own local runs (its Procfile at the pinned release) start them the same way:
``ARGOCD_FAKE_IN_CLUSTER`` makes the controller reach the in-cluster destination
``https://kubernetes.default.svc`` through ``$KUBECONFIG`` instead of a pod's service account,
and the repo-server keeps its TLS, SSH and GnuPG folders where it is told. One binary serves
both, picked by ``ARGOCD_BINARY_NAME`` as the release image's links pick it.
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from rlgen.e2e.controlplane import ControlPlane, free_port, wait_until

MODULE = "github.com/argoproj/argo-cd/v3"
NAMESPACE = "argocd"
#: The release image puts these scripts of the module's hack/ beside the binary (its Dockerfile):
#: the repo-server runs git-verify-wrapper.sh on every revision it renders.
SCRIPTS = ("git-verify-wrapper.sh", "gpg-wrapper.sh")


def install_manifest(cp: ControlPlane) -> Path:
    """The release's ``manifests/install.yaml``, which the generated README applies by URL."""
    return cp.source(MODULE) / "manifests" / "install.yaml"


def install(cp: ControlPlane, redis_server: str) -> None:
    """What the generated README's *Sync: Argo CD* installs, from the pinned module instead of
    the network: the namespace, the manifest applied server-side (its CRDs are too large for a
    client-side apply's annotation), its CRDs served; then the processes (:func:`start`)."""
    cp.kubectl("create", "namespace", NAMESPACE, check=False)
    cp.kubectl("apply", "--server-side", "--force-conflicts", "-n", NAMESPACE, "-f", str(install_manifest(cp)))
    cp.kubectl("wait", "--for=condition=Established", "--timeout=120s", "crd",
               "applications.argoproj.io", "appprojects.argoproj.io")
    start(cp, redis_server)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(cp: ControlPlane, redis_server: str) -> None:
    """Redis, the repo-server and the application controller, in the order each needs the one
    before; the controller reads its settings from the ``argocd`` namespace the install made."""
    work = cp.workdir / "argocd"
    folders = {name: work / name for name in ("tls", "ssh", "gpg", "gpg-source", "cmp", "tmp", "bin")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=True)
    redis_port = free_port()
    cp.spawn("redis", [redis_server, "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                       "--appendonly", "no", "--dir", str(work)])
    wait_until("redis listening", lambda: _listening(redis_port), timeout=30, on_timeout=cp.logs)
    argocd = cp.tool("argocd")
    for name in SCRIPTS:
        shutil.copy(cp.source(MODULE) / "hack" / name, folders["bin"] / name)
        (folders["bin"] / name).chmod(0o755)
    common = {
        "ARGOCD_TLS_DATA_PATH": str(folders["tls"]), "ARGOCD_SSH_DATA_PATH": str(folders["ssh"]),
        # The repo-server runs git and kustomize from PATH, and git runs "argocd" as its askpass
        # helper: the pinned builds first.
        "PATH": os.pathsep.join([str(folders["bin"]), str(Path(argocd).parent),
                                 str(Path(cp.tool("kustomize")).parent), os.environ.get("PATH", "")]),
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


def applications(cp: ControlPlane) -> dict[str, dict]:
    return {a["metadata"]["name"]: a for a in cp.objects("applications", "-n", NAMESPACE)}


def refresh(cp: ControlPlane, names) -> None:
    """What ``argocd app get --refresh`` asks of each Application: compare with Git and the
    cluster again now. Argo CD's own look comes at its resync, every two to three minutes: the
    release's argocd-cm ignores status-only updates of tracked objects, so a CRD turning
    Established or a child Application turning healthy waits for that resync before the next
    wave starts. The push webhook does this on a real cluster for a new commit."""
    for name in names:
        # An Application the new revision removed may be gone by now (the root pruned it).
        cp.kubectl("annotate", "--overwrite", "-n", NAMESPACE, f"application/{name}",
                   "argocd.argoproj.io/refresh=normal", check=False)
