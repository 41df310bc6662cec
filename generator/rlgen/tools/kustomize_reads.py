"""The files a kustomize build is about to read, refused as rlgen refuses them before kustomize
reads one.

kustomize v5.7.1 refuses a file named by a kustomization that resolves outside the root, but
opens a FIFO inside it and waits for a writer for ever, and reads a huge file whole
(docs/upstream.md, kustomize and special files). So each kustomization a build reaches, and
every path it names that exists, goes through :func:`rlgen.tools.repo_files.check` first.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

from rlgen.errors import RlgenError
from rlgen.tools import repo_files, yaml_bounds, yamlio

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def check_build(root: Path, done: set[str]) -> None:
    """Refuse (:class:`~rlgen.errors.RlgenError`) a file the build of ``root`` would read that
    is not a regular file of the repository or is past the size rlgen reads. ``done``: the
    folders already checked, shared by the builds of one command (every run names the same
    base). A kustomization rlgen cannot parse is left to kustomize, which says why."""
    todo = [os.path.abspath(root)]
    while todo:
        folder = todo.pop()
        if folder in done:
            continue
        done.add(folder)
        for target in _named(folder):
            if not os.path.lexists(target):
                continue
            repo_files.check(Path(target))
            if os.path.isdir(target):
                todo.append(target)


def _named(folder: str) -> Iterator[str]:
    """The kustomization of ``folder`` and each path its strings may name, as absolute paths."""
    for name in KUSTOMIZATION_FILES:
        path = os.path.join(folder, name)
        if not os.path.lexists(path):
            continue
        yield path
        text = repo_files.read_text(Path(path))
        try:
            # kustomize expands every alias of it node by node (minutes for a few lines):
            # refused here, the parse's own defects left to kustomize, which says where.
            yaml_bounds.bounded(text)
        except ValueError as exc:
            raise RlgenError(f"{repo_files.shown(Path(path))}: {exc}") from None
        try:
            doc = yamlio.read_plain(text)
        except ValueError:
            return
        for value in path_strings(doc):
            # A generator's file may be given as key=path.
            for candidate in {value, value.partition("=")[2]} - {""}:
                if "://" not in candidate and not os.path.isabs(candidate):
                    yield os.path.normpath(os.path.join(folder, candidate))
        return


def path_strings(node: Any) -> Iterator[str]:
    """Every one-line string of a kustomization: each may name a file it reads."""
    if isinstance(node, dict):
        for value in node.values():
            yield from path_strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from path_strings(value)
    elif isinstance(node, str) and "\n" not in node and len(node) < 4096:
        # Multi-line strings are inline patches or transformers, not paths.
        yield node
