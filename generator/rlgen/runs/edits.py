"""What each ``rlgen run`` subcommand does (:mod:`rlgen.commands.run` declares them): imported
when one runs, so that ``rlgen run --help`` loads none of it.

Every command checks all of its input before it writes, and a failure after writing (kustomize,
a commit hook) restores the files and the branch: an error changes nothing.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import click

from rlgen.errors import RlgenError
from rlgen.naming import dns1035_label_error
from rlgen.output import resolve_output, to_json
from rlgen.repo.workspace import Workspace, open_workspace
from rlgen.run import checkpoints, config, files, folder, naming
from rlgen.tools.git_change import GitChange
from rlgen.tools import git, git_recovery, yamlio
from rlgen.tools.signals import terminate_as_interrupt
from rlgen.verl import batch_rules, keys, releases, trainer_config

#: Keys whose value the repository's plugins decide: the training image holds only that engine.
ENGINE_KEYS = {"actor_rollout_ref.rollout.name": "the engine of the rollout plugin (its training image has no other)"}


@dataclass(frozen=True, kw_only=True)
class RunRequest:
    """What every command that makes runs is asked for: the name, where the runs start from and
    their keys (``KEY=VALUE``, unparsed), the run whose checkpoint they continue from, and how the
    change is committed."""

    name: str
    source: str | None = None
    sets: tuple[str, ...] = ()
    resume_from: str | None = None
    no_branch: bool = False
    from_head: bool = False
    #: The environment whose runs index lists them (None: the main cluster's).
    env: str | None = None
    dry_run: bool = False
    output: str | None = None


@dataclass(frozen=True, kw_only=True)
class NewRequest(RunRequest):
    """``rlgen run new``: one run, with its own queue and priorities."""

    queue: str | None = None
    priority_class: str | None = None
    priority: str | None = None


def new(request: NewRequest) -> None:
    name, no_branch = request.name, request.no_branch
    if problem := dns1035_label_error(name):
        raise RlgenError(f"run name {problem}")
    ws, runs = open_runs(committing=True)
    labels = (folder.queue_labels(ws.spec, request.queue, request.priority_class)
              | folder.priority_labels(ws.root, request.priority))
    branch = f"run/{name}"
    start = claim_branch(ws, branch, no_branch, request.from_head, "pick another run name or pass --no-branch")
    index = files.index_path(ws.root, request.env)
    with GitChange(ws.root, [files.folder_of(ws.root, name), index], request.dry_run) as change:
        ws, runs = enter_branch(change, ws, runs, None if no_branch else branch, start)
        doc, rayjob, _ = create_run(ws, name, request.source, parse_assignments(request.sets), labels,
                                    resume_from=request.resume_from)
        folder.write_index(ws.root, [*files.read_index(ws.root, env=request.env), name], request.env)
        origin = f" from {request.source}" if request.source else ""
        resumes = (f"Checkpoints: continues from the newest checkpoint of run {request.resume_from}'s RayJob "
                   "(--resume-from).\n" if request.resume_from else "")
        change.commit(f"Run {name}: new run{origin}\n\n"
                      f"{key_lines(config.changes(ws.spec, name, doc))}\nRayJob: {rayjob}\n{resumes}")
    report(request.output, change, f"Created run '{name}' {where(no_branch, branch, start)}: RayJob {rayjob}.",
           run=name, rayjob=rayjob, source=request.source, start=None if no_branch else start or "HEAD")


def claim_branch(ws: Workspace, branch: str, no_branch: bool, from_head: bool, fix: str) -> str | None:
    """The ref a new ``branch`` starts from (None: HEAD or no branch), refusing one that exists."""
    start = None if no_branch or from_head else sync_start(ws)
    if not no_branch and git.run(ws.root, "branch", "--list", branch).strip():
        own = git.run(ws.root, "rev-list", "--count", f"{start or 'HEAD'}..{branch}").strip()
        hint = (f" with no commit of its own (left by an interrupted rlgen run?): delete it with git branch -D {branch}"
                if own == "0" else f": {fix}")
        raise RlgenError(f"branch {branch} already exists{hint}")
    return start


def enter_branch(change: GitChange, ws: Workspace, runs: dict, branch: str | None,
                 start: str | None) -> tuple[Workspace, dict]:
    """Switch ``change`` to its new ``branch`` (None: stay): that branch's workspace and runs."""
    if branch is None:
        return ws, runs
    change.branch(branch, start)
    ws = open_workspace(ws.root)
    return ws, files.check_repository(ws.root, ws.spec)


