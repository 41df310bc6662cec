"""What a kustomization root reads, and a key of its content: the same key means the same
render, so a render is cached by it, and ``rlgen diff`` builds a root only when a file it
reads differs between the two revisions.

A root reads its kustomization, the files beside it, and every path its kustomization names
(resources, components, patches, generator files, configurations), following the roots those
name. Beside-files are included whether named or not: a key may change when the render does
not (a stray file), never the other way round. Paths are relative to the repository, read
from a :class:`~rlgen.render.checkouts.Checkout` (the working tree or a commit).
"""
from __future__ import annotations

import hashlib
import posixpath
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError
from rlgen.render.checkouts import Checkout
from rlgen.repo.layout import is_runs_root
from rlgen.tools import kustomize, yamlio
from rlgen.tools.kustomize_reads import path_strings

#: Bump when what a key covers changes, so older cache entries are never read.
KEY_VERSION = b"rlgen-render-key 2\n"


class Reads:
    """The files each root of one checkout reads, each folder worked out once: every run
    reads the same training base and components."""

    def __init__(self, checkout: Checkout):
        self.checkout = checkout
        self._done: dict[str, frozenset[str]] = {}
        self._visiting: set[str] = set()

    def __call__(self, root: str) -> frozenset[str]:
        if root in self._done:
            return self._done[root]
        if root in self._visiting:
            raise RlgenError(f"kustomization {root} lists itself through the roots it names")
        self._visiting.add(root)
        try:
            co = self.checkout
            files = set(co.beside.get(root, ()))
            for target in named_paths(co, root):
                if target in co.files:
                    files.add(target)
                elif kustomization_of(co, target):
                    files |= self(target)
                else:
                    files.update(co.below(target))
            self._done[root] = frozenset(files)
        finally:
            self._visiting.discard(root)
        return self._done[root]


def kustomization_of(co: Checkout, folder: str) -> str | None:
    """The kustomization file of a folder (by kustomize's order of names), or None."""
    for name in kustomize.KUSTOMIZATION_FILES:
        rel = name if folder == "." else f"{folder}/{name}"
        if rel in co.files:
            return rel
    return None


def generated(co: Checkout, folder: str) -> list[str]:
    """What the sync engine makes of an environment's runs folder with no kustomization file
    (Flux's kustomize-controller, docs/upstream.md): each sub-folder holding a kustomization
    file, not descended into, and every other YAML file below, in lexical order (paths relative
    to the repository). [] for any other folder."""
    if not is_runs_root(folder) or kustomization_of(co, folder):
        return []
    found: set[str] = set()
    for rel in co.below(folder):
        parts = rel.split("/")
        depth = len(folder.split("/"))
        holder = next((sub for i in range(depth + 1, len(parts))
                       if kustomization_of(co, sub := "/".join(parts[:i]))), None)
        if holder:
            found.add(holder)
        elif rel.endswith((".yaml", ".yml")):
            found.add(rel)
    return sorted(found)


def named_paths(co: Checkout, folder: str) -> Iterator[str]:
    """The files and folders of the checkout that ``folder``'s kustomization names (or the
    sync engine's own of a runs folder without one: :func:`generated`)."""
    rel = kustomization_of(co, folder)
    if rel is None:
        yield from generated(co, folder)
        return
    for candidate in _parse(co.text(rel))[1]:
        target = posixpath.normpath(posixpath.join(folder, candidate))
        if target.startswith("../") or target == ".." or posixpath.isabs(target):
            continue
        if target in co.files or target in co.folders:
            yield target


def parse_kustomization(text: str) -> dict:
    """A kustomization's plain data ({} when it is not a mapping)."""
    return _parse(text)[0]


@lru_cache(maxsize=None)
def _parse(text: str) -> tuple[dict, tuple[str, ...]]:
    """(the plain data, each string in it that may be a path): cached by content, as most
    kustomizations are the same in both revisions."""
    doc = yamlio.read_plain(text)
    doc = doc if isinstance(doc, dict) else {}
    # A generator's file may be given as key=path.
    paths = {candidate for value in path_strings(doc) for candidate in (value, value.partition("=")[2])}
    return doc, tuple(sorted(paths - {""}))


def key(co: Checkout, root: str, files: frozenset[str], parts: int = 0) -> str:
    """A hash of where ``root`` is, the ids of the files it reads, which kustomize renders it,
    and in how many parts (:mod:`rlgen.render.parts`; 0: one build)."""
    digest = hashlib.sha256(KEY_VERSION)
    digest.update(_tool_fingerprint())
    digest.update(root.encode() + b"\0")
    if parts:
        digest.update(b"parts %d\0" % parts)
    for rel in sorted(files):
        digest.update(f"{rel}\0{co.id(rel)}\0".encode())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _tool_fingerprint() -> bytes:
    # Another kustomize may render the same files differently: its path, size and mtime
    # change when it is upgraded, without running it.
    exe = Path(kustomize.command()[0])
    stat = exe.stat()
    return f"{' '.join(kustomize.command())}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode()
