"""The environment of an ``rlgen validate`` that checks schemas with rlgen's own validator even
where the pinned kubeconform is on PATH (rlgen prefers kubeconform when it finds it)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def without_kubeconform(env: dict) -> dict:
    """``env`` with kubeconform taken off PATH and every other command of its folder kept (the
    pinned kustomize), so a run renders as it does with kubeconform."""
    folders = env.get("PATH", "").split(os.pathsep)
    hiding = [f for f in folders if f and os.path.lexists(os.path.join(f, "kubeconform"))]
    if not hiding:
        return dict(env)
    digest = hashlib.sha256(os.pathsep.join(hiding).encode()).hexdigest()[:12]
    keep = Path(tempfile.gettempdir()) / f"rlgen-tests-{os.getuid()}" / f"without-kubeconform-{digest}"
    keep.mkdir(parents=True, exist_ok=True)
    for folder in hiding:
        for command in Path(folder).iterdir():
            if command.name != "kubeconform" and not os.path.lexists(keep / command.name):
                try:
                    (keep / command.name).symlink_to(command)
                except FileExistsError:  # another test worker made it
                    pass
    return {**env, "PATH": os.pathsep.join([str(keep), *(f for f in folders if f not in hiding)])}
