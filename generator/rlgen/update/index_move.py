"""The runs indexes of earlier layouts, moved by ``rlgen update`` on every side of its merge (the
previous render, the new one and the user's branch), so the merge carries the team's runs over
and the render brings none:

- the main environment's index in ``runs/kustomization.yaml`` (before every environment had one)
  moves to ``overlays/<env>/runs/kustomization.yaml``, comments and any field a user added kept;
- with a sync engine that builds a folder from its sub-folders (Flux), each environment's index
  becomes one folder per run, ``overlays/<env>/runs/<run>/``, so that no file lists every run.
  A field the index applied to its runs besides listing them (labels, patches) goes into each
  run's folder, where it applies to that run's objects alike; with one that does not (Argo CD),
  the runs' folders of an environment are listed in an index again.
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
    return OLD_INDEX in files or bool(_envs(files, indexed=not folders))


def apply(files: dict[str, bytes], env: str, folders: bool = False) -> dict[str, bytes | None]:
    """The changes that move the old indexes of ``files`` (``env``: the main environment;
    ``folders``: into run folders too); none when there is none."""
    changes: dict[str, bytes | None] = {}
    if OLD_INDEX in files:
        text = files[OLD_INDEX].decode()
        changes = {OLD_INDEX: None, index_path(env): index_text(_runs(OLD_INDEX, text, "{run}"), text).encode()}
    current = {p: d for p, d in {**files, **changes}.items() if d is not None}
    for each in sorted(_envs(current, indexed=not folders)):
        path = index_path(each)
        changes.update(_to_folders(path, current[path].decode(), env) if folders else _to_index(current, each, env))
    return changes


def _envs(files: dict[str, bytes], indexed: bool) -> set[str]:
    """The environments whose runs are in the other layout: listed in an index (``indexed``
    False), or folders of a runs folder without index (``indexed`` True)."""
    envs = {e for p in files if (e := runs_env(p))}
    return {e for e in envs if (index_path(e) in files) != indexed}


def _to_index(files: dict[str, bytes], env: str, main_env: str) -> dict[str, bytes | None]:
    """The runs' folders of ``env`` listed in an index again: a sync engine that builds no folder
    (Argo CD) needs one."""
    root = runs_root(env) + "/"
    below = [p for p in files if p.startswith(root)]
    runs = sorted(p.split("/")[3] for p in below if p.count("/") == 4 and p.endswith("/kustomization.yaml"))
    other = "" if env == main_env else env
    return {**{p: None for p in below}, index_path(env): index_text(runs, env=other, main_env=main_env).encode()}


def moved(files: dict[str, bytes], recorded: dict, sync_plugin: str) -> dict[str, bytes]:
    """A render's ``files`` (the previous render's runs kept) with the earlier layouts moved, for
    the repository's ``recorded`` answers and the sync plugin it now has."""
    changes = apply(files, answers.environment_of(recorded), builds_folders(sync_plugin))
    return {p: d for p, d in {**files, **changes}.items() if d is not None}


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
