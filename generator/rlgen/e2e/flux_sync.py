"""A Flux repository synced on the throwaway control plane: ``flux bootstrap git`` pointed at the
run's Git server, then every Kustomization Ready, or the first that failed and why."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from rlgen.e2e.stages import Synced

#: Flux's Ready=False reasons that retry by themselves: a dependency not Ready, still applying,
#: and a source whose artifact is not there yet (kustomize-controller retries it; a source that
#: failed is reported on its own GitRepository, which is watched too).
TRANSIENT = ("DependencyNotReady", "Progressing", "ProgressingWithRetry", "ArtifactFailed")
ROOT = "Kustomization flux-system"


def sync(cp, flux: str, url: str, branch: str, path: str, timeout: float, work: Path, password: str) -> Synced:
    failure = bootstrap(cp, flux, url, branch, path, timeout, work, password)
    if failure:
        return Synced(stages(cp), ROOT, failure)
    return wait(cp, timeout)


def bootstrap(cp, flux: str, url: str, branch: str, path: str, timeout: float, work: Path, password: str) -> str:
    """``flux bootstrap git`` against the throwaway Git server, which speaks plain HTTP and takes
    any password: ``--token-auth`` (an https URL is otherwise turned into SSH with a new deploy
    key) and ``--allow-insecure-http``. A failure (the flux-system sync failing, a component not
    available) is the flux-system stage's: what it answers, else nothing."""
    result = subprocess.run([flux, "bootstrap", "git", f"--url={url}", f"--branch={branch}", f"--path={path}",
                             "--token-auth", "--allow-insecure-http", f"--timeout={int(timeout)}s"],
                            capture_output=True, text=True, cwd=work,
                            env={**os.environ, **cp.env(), "GIT_PASSWORD": password})
    if result.returncode == 0:
        return ""
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    return f"flux bootstrap git failed: {lines[-1] if lines else f'exit {result.returncode}'}"


def _ready(obj: dict) -> dict:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {})


def stages(cp) -> dict:
    """The Ready condition of every Kustomization and GitRepository of flux-system, by name."""
    objects = {}
    for plural, kind in [("kustomizations", "Kustomization"), ("gitrepositories", "GitRepository")]:
        for obj in cp.objects(plural, "-n", "flux-system"):
            objects[f"{kind} {obj['metadata']['name']}"] = obj
    return {name: _ready(obj) for name, obj in objects.items()}


def wait(cp, timeout: float) -> Synced:
    """Until every Kustomization is Ready, one failed (a reason Flux does not retry soon: its
    retry is the stage's interval), or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        now = stages(cp)
        # Not compared with observedGeneration: kustomize-controller records it only when an
        # apply succeeds, and nothing here changes a stage's spec after it is created.
        failed = [(name, c) for name, c in now.items() if c.get("status") == "False"
                  and c.get("reason") not in TRANSIENT]
        if failed:
            name, condition = failed[0]
            return Synced(now, name, f"stage {name} failed: {condition.get('reason')}: {condition.get('message', '')}")
        if now.get(ROOT, {}).get("status") == "True" and all(c.get("status") == "True" for c in now.values()):
            return Synced(now)
        if time.monotonic() > deadline:
            waiting = [f"{n} ({c.get('reason') or 'no status'}: {c.get('message', '')})"
                       for n, c in now.items() if c.get("status") != "True"] or ["the flux-system sync"]
            return Synced(now, waiting[0].split(" (")[0], f"timed out after {int(timeout)} s waiting for {waiting[0]}")
        time.sleep(2)