def where(no_branch: bool, branch: str, start: str | None) -> str:
    return "on the current branch" if no_branch else f"on branch {branch} (from {start or 'HEAD'})"


class NewRun(NamedTuple):
    doc: Any  # its run.yaml
    rayjob: str
    values: dict[str, Any]  # the keys set on it, as checked (flat)


def create_run(ws: Workspace, name: str, source: str | None, assignments: dict[str, Any],
               labels: dict[str, str], note: str = "", resume_from: str | None = None) -> NewRun:
    """Write ``runs/<name>/`` with ``assignments`` checked against verl and the batch rules,
    and name its RayJob. ``note``: a comment atop its run.yaml; ``resume_from``: the run whose
    RayJob's checkpoint it continues from. The caller lists it in the index and commits."""
    _check_new_name(ws, name)
    values = checked_values(ws, name, assignments)
    doc = _new_run_config(ws, name, source, values)
    config.check_batches(ws.root, ws.spec, name, doc)
    if resume_from:
        folder.set_keys(doc, {checkpoints.SOURCE_KEY: resume_source(ws, resume_from, name, doc)})
    place = files.folder_of(ws.root, name)
    place.mkdir(parents=True)
    (place / ws.spec.run_config_key).write_text(yamlio.dump(doc, note))
    return NewRun(doc, naming.name_run(ws.root, ws.spec, name, labels), values)


def set_(name: str, assignments: tuple[str, ...], *, resume_from: str | None = None, dry_run: bool = False,
         output: str | None = None) -> None:
    ws, runs = open_runs(committing=True)
    require_run(ws, name, runs)
    # On the synced branch a change goes to review on a branch of its own, as a new run's does.
    branch = f"run/set-{name}" if git.head(ws.root)[0] == ws.spec.git_branch else None
    start = claim_branch(ws, branch, False, False, "switch to it to change the run there") if branch else None
    values = checked_values(ws, name, parse_assignments(assignments))
    place = files.folder_of(ws.root, name)
    # A hand edit of the run's files is what a new name is asked for: committed with it.
    edited = git.run(ws.root, "status", "--porcelain", "--no-renames", "--", place.relative_to(ws.root).as_posix())
    with GitChange(ws.root, [place], dry_run, own_edits=True) as change:
        ws, runs = enter_branch(change, ws, runs, branch, start)
        require_run(ws, name, runs)
        doc = runs[name].doc
        before, old_name = config.changes(ws.spec, name, doc), runs[name].pinned
        folder.set_keys(doc, values)
        config.check_batches(ws.root, ws.spec, name, doc)
        # A new RayJob starts from step 0 unless asked: an earlier --resume-from is not carried on.
        dropped = drop_resume_source(doc)
        if resume_from:
            folder.set_keys(doc, {checkpoints.SOURCE_KEY: resume_source(ws, resume_from, name, doc)})
        (place / ws.spec.run_config_key).write_text(yamlio.dump(doc))
        rayjob = naming.name_run(ws.root, ws.spec, name)
        if not change.changed():
            change.discard()
            report(output, change, f"Run '{name}' is unchanged: RayJob {rayjob}.",
                   run=name, rayjob=rayjob, previous_rayjob=old_name, keys={}, restarts=None)
            return
        subject, body = _set_message(values, before, edited)
        restarts = restart_line(name, old_name, rayjob, resume_from, dropped)
        change.commit(f"Run {name}: {subject}\n\n{body}RayJob: {old_name} -> {rayjob}\n{restarts}\n")
    where = f" on branch {branch}" if branch else ""
    report(output, change, f"Run '{name}'{where}: RayJob {old_name} -> {rayjob}.\n{restarts}",
           run=name, rayjob=rayjob, previous_rayjob=old_name, keys=values, restarts=restarts)


