"""What a kustomization root reads, and a key of its content: the same key means the same
render, so a render is cached by it and ``rlgen diff`` skips a root whose key two revisions
share.

A root reads its kustomization, the files beside it, and every path its kustomization names
(resources, components, patches, generator files, configurations), following the roots those
name. Beside-files are included whether named or not: a key may change when the render does
not (a stray file), never the other way round.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from rlgen.errors import RlgenError
from rlgen.tools import kustomize, yamlio

#: Bump when what a key covers changes, so older cache entries are never read.
KEY_VERSION = b"rlgen-render-key 1\n"


def reads(root: Path, tree: Path) -> frozenset[Path]:
    """Every file below ``tree`` that building ``root`` may read."""
    if root in _visiting:
        raise RlgenError(f"kustomization {root} lists itself through the roots it names")
    _visiting.add(root)
    try:
        return _reads(root, tree)
    finally:
        _visiting.discard(root)


_visiting: set[Path] = set()


@lru_cache(maxsize=None)
def _reads(root: Path, tree: Path) -> frozenset[Path]:
    # Cached per folder: every run reads the same training base and components.
    files = {p for p in root.iterdir() if p.is_file()}
    for target in _named_paths(root, tree):
        if target.is_file():
            files.add(target)
        elif kustomize.is_root(target):
            files |= reads(target, tree)
        elif target.is_dir():
            files.update(p for p in target.rglob("*") if p.is_file())
    return frozenset(files)


def _named_paths(folder: Path, tree: Path) -> Iterator[Path]:
    for name in kustomize.KUSTOMIZATION_FILES:
        if (folder / name).is_file():
            doc = parse_kustomization((folder / name).read_text())
            break
    else:
        return
    for value in _strings(doc):
        # A generator's file may be given as key=path.
        for candidate in {value, value.partition("=")[2]} - {""}:
            target = Path(os.path.normpath(os.path.join(folder, candidate)))
            if target.is_relative_to(tree) and target.exists():
                yield target


def parse_kustomization(text: str) -> dict:
    """A kustomization's plain data ({} when it is not a mapping)."""
    return _parse(text)[0]


@lru_cache(maxsize=None)
def _parse(text: str) -> tuple:
    # Cached by content: most kustomizations are the same in both revisions.
    doc = yamlio.read_plain(text)
    return (doc if isinstance(doc, dict) else {},)


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str) and "\n" not in node and len(node) < 4096:
        # Multi-line strings are inline patches or transformers, not paths.
        yield node


def key(root: Path, tree: Path) -> str:
    """A hash of where ``root`` is, what it reads, and which kustomize renders it."""
    digest = hashlib.sha256(KEY_VERSION)
    digest.update(_tool_fingerprint())
    digest.update(root.relative_to(tree).as_posix().encode() + b"\0")
    for path in sorted(reads(root, tree)):
        digest.update(path.relative_to(tree).as_posix().encode() + b"\0")
        digest.update(_digest(path))
    return digest.hexdigest()


@lru_cache(maxsize=None)
def _digest(path: Path) -> bytes:
    # Runs share the training base: each of its files is read once per command.
    return hashlib.sha256(path.read_bytes()).digest()


def _tool_fingerprint() -> bytes:
    # Another kustomize may render the same files differently: its path, size and mtime
    # change when it is upgraded, without running it.
    exe = Path(kustomize.command()[0])
    stat = exe.stat()
    return f"{' '.join(kustomize.command())}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode()
