"""The runs indexes of earlier layouts, moved by ``rlgen update`` on every side of its merge (the
previous render, the new one and the user's branch), so the merge carries the team's runs over
and the render brings none:

- the main environment's index in ``runs/kustomization.yaml`` (before every environment had one)
  moves to ``overlays/<env>/runs/kustomization.yaml``, comments and any field a user added kept;
- with a sync engine that builds a folder from its sub-folders (Flux), each environment's index
  becomes one folder per run, ``overlays/<env>/runs/<run>/``, so that no file lists every run.
  A field the index applied to its runs besides listing them (labels, patches) goes into each
  run's folder, where it applies to that run's objects alike.
"""
from __future__ import annotations

from rlgen.errors import RlgenError
from rlgen.repo import answers
from rlgen.repo.layout import (OLD_RUNS_INDEX as OLD_INDEX, RUN_ENTRY, RUNS_README, run_link, runs_env,
                               runs_index as index_path, runs_root)
from rlgen.repo.sync_engines import builds_folders
from rlgen.run.folder import index_text, link_text, runs_readme
from rlgen.tools import yamlio


def needed(files: dict[str, bytes], folders: bool = False) -> bool:
    return OLD_INDEX in files or (folders and any(_is_index(p) for p in files))


def apply(files: dict[str, bytes], env: str, folders: bool = False) -> dict[str, bytes | None]:
    """The changes that move the old indexes of ``files`` (``env``: the main environment;
    ``folders``: into run folders too); none when there is none."""
    changes: dict[str, bytes | None] = {}
    if OLD_INDEX in files:
        text = files[OLD_INDEX].decode()
        changes = {OLD_INDEX: None, index_path(env): index_text(_runs(OLD_INDEX, text, "{run}"), text).encode()}
    if folders:
        current = {p: d for p, d in {**files, **changes}.items() if d is not None}
        for path in sorted(p for p in current if _is_index(p)):
            changes.update(_to_folders(path, current[path].decode(), env))
    return changes


def moved(files: dict[str, bytes], recorded: dict, sync_plugin: str) -> dict[str, bytes]:
    """A render's ``files`` (the previous render's runs kept) with the earlier layouts moved, for
    the repository's ``recorded`` answers and the sync plugin it now has."""
    changes = apply(files, answers.environment_of(recorded), builds_folders(sync_plugin))
    return {p: d for p, d in {**files, **changes}.items() if d is not None}


def _is_index(path: str) -> bool:
    env = runs_env(path)
    return env is not None and path == index_path(env)


def _to_folders(path: str, text: str, main_env: str) -> dict[str, bytes | None]:
    env = runs_env(path)
    doc = yamlio.load(text)
    fields = {k: v for k, v in doc.items() if k not in ("apiVersion", "kind", "resources")} \
        if isinstance(doc, dict) else {}
    moved: dict[str, bytes | None] = {path: None, f"{runs_root(env)}/{RUNS_README}": runs_readme(env, main_env).encode()}
    for run in _runs(path, text, RUN_ENTRY):
        moved[f"{run_link(env, run)}/kustomization.yaml"] = link_text(run, fields).encode()
    return moved


def _runs(path: str, text: str, pattern: str) -> list[str]:
    """The runs an index lists, each as ``pattern``; refused, naming the entry, when it lists
    anything else (rlgen would not know where it goes)."""
    doc = yamlio.load(text)
    entries = [str(r) for r in (doc.get("resources") or [])] if isinstance(doc, dict) else []
    prefix, _, suffix = pattern.partition("{run}")
    runs = []
    for i, entry in enumerate(entries):
        name = entry.removeprefix(prefix).removesuffix(suffix)
        if not entry.startswith(prefix) or not entry.endswith(suffix) or not name or "/" in name:
            raise RlgenError(f"{path}: resources[{i}]: {entry} is no run folder ({pattern.format(run='<run>')}); "
                             "move it out of the runs index, then run rlgen update again")
        runs.append(name)
    return runs
