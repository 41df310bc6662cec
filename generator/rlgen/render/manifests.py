"""Everything a checkout of the repository gives the cluster, as YAML documents by source.

A source is a top kustomization root (one no other root lists as a resource: the overlays and
``runs/``, not ``runs/<run>`` or ``base/training``, whose objects those already contain) or a
plain manifest file outside every kustomization folder (the sync engine's entry points).
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.tools import git, kustomize, yamlio

_SEPARATOR = re.compile(r"^---[ \t]*\n?", re.M)
#: Folders of objects applied by hand, never by the sync engine (the reader role of rlgen doctor).
NOT_SYNCED = ("rbac",)


def top_roots(tree: Path, files: set[Path]) -> list[Path]:
    # Only roots git would commit: an ignored folder (rendered/, a cache) is not the repository.
    roots = [r for r in kustomize.roots(tree) if any(r / n in files for n in kustomize.KUSTOMIZATION_FILES)]
    listed = {(root / entry).resolve() for root in roots for entry in _resources(root)}
    return [r for r in roots if r.resolve() not in listed]


def _resources(root: Path) -> tuple[str, ...]:
    for name in kustomize.KUSTOMIZATION_FILES:
        if (root / name).is_file():
            return _resources_of((root / name).read_text())
    return ()


@lru_cache(maxsize=None)
def _resources_of(text: str) -> tuple[str, ...]:
    # Cached by content: most kustomizations are the same in both revisions.
    doc = yamlio.read_plain(text) or {}
    return tuple(str(entry) for entry in doc.get("resources") or [])


def plain_files(files: set[Path]) -> list[Path]:
    """YAML files that no kustomization folder holds and that contain Kubernetes objects."""
    folders = {p.parent for p in files if p.name in kustomize.KUSTOMIZATION_FILES}
    found = []
    for path in sorted(files):
        if path.suffix not in (".yaml", ".yml") or any(p in folders for p in path.parents):
            continue
        if path.parent.name in NOT_SYNCED:
            continue
        if split(path.read_text()):
            found.append(path)
    return found


def committable(tree: Path) -> set[Path]:
    """The files git would commit: tracked or untracked but not ignored, outside hidden folders
    (.github holds workflows, not cluster objects)."""
    listing = git.run(tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    paths = {tree / p for p in listing.split("\0") if p}
    return {p for p in paths if p.is_file() and not any(part.startswith(".") for part in p.relative_to(tree).parts)}


def _is_object(text: str) -> bool:
    return bool(re.search(r"^apiVersion:", text, re.M) and re.search(r"^kind:", text, re.M))


def split(text: str) -> list[str]:
    """Documents of a YAML stream, as text: comparing text first spares parsing the many
    objects a change leaves alone."""
    return [doc for doc in _SEPARATOR.split(text) if doc.strip() and _is_object(doc)]


def render(trees: dict[str, Path]) -> dict[str, dict[str, list[str]]]:
    """``{label: {source: [document]}}`` for each checkout, all kustomize builds in parallel."""
    listed = {label: committable(tree) for label, tree in trees.items()}
    jobs = [(label, tree, root) for label, tree in trees.items() for root in top_roots(tree, listed[label])]
    kustomize.command()

    def build(job):
        label, tree, root = job
        try:
            return kustomize.build(root)
        except RlgenError as exc:
            raise RlgenError(f"{label}: {exc}".replace(str(tree), ".")) from None

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        texts = list(pool.map(build, jobs))
    out: dict[str, dict[str, list[str]]] = {label: {} for label in trees}
    for (label, tree, root), text in zip(jobs, texts):
        out[label][root.relative_to(tree).as_posix() or "."] = split(text)
    for label, tree in trees.items():
        for path in plain_files(listed[label]):
            out[label][path.relative_to(tree).as_posix()] = split(path.read_text())
    return out
