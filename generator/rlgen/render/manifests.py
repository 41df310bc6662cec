"""Everything a checkout of the repository gives the cluster, as YAML documents by source.

A source is a top kustomization root (one no other root lists as a resource: the overlays and
``runs/``, not ``runs/<run>`` or ``base/training``, whose objects those already contain) or a
plain manifest file outside every kustomization folder (the sync engine's entry points).

Renders are cached by the content of what a root reads (:mod:`rlgen.render.cache`), and
:func:`render_changes` builds only the roots whose inputs differ between two checkouts.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.render import inputs
from rlgen.render.cache import RenderCache
from rlgen.tools import git, kustomize, yamlio

_SEPARATOR = re.compile(r"^---[ \t]*\n?", re.M)
#: Folders of objects applied by hand, never by the sync engine (the reader role of rlgen doctor).
NOT_SYNCED = ("rbac",)
#: Above this many changed runs, one build of ``runs/`` is cheaper than one build per run.
SPLIT_LIMIT = 4


def kustomizations(files: set[Path]) -> dict[Path, dict]:
    """Folder -> parsed kustomization of every root git would commit (Components excluded:
    they only build inside a kustomization that lists them). An ignored folder (rendered/,
    a cache) is not the repository."""
    out = {}
    for path in files:
        if path.name in kustomize.KUSTOMIZATION_FILES:
            doc = _read_kustomization(path)
            if doc.get("kind") != "Component":
                out[path.parent] = doc
    return out


def _read_kustomization(path: Path) -> dict:
    """A kustomization a user may have edited: a defect is one line naming the file."""
    from rlgen.errors import RlgenError

    try:
        return inputs.parse_kustomization(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RlgenError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise RlgenError(f"{path}: not valid YAML ({exc})") from None


def top_roots(tree: Path, files: set[Path]) -> list[Path]:
    roots = kustomizations(files)
    inside = tree.resolve()
    for root, doc in roots.items():
        for key in ("resources", "components"):
            entries = doc.get(key) or []
            for entry in entries if isinstance(entries, list) else []:
                text = str(entry)
                if "://" in text or text.startswith(("github.com/", "git@")) or "?ref=" in text:
                    continue  # a remote base: fetched, not read from this machine
                if not (root / text).resolve().is_relative_to(inside):
                    raise RlgenError(f"{root / 'kustomization.yaml'}: {key}: {text} is outside the repository "
                                     "(the cluster's checkout has only this repository)")
    listed = {(root / str(entry)).resolve() for root, doc in roots.items() for entry in doc.get("resources") or []}
    return sorted(r for r in roots if r.resolve() not in listed)


def children(root: Path, roots: dict[Path, dict]) -> list[Path] | None:
    """The roots ``root`` only lists (as ``runs/`` lists the runs), or None when it does more:
    its render is then exactly theirs together, so each can be built on its own."""
    doc = roots.get(root) or {}
    if set(doc) - {"apiVersion", "kind", "resources"} or not doc.get("resources"):
        return None
    found = [Path(os.path.normpath(root / str(entry))) for entry in doc["resources"]]
    return found if all(f in roots for f in found) else None


def plain_files(files: set[Path]) -> list[Path]:
    """YAML files that no kustomization folder holds and that contain Kubernetes objects."""
    folders = {p.parent for p in files if p.name in kustomize.KUSTOMIZATION_FILES}
    found = []
    for path in sorted(files):
        if path.suffix not in (".yaml", ".yml") or any(p in folders for p in path.parents):
            continue
        if path.parent.name in NOT_SYNCED:
            continue
        text = _read_text(path)
        if split(text):
            found.append(path)
        else:
            # Not objects, yet a sync engine applying this folder would try to read it.
            try:
                yamlio.read_plain_all(text)
            except ValueError as exc:
                raise RlgenError(f"{path}: not valid YAML ({exc})") from None
    return found


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RlgenError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def committable(tree: Path) -> set[Path]:
    """The files git would commit: tracked or untracked but not ignored, outside hidden folders
    (.github holds workflows, not cluster objects)."""
    listing = git.run(tree, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    paths = {tree / p for p in listing.split("\0") if p and not any(part.startswith(".") for part in p.split("/"))}
    return {p for p in paths if p.is_file()}


def _is_object(text: str) -> bool:
    return bool(re.search(r"^apiVersion:", text, re.M) and re.search(r"^kind:", text, re.M))


def split(text: str) -> list[str]:
    """Documents of a YAML stream, as text: comparing text first spares parsing the many
    objects a change leaves alone."""
    return [doc for doc in _SEPARATOR.split(text) if doc.strip() and _is_object(doc)]


@dataclass(frozen=True)
class Unit:
    """One kustomize build: ``root`` of checkout ``tree``, whose objects belong to ``source``."""

    label: str
    tree: Path
    source: str
    root: Path

    @cached_property
    def key(self) -> str:
        return inputs.key(self.root, self.tree)

    @property
    def path(self) -> str:
        return self.root.relative_to(self.tree).as_posix() or "."


def build(units: list[Unit], cache: RenderCache) -> list[str]:
    """Each unit's render, from the cache or from kustomize (several builds at a time)."""
    kustomize.command()
    texts: list[str | None] = [cache.get(u.key) for u in units]
    missing = [i for i, t in enumerate(texts) if t is None]

    def one(i: int) -> str:
        unit = units[i]
        try:
            return kustomize.build(unit.root)
        except RlgenError as exc:
            raise RlgenError(f"{unit.label}: {exc}".replace(str(unit.tree), ".")) from None

    # Each build is a separate process: threads only wait on them.
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        for i, text in zip(missing, pool.map(one, missing)):
            texts[i] = text
            cache.put(units[i].key, text)
    return texts  # type: ignore[return-value]


def render(trees: dict[str, Path], cache_repo: Path | None = None) -> dict[str, dict[str, list[str]]]:
    """``{label: {source: [document]}}`` for each checkout: every top root and plain file."""
    listed = {label: committable(tree) for label, tree in trees.items()}
    units = [Unit(label, tree, root.relative_to(tree).as_posix() or ".", root)
             for label, tree in trees.items() for root in top_roots(tree, listed[label])]
    out: dict[str, dict[str, list[str]]] = {label: {} for label in trees}
    for unit, text in zip(units, build(units, RenderCache(cache_repo))):
        out[unit.label][unit.source] = split(text)
    for label, tree in trees.items():
        out[label].update(plain_documents(tree, listed[label]))
    return out


def plain_documents(tree: Path, files: set[Path]) -> dict[str, list[str]]:
    return {path.relative_to(tree).as_posix(): split(_read_text(path)) for path in plain_files(files)}