def _set_message(values: dict[str, Any], before: dict[str, Any], edited: str) -> tuple[str, str]:
    """``rlgen run set``'s commit subject and body: the hand edits it commits, the keys it sets."""
    hand = "".join(f"  {line[3:]}\n" for line in edited.splitlines())
    body = f"Edited by hand:\n{hand}\n" if hand else ""
    if not values:
        return ("commit its hand edits and name its RayJob for them" if hand else
                "name its RayJob for its files as edited"), body
    lines = "".join(f"  {k}: {config.show(before[k]) if k in before else '(base)'} -> {config.show(v)}\n"
                    for k, v in values.items())
    subject = f"set {', '.join(values)}" if len(values) <= 2 else f"set {len(values)} keys"
    return subject, body + f"Changed keys:\n{lines}\n"


def restart_line(run: str, old: str | None, new: str, resume_from: str | None, dropped: bool) -> str:
    """What a renamed run starts from, in one line."""
    if resume_from:
        return f"Checkpoints: {new} continues from the newest checkpoint of run {resume_from}'s RayJob (--resume-from)."
    was = f" (it no longer continues from {checkpoints.SOURCE_KEY})" if dropped else ""
    keep = f"; {old}'s folder is kept, --resume-from {run} continues from it" if old else ""
    return f"Restarts from step 0: {new} is a new RayJob with a checkpoint folder of its own{was}{keep}."


def rm(name: str, *, no_branch: bool = False, from_head: bool = False, dry_run: bool = False,
       output: str | None = None) -> None:
    ws, runs = open_runs(committing=True)
    require_run(ws, name, runs)
    branch = f"run/rm-{name}"
    start = claim_branch(ws, branch, no_branch, from_head, "delete it or pass --no-branch")
    with GitChange(ws.root, [files.folder_of(ws.root, name), files.index_path(ws.root)], dry_run) as change:
        ws, runs = enter_branch(change, ws, runs, None if no_branch else branch, start)
        require_run(ws, name, runs)
        pruned = remove_runs(ws, runs, [name])[name]
        rayjob = pruned or f"of run {name}"
        change.commit(f"Run {name}: remove\n\nThe sync engine prunes RayJob {rayjob}.\n")
    report(output, change, f"Removed run '{name}' {where(no_branch, branch, start)}: RayJob {rayjob} is pruned "
                           "once this commit syncs.", run=name, rayjob=pruned,
           start=None if no_branch else start or "HEAD")


def remove_runs(ws: Workspace, runs: dict, names: list[str]) -> dict[str, str | None]:
    """Delete the runs' folders and index entries: ``{run: its pinned RayJob name}``."""
    pinned = {name: runs[name].pinned for name in names}
    for name in names:
        shutil.rmtree(files.folder_of(ws.root, name))
    folder.write_index(ws.root, [r for r in runs if r not in names])
    return pinned


