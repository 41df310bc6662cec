"""The one update path, for ``rlgen update`` and ``rlgen cluster``: render the changed answers,
merge the render into the branch, and say what changed."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen.errors import ProblemsFound, RlgenError
from rlgen.generate.team_template import clash_line
from rlgen.output import to_json
from rlgen.plugin_host.discovery import discover
from rlgen.repo import answers
from rlgen.repo.secret_plan import plan
from rlgen.repo.sync_engines import engine_of_plugin
from rlgen.tools import git, git_recovery, kustomize
from rlgen.tools.signals import terminate_as_interrupt
from rlgen.update.answers_change import Change, new_selection
from rlgen.update.engine import BRANCH_PREFIX, update
from rlgen.update.render import HOOKS_SKIPPED


def clusters(root: Path) -> list[tuple[str, str]]:
    """(cluster, environment) of every cluster that syncs the repository."""
    return list(new_selection(discover(), answers.read(root), Change()).all_clusters())


def run_change(root: Path, change: Change, no_branch: bool, output: str, dry_run: bool = False, **fields) -> None:
    """The one update path, for ``rlgen update`` and ``rlgen cluster``; ``fields`` lead its JSON."""
    kustomize.command()
    # One change at a time, on a branch, from a repository no killed git left locked; SIGTERM
    # restores the repository like Ctrl-C (exit 130).
    click.get_current_context().with_resource(terminate_as_interrupt())
    click.get_current_context().with_resource(git_recovery.lock(root))
    git.require_no_stale_lock(root)
    git.require_writable(root)
    branch = git.require_branch(root)
    if not no_branch:
        _require_synced_branch(branch, answers.branch_hint(root))
    recorded = answers.read(root)
    selection = new_selection(discover(), recorded, change)
    before = _required_secrets(plan(root))
    outcome = update(root, recorded, selection, change, no_branch, dry_run)
    # A Secret no cluster has yet (a new namespace, a plugin reading a new one) is a step the
    # sync cannot take: the secrets plugin's way (by hand, sops, a store) must come first.
    outcome.secrets = sorted(_required_secrets(plan(root, selection)) - before) if outcome.render else []
    engines = tuple(engine_of_plugin(p) for p in (recorded["plugins"].get("sync"), selection.plugins["sync"]))
    if outcome.render and engines[0] and engines[0] is not engines[1]:
        outcome.engines = engines
    for path in outcome.clashes:
        click.echo(clash_line(path), err=True)
    if outcome.render and not outcome.conflicts and (hooks := git.hooks_present(root)):
        # A note, not data: on stderr, whatever the output format.
        click.echo("Hooks: " + HOOKS_SKIPPED.format(render=outcome.render[:7], hooks=" or ".join(hooks)), err=True)
    if output == "json":
        click.echo(to_json({**fields, **_as_json(outcome, dry_run)}))
        if outcome.conflicts:
            sys.exit(1)  # the JSON names them; no second line on stderr
    else:
        _say(outcome, no_branch, dry_run)


def _required_secrets(secrets) -> set[str]:
    """``namespace/name`` of each Secret the repository's objects cannot start without."""
    return {f"{s.namespace}/{s.name}" for s in secrets.secrets if not s.optional}


def _require_synced_branch(branch: str, synced: str | None) -> None:
    """An update branch starts from the checked-out branch: from another than the synced one
    its pull request would carry that branch's commits (a run's, say) along with the update.
    An update's own branch is fine: a second update there builds on the first."""
    if synced and branch != synced and not branch.startswith(BRANCH_PREFIX):
        raise RlgenError(f"on branch {branch}: the update's branch would start here and carry its commits; "
                         f"git switch {synced} (the branch the cluster syncs) first, or pass --no-branch to "
                         f"commit the update on {branch}")


