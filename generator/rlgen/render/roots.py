"""Render kustomization roots with the kustomize binary, several at a time."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.tools import kustomize


def targets(path: Path) -> tuple[Path, list[Path]]:
    """(base folder, roots): one root when ``path`` is a root, else every root below it."""
    if not path.is_dir():
        raise RlgenError(f"{path} is not a folder")
    if kustomize.is_root(path) and not (path / "rlgen.yaml").exists():
        return path.parent, [path]
    found = kustomize.roots(path)
    if not found:
        raise RlgenError(f"no kustomization root in {path}")
    return path, found


def render_all(path: Path) -> list[tuple[Path, str]]:
    """``[(root relative to the repository, rendered YAML)]`` in a stable order."""
    base, roots = targets(path.resolve())
    kustomize.command()
    # Each build is a separate process: threads only wait on them.
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        texts = list(pool.map(kustomize.build, roots))
    return [(root.relative_to(base), text) for root, text in zip(roots, texts)]