def list_(output: str | None) -> None:
    ws, runs = open_runs(committing=False)
    effective = {name: config.effective(ws.root, ws.spec, runs[name].doc) for name in runs}
    sizes = {name: batch_rules.size(effective[name]) for name in runs}
    saves = {name: checkpoints.save_bytes(effective[name]) for name in runs}
    sweeps = {name: folder.sweep_of(ws.root, name) for name in runs}
    # A sweep's runs side by side: the runs of no sweep first, then each sweep's, by name.
    order = sorted(runs, key=lambda name: (sweeps[name] or "", name))
    found = [{"run": name, "rayjob": runs[name].pinned, "sweep": sweeps[name],
              "size": {"nnodes": sizes[name].nnodes, "n_gpus_per_node": sizes[name].gpus_per_node},
              "checkpoints": {"folder": checkpoints.rayjob_folder(runs[name].doc, runs[name].pinned),
                              "bytes_per_save": saves[name],
                              "bytes_per_parameter": checkpoints.per_parameter(effective[name])},
              "changes": config.changes(ws.spec, name, runs[name].doc)} for name in order]
    if resolve_output(output) == "json":
        click.echo(to_json(found))
        return
    grouped = any(sweeps.values())
    rows = [(r["run"], *([r["sweep"] or "-"] if grouped else []), r["rayjob"] or "(not named)",
             f"{sizes[r['run']].nnodes}x{sizes[r['run']].gpus_per_node}",
             checkpoints.show_size(saves[r["run"]], effective[r["run"]]),
             ", ".join(f"{k}={config.show(v)}" for k, v in r["changes"].items()) or "-") for r in found]
    header = ("RUN", *(["SWEEP"] if grouped else []), "RAYJOB", "SIZE", "CKPT/SAVE", "CHANGED KEYS")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        click.echo("  ".join(f"{cell:<{width}}" for cell, width in zip(row, widths)) + f"  {row[-1]}")


def report(output: str | None, change: GitChange, text: str, **fields) -> None:
    """``text`` (or a dry run's preview) on a table; JSON: ``fields`` and the change's own."""
    if resolve_output(output) == "json":
        click.echo(to_json({**fields, **change.as_json()}))
    else:
        click.echo(change.preview or text)


def open_runs(committing: bool) -> tuple[Workspace, dict]:
    """The workspace and its runs, every hand-editable file checked; a committing command also
    needs a branch (what it writes must be unchanged: :class:`GitChange` checks)."""
    ws = open_workspace(Path.cwd())
    if committing:
        # Locked before anything is read: a concurrent command's half-made change is not ours.
        # SIGTERM (a CI timeout, kill) rolls the change back like Ctrl-C, then exits 130.
        click.get_current_context().with_resource(terminate_as_interrupt())
        click.get_current_context().with_resource(git_recovery.lock(ws.root))
        git.require_whole_checkout(ws.root)  # else the files below read as missing
    runs = files.check_repository(ws.root, ws.spec)
    if committing:
        git.require_no_stale_lock(ws.root)
        git.require_branch(ws.root)
    return ws, runs


def sync_start(ws: Workspace) -> str:
    """Where a new branch starts: the synced branch as origin has it now (fetched first), else
    as last fetched or as it is here, said in one line."""
    branch = ws.spec.git_branch
    failed = git.fetch(ws.root, branch)
    for ref in (f"origin/{branch}", branch):
        if sha := git.commit_of(ws.root, ref):
            if failed:
                click.echo(f"rlgen: could not fetch {branch} from origin ({failed}); starting from {ref} at "
                           f"{sha[:12]}", err=True)
            return ref
    raise RlgenError(f"neither origin/{branch} nor {branch} exists (rlgen.git_branch): "
                     "pass --from-head to branch from HEAD")


def _new_run_config(ws: Workspace, name: str, source: str | None, values: dict[str, Any]) -> Any:
    # Made on this commit: a run made again under an old name gets a checkpoint root of its own.
    own = trainer_config.run_config(ws.spec, name, checkpoints.root(ws.spec, name, instance(ws)))
    if source:
        require_run(ws, source)
        doc = files.read_run_config(files.folder_of(ws.root, source) / ws.spec.run_config_key, ws.spec)
        # The copy keeps the source's comments but gets this run's own experiment and checkpoints.
        trainer_config.deep_merge(doc, own)
        drop_resume_source(doc)
    else:
        doc = own
    folder.set_keys(doc, values)
    return doc


def instance(ws: Workspace) -> str:
    """The commit a new run is made on, as its checkpoint root names it."""
    return git.head(ws.root)[1][:checkpoints.INSTANCE_LENGTH]


