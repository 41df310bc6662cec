"""The kustomize binary: ``kustomize build`` when installed, else ``kubectl kustomize``."""
from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from rlgen.errors import RlgenError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@lru_cache(maxsize=1)
def command() -> tuple[str, ...]:
    if exe := shutil.which("kustomize"):
        return (exe, "build")
    if exe := shutil.which("kubectl"):
        return (exe, "kustomize")
    raise RlgenError("no kustomize binary: install kustomize, or kubectl (which includes it)")


def build(root: Path) -> str:
    """Render one kustomization root; a failure is one line naming the root."""
    result = subprocess.run([*command(), str(root)], capture_output=True, text=True)
    if result.returncode != 0:
        message = " ".join(result.stderr.split()) or f"exit code {result.returncode}"
        raise RlgenError(f"kustomize failed on {root}: {message}")
    return result.stdout


def is_root(folder: Path) -> bool:
    return any((folder / name).is_file() for name in KUSTOMIZATION_FILES)


def roots(repo: Path) -> list[Path]:
    """Every kustomization root below ``repo`` that is not a Component (components only
    build inside a kustomization that lists them)."""
    found = []
    for name in KUSTOMIZATION_FILES:
        for path in repo.rglob(name):
            if any(part.startswith(".") for part in path.relative_to(repo).parts):
                continue
            if "kind: Component" not in path.read_text():
                found.append(path.parent)
    return sorted(set(found))