def _say(outcome, no_branch: bool, dry_run: bool) -> None:
    """The table output: what changed, and how to review it, or the conflicts (exit 1)."""
    if not outcome.render:
        click.echo("Up to date: this rlgen renders the same repository from these answers.")
        return
    if outcome.conflicts:
        for path in outcome.conflicts:
            click.echo(f"CONFLICT {path}")
        if dry_run:
            raise ProblemsFound(f"dry run: {len(outcome.conflicts)} file(s) would conflict; nothing was changed")
        raise ProblemsFound(f"{len(outcome.conflicts)} file(s) conflict: fix the markers, git add and git commit, "
                            "or rlgen update --abort")
    _say_what_moves(outcome, dry_run)
    if dry_run:
        where = f"a new branch {outcome.branch}" if outcome.new_branch else f"branch {outcome.branch}"
        click.echo(f"Dry run: nothing written. Would commit on {where}:")
        for kind, mark in (("added", "A"), ("changed", "M"), ("removed", "D")):
            for path in outcome.files[kind]:
                click.echo(f"    {mark} {path}")
        return
    # On its own branch the update is what HEAD adds to the synced branch (rlgen diff's default);
    # committed on the current branch (--no-branch) it is the last commit alone.
    review = f"rlgen diff --base {outcome.commit[:7]}~1 --head {outcome.commit[:7]}" if no_branch else "rlgen diff"
    count = sum(len(paths) for paths in outcome.files.values())
    click.echo(f"Updated on branch {outcome.branch} ({count} file(s) changed, "
               f"commit {outcome.commit[:7]}): review it with {review}.")


def _say_what_moves(outcome, dry_run: bool) -> None:
    """What the update moves and what the team must do before its merge syncs."""
    for line in outcome.verl.describe() if outcome.verl else []:
        click.echo(f"{'Would move' if dry_run else 'Moved'} trainer configs: {line}")
    if outcome.template_moved:
        click.echo(f"Template {outcome.template_moved}")
    for run, old, new in outcome.repinned:
        click.echo(f"Run {run}: RayJob {old} -> {new}")
    if outcome.restarts:
        click.echo(outcome.restarts)
    if outcome.images:
        click.echo(f"Images to build before the merge syncs: {', '.join(outcome.images)} "
                   "(the images workflow builds them when the branch is pushed; by hand: bash images/build.sh).")
    if outcome.secrets:
        click.echo(f"Secrets to create before the merge syncs: {', '.join(outcome.secrets)} "
                   "(new to this repository: create them as the README's section on Secrets says).")
    if outcome.engines:
        click.echo(_engine_swap(*outcome.engines))


def _engine_swap(old, new) -> str:
    """What to do with the ``old`` sync engine before the merge that syncs with ``new``."""
    name = new.name if new else "the new engine"
    return (f"Sync engine {old.name} -> {name}: before the merge, stop {old.name} without deleting what it "
            f"applied: {old.retire} (merged while {old.name} runs, {old.merged_while_running}); then install "
            f"{name} as the README's first sync says.")


def _as_json(outcome, dry_run: bool) -> dict:
    return {"up_to_date": not outcome.render, "dry_run": dry_run, "branch": outcome.branch,
            "new_branch": outcome.new_branch, "commit": outcome.commit, "render": outcome.render or None,
            "files": outcome.files, "conflicts": outcome.conflicts,
            "repinned": [{"run": run, "from": old, "to": new} for run, old, new in outcome.repinned],
            "restarts": outcome.restarts or None,
            "migrated": [{"plugin": m.plugin, "from": m.from_version, "to": m.to_version} for m in outcome.migrated],
            "verl": outcome.verl.describe() if outcome.verl else [], "template": outcome.template_moved or None,
            "images": outcome.images, "secrets": outcome.secrets, "clashes": outcome.clashes,
            "sync_engine": {"from": outcome.engines[0].name, "to": outcome.engines[1].name if outcome.engines[1] else None,
                            "before_merge": outcome.engines[0].retire} if outcome.engines else None}