def drop_resume_source(doc: Any) -> bool:
    """Remove ``trainer.resume_from_path``: a new RayJob continues from another only when asked."""
    trainer = doc.get("trainer")
    return isinstance(trainer, dict) and trainer.pop(checkpoints.SOURCE_KEY.rpartition(".")[2], None) is not None


def resume_source(ws: Workspace, source: str, run: str, doc: Any) -> str:
    """``--resume-from source``: the folder of its RayJob, once that RayJob's checkpoints fit
    run ``run`` as ``doc`` makes it. Read from disk, so a run resuming from itself (``rlgen
    run set``) continues from the RayJob it had."""
    require_run(ws, source)
    found = files.read_run(ws.root, ws.spec, source)
    source_doc = found.doc
    folder_ = checkpoints.rayjob_folder(source_doc, found.pinned)
    if folder_ is None:
        raise RlgenError(f"--resume-from {source}: its RayJob has no name or run.yaml no trainer.default_local_dir: "
                         f"rlgen run set {source} first")
    problems = checkpoints.resume_problems(config.effective(ws.root, ws.spec, source_doc),
                                           config.effective(ws.root, ws.spec, doc))
    if problems:
        raise RlgenError(f"--resume-from {source}: run {run} cannot load the checkpoints of RayJob {found.pinned}: "
                         + "; ".join(problems))
    return folder_


def _check_new_name(ws: Workspace, name: str) -> None:
    # The folder name becomes the objects' name prefix and the experiment name; the RayJob
    # name is shortened to 47 characters on its own (rlgen.naming.hashed_name).
    if problem := dns1035_label_error(name):
        raise RlgenError(f"run name {problem}")
    if files.folder_of(ws.root, name).exists() or name in files.read_index(ws.root):
        raise RlgenError(f"run '{name}' already exists: pick another name, or change it with rlgen run set")


def require_run(ws: Workspace, name: str, runs: dict | None = None) -> None:
    """A run whose folder exists and, for a command that changes it, that the index lists."""
    listed = runs is None or name in runs
    if not listed or not (files.folder_of(ws.root, name) / ws.spec.run_config_key).is_file():
        known = ", ".join(sorted(files.read_index(ws.root))) or "none"
        unlisted = " (its folder is not listed in runs/kustomization.yaml)" if not listed and \
            files.folder_of(ws.root, name).is_dir() else ""
        raise RlgenError(f"no run '{name}'{unlisted} (runs: {known})")


def parse_assignments(assignments: tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` options as ``{key: value}``, the last one of a key winning."""
    return dict(keys.parse(a) for a in assignments)


def checked_values(ws: Workspace, run: str, parsed: dict[str, Any]) -> dict[str, Any]:
    """``parsed`` checked against the repository's verl and the keys rlgen owns."""
    if not parsed:
        return {}
    in_use = trainer_config.flatten(files.read_trainer_config(ws.root, ws.spec))
    values = keys.check(parsed, ws.spec.verl_version, in_use)
    owned = config.owned_keys(ws.spec, run)
    for key, value in values.items():
        if key in owned:
            raise RlgenError(f"{key} cannot be set on a run: {owned[key]}")
        defaults = releases.get(ws.spec.verl_version).defaults
        if key in defaults and (problem := files.value_error(value, defaults[key])):
            raise RlgenError(f"{key}: {problem}")
        if key in ENGINE_KEYS and key in in_use and value != in_use[key]:
            raise RlgenError(f"{key}: {config.show(value)} is not {config.show(in_use[key])}, "
                             f"{ENGINE_KEYS[key]}")
    return values


def key_lines(changes: dict[str, Any]) -> str:
    if not changes:
        return "Changed keys: none (the base trainer config as it is)\n"
    return "Changed keys:\n" + "".join(f"  {k}={config.show(v)}\n" for k, v in changes.items())
