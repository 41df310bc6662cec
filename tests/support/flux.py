"""Flux on the local control plane as a user meets it: the README's set-up steps, ``flux
bootstrap git`` run by the pinned flux CLI, and waiting for Kustomizations the way ``flux
reconcile`` does."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

from ruamel.yaml import YAML
from support.controlplane import ControlPlane, wait_until
from support.toolchain import module_dir, tool


REGISTRY = "registry.cn-hangzhou.aliyuncs.com/rl-team"
NAMESPACE = "rl-training"
SYNC_TIMEOUT = 300
#: The Receiver and its token Secret the flux plugin generates.
RECEIVER, RECEIVER_SECRET = "git-push", "git-webhook-token"


def bootstrapped_args(repo: Path, cluster: str, controller: str = "kustomize-controller") -> list[str]:
    """The arguments ``flux bootstrap`` installs ``controller`` with from ``repo``: the cluster's
    ``flux-system`` kustomization built with the controller's release Deployment (its module's
    ``config/manager/deployment.yaml``, which flux2 v2.9.3's manifests take) where bootstrap writes
    ``gotk-components.yaml``."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "flux-system"
        shutil.copytree(repo / "clusters" / cluster / "flux-system", folder)
        deployment = module_dir("flux", f"github.com/fluxcd/{controller}") / "config" / "manager" / "deployment.yaml"
        shutil.copy(deployment, folder / "gotk-components.yaml")
        out = subprocess.run([tool("kustomize"), "build", str(folder)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (found,) = [d for d in YAML(typ="safe").load_all(out.stdout)
                if d and d["kind"] == "Deployment" and d["metadata"]["name"] == controller]
    return found["spec"]["template"]["spec"]["containers"][0]["args"]


def requeue_dependency(args: list[str]) -> str | None:
    """The ``--requeue-dependency`` of kustomize-controller's ``args`` (None: its default)."""
    return next((a.partition("=")[2] for a in reversed(args) if a.startswith("--requeue-dependency=")), None)


def readme_blocks(readme: str, heading: str) -> list[str]:
    """The ``sh`` code blocks of one README section, as a user copies them."""
    section = readme.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    # A block in a list item is indented as a whole: only that common indentation goes.
    return [textwrap.dedent(block) for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


#: What the local Git server (plain HTTP, no accounts) needs beyond the README's arguments:
#: credentials over HTTPS or SSH otherwise (an https URL without --token-auth is turned into an
#: SSH URL with a new deploy key). Any password: the server takes every request.
LOCAL_GIT = "--token-auth --allow-insecure-http"
GIT_PASSWORD = "rlgen-e2e"


def bootstrap(cp: ControlPlane, repo: Path, url: str, branch: str, path: str) -> None:
    """The README's *Sync: Flux* commands run in the clone ``repo``: ``flux bootstrap git`` (the
    pinned CLI) installs Flux's components, commits them and the sync objects to ``branch`` and
    waits for the flux-system Kustomization, which the controller processes reconcile; then the
    clone pulls those commits. Another cluster of the repository (``path``) gets the same command
    with its own path, as ``rlgen cluster add`` says."""
    command = f"flux bootstrap git --url={url} --branch={branch} --path={path}"
    block = readme_blocks((repo / "README.md").read_text(), "Sync: Flux")[0]
    # Another cluster's bootstrap is the main one's with its own path (the block may start with a
    # check of GIT_PASSWORD, and go on with the clone's git pull).
    line = next(ln for ln in block.splitlines() if ln.startswith("flux bootstrap git "))
    script = block if command in block else block.replace(line, command)
    assert command in script, f"the README's bootstrap is not `{command}`:\n{block}"
    # The README's lines as written; only the flux command gets the local server's flags.
    wrapper = f'flux() {{ "{tool("flux")}" "$@" {LOCAL_GIT}; }}\n'
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", wrapper + script], cwd=repo, capture_output=True,
                            text=True, env={**os.environ, **cp.env(), "GIT_PASSWORD": GIT_PASSWORD})
    assert result.returncode == 0, f"the README's bootstrap fails:\n{script}\n{result.stdout}{result.stderr}"


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


def reapply(cp: ControlPlane, name: str, timeout: float = SYNC_TIMEOUT) -> dict:
    """``flux reconcile kustomization NAME`` without a new commit: the stage applied again now,
    as its interval would. The Kustomization once it has handled the request and is Ready."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{time.monotonic_ns()}"
    cp.kubectl("annotate", "--overwrite", "-n", "flux-system", f"kustomization/{name}",
               f"reconcile.fluxcd.io/requestedAt={stamp}")
    return wait_until(f"Flux Kustomization {name} applied again", lambda: (k := kustomizations(cp)[name])
                      and k["status"].get("lastHandledReconcileAt") == stamp and (r := ready(k))
                      and r["status"] == "True" and k, timeout=timeout, interval=2)


def receiver(cp: ControlPlane) -> dict:
    """The generated Receiver once notification-controller has it Ready: its path is served."""
    def found():
        r = next((r for r in cp.objects("receivers", "-n", "flux-system") if r["metadata"]["name"] == RECEIVER), None)
        return r if r and (c := ready(r)) and c["status"] == "True" else None
    return wait_until(f"Receiver {RECEIVER} Ready", found, timeout=SYNC_TIMEOUT, interval=1)


def webhook_token(cp: ControlPlane) -> str:
    secret = json.loads(cp.kubectl("get", "secret", RECEIVER_SECRET, "-n", "flux-system", "-o", "json").stdout)
    return base64.b64decode(secret["data"]["token"]).decode()


def post_push(cp: ControlPlane, path: str, token: str, commit: str, branch: str = "main") -> int:
    """What a Git host sends after a push to a ``generic-hmac`` Receiver: a JSON body naming the
    pushed commit, signed with the shared token (``X-Signature: sha256=<HMAC>``). The HTTP status."""
    body = json.dumps({"ref": f"refs/heads/{branch}", "after": commit}).encode()
    signature = "sha256=" + hmac.new(token.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(cp.endpoints["webhook-receiver"] + path, data=body, method="POST",
                                     headers={"Content-Type": "application/json", "X-Signature": signature})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def fetched_revision(cp: ControlPlane) -> str:
    source = next(r for r in cp.objects("gitrepositories", "-n", "flux-system") if r["metadata"]["name"] == "flux-system")
    return source.get("status", {}).get("artifact", {}).get("revision", "")
