"""What each ``rlgen run`` command does (see :mod:`rlgen.runs.command`, which imports this
module only when a command runs, so ``rlgen run --help`` loads none of it)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import click

from rlgen.errors import RlgenError
from rlgen.generate.kustomizations import TRAINING_BASE
from rlgen.naming import dns1035_label_error
from rlgen.repo.workspace import Workspace, open_workspace
from rlgen.runs import folders
from rlgen.runs.git_change import GitChange, require_clean
from rlgen.tools import git, yamlio
from rlgen.verl import keys, trainer_config


def new(name: str, source: str | None, sets: tuple[str, ...], no_branch: bool) -> None:
    ws = open_workspace(Path.cwd())
    require_clean(ws.root)
    _check_new_name(ws, name)
    values = _checked_values(ws, name, sets)
    if source:
        _require_run(ws, source)
        doc = yamlio.load((folders.folder(ws.root, source) / ws.spec.run_config_key).read_text())
        # The copy keeps the source's comments but gets this run's own experiment and checkpoints.
        trainer_config.deep_merge(doc, trainer_config.run_config(ws.spec, name))
    else:
        doc = trainer_config.run_config(ws.spec, name)
    folders.set_keys(doc, values)
    branch = f"run/{name}"
    if not no_branch and git.run(ws.root, "branch", "--list", branch).strip():
        raise RlgenError(f"branch {branch} already exists: pick another run name or pass --no-branch")

    folder = folders.folder(ws.root, name)
    with GitChange(ws.root, [folder, ws.root / folders.INDEX]) as change:
        folder.mkdir(parents=True)
        (folder / ws.spec.run_config_key).write_text(yamlio.dump(doc))
        rayjob = folders.name_run(ws.root, ws.spec, name)
        folders.write_index(ws.root, [*folders.active(ws.root), name])
        if not no_branch:
            change.branch(branch)
        origin = f" from {source}" if source else ""
        change.commit(f"Run {name}: new run{origin}\n\n"
                      f"{_key_lines(folders.changes(ws.spec, name, doc))}\nRayJob: {rayjob}\n")
    where = "on the current branch" if no_branch else f"on branch {branch}"
    click.echo(f"Created run '{name}' {where}: RayJob {rayjob}.")



def set_(name: str, assignments: tuple[str, ...]) -> None:
    ws = open_workspace(Path.cwd())
    require_clean(ws.root)
    _require_run(ws, name)
    values = _checked_values(ws, name, assignments)
    folder = folders.folder(ws.root, name)
    doc = yamlio.load((folder / ws.spec.run_config_key).read_text())
    before, old_name = folders.changes(ws.spec, name, doc), folders.pinned_name(ws.root, name)
    folders.set_keys(doc, values)

    with GitChange(ws.root, [folder]) as change:
        (folder / ws.spec.run_config_key).write_text(yamlio.dump(doc))
        rayjob = folders.name_run(ws.root, ws.spec, name)
        if not change.changed():
            click.echo(f"Run '{name}' is unchanged: RayJob {rayjob}.")
            return
        lines = "".join(f"  {k}: {folders.show(before[k]) if k in before else '(base)'} -> {folders.show(v)}\n"
                        for k, v in values.items())
        subject = f"set {', '.join(values)}" if len(values) <= 2 else f"set {len(values)} keys"
        change.commit(f"Run {name}: {subject}\n\nChanged keys:\n{lines}\nRayJob: {old_name} -> {rayjob}\n")
    click.echo(f"Run '{name}': RayJob {old_name} -> {rayjob}.")



def rm(name: str) -> None:
    ws = open_workspace(Path.cwd())
    require_clean(ws.root)
    _require_run(ws, name)
    rayjob = folders.pinned_name(ws.root, name) or f"of run {name}"
    folder = folders.folder(ws.root, name)
    with GitChange(ws.root, [folder, ws.root / folders.INDEX]) as change:
        shutil.rmtree(folder)
        folders.write_index(ws.root, [r for r in folders.active(ws.root) if r != name])
        change.commit(f"Run {name}: remove\n\nThe sync engine prunes RayJob {rayjob}.\n")
    click.echo(f"Removed run '{name}': RayJob {rayjob} is pruned once this commit syncs.")



def list_() -> None:
    ws = open_workspace(Path.cwd())
    rows = []
    for name in sorted(folders.active(ws.root)):
        doc = yamlio.load((folders.folder(ws.root, name) / ws.spec.run_config_key).read_text())
        keys = ", ".join(f"{k}={folders.show(v)}" for k, v in folders.changes(ws.spec, name, doc).items())
        rows.append((name, folders.pinned_name(ws.root, name) or "(not named)", keys or "-"))
    widths = [max(len(r[i]) for r in [("RUN", "RAYJOB", ""), *rows]) for i in range(2)]
    for run, rayjob, keys in [("RUN", "RAYJOB", "CHANGED KEYS"), *rows]:
        click.echo(f"{run:<{widths[0]}}  {rayjob:<{widths[1]}}  {keys}")


def _check_new_name(ws: Workspace, name: str) -> None:
    # The folder name becomes the objects' name prefix and the experiment name; the RayJob
    # name is shortened to 47 characters on its own (rlgen.naming.hashed_name).
    if problem := dns1035_label_error(name):
        raise RlgenError(f"run name {problem}")
    if folders.folder(ws.root, name).exists() or name in folders.active(ws.root):
        raise RlgenError(f"run '{name}' already exists: pick another name, or change it with rlgen run set")


def _require_run(ws: Workspace, name: str) -> None:
    if not (folders.folder(ws.root, name) / ws.spec.run_config_key).is_file():
        known = ", ".join(sorted(folders.active(ws.root))) or "none"
        raise RlgenError(f"no run '{name}' (runs: {known})")


def _checked_values(ws: Workspace, run: str, assignments: tuple[str, ...]) -> dict[str, Any]:
    parsed = dict(keys.parse(a) for a in assignments)
    if not parsed:
        return {}
    base = ws.root / TRAINING_BASE / ws.spec.trainer_config_key
    in_use = trainer_config.flatten(yamlio.load(base.read_text()) or {}) if base.is_file() else {}
    values = keys.check(parsed, ws.spec.verl_version, in_use)
    owned = folders.owned_keys(ws.spec, run)
    for key in values:
        if key in owned:
            raise RlgenError(f"{key} cannot be set on a run: {owned[key]}")
    return values


def _key_lines(changes: dict[str, Any]) -> str:
    if not changes:
        return "Changed keys: none (the base trainer config as it is)\n"
    return "Changed keys:\n" + "".join(f"  {k}={folders.show(v)}\n" for k, v in changes.items())
