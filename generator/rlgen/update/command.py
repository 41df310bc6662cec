"""``rlgen update``: render new answers (or the same ones with a newer rlgen) and merge the
render into the current branch with git, keeping the team's edits; ``--check`` and ``--abort``."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen.errors import ProblemsFound, RlgenError
from rlgen.output import output_option, resolve_output, to_json


@click.command("update")
@click.option("--plugin", "plugins", multiple=True, metavar="NAME", help="Plugin for its slot (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="PLUGIN.OPTION=VALUE", help="Set a plugin option (repeatable).")
@click.option("--unset", "unsets", multiple=True, metavar="PLUGIN.OPTION", help="Back to the option's default (repeatable).")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of a new branch rlgen/update-<commit>.")
@click.option("--check", "check_only", is_flag=True, help="Change nothing: exit 1 when the repository is behind.")
@click.option("--abort", is_flag=True, help="Undo a conflicted update: HEAD, index and files as before it.")
@click.option("--dry-run", is_flag=True, help="Show what the update would change (files, branch, conflicts), "
              "and change nothing.")
@output_option()
@click.option("--template-ref", metavar="REF", help="Merge the team's template (rlgen.yaml: template) at this branch, "
              "tag or commit instead of the newest commit of its source.")
@click.option("--force", is_flag=True, help="With --set rlgen.verl=...: drop config keys the new verl release "
              "removed instead of refusing the move.")
def command(plugins, sets, unsets, no_branch, check_only, abort, dry_run, output, template_ref, force):
    """Render the answers in rlgen.yaml with these changes and merge the render into the current
    branch: your edits stay, conflicts are left as standard conflict markers (exit 1)."""
    from rlgen.repo.workspace import find_root

    root = find_root(Path.cwd())
    output = resolve_output(output)
    if abort:
        return _abort(root, output)
    if check_only:
        return _check(root, output)
    from rlgen.update.answers_change import Change

    run_change(root, Change(list(plugins), list(sets), list(unsets), force=force, template_ref=template_ref,
                            template_newest=True), no_branch, output, dry_run)


def run_change(root: Path, change, no_branch: bool, output: str, dry_run: bool = False, **fields) -> None:
    """The one update path, for ``rlgen update`` and ``rlgen cluster``; ``fields`` lead its JSON."""
    from rlgen.plugin_host.discovery import discover
    from rlgen.repo import answers
    from rlgen.tools import kustomize
    from rlgen.update.answers_change import new_selection
    from rlgen.update.engine import update

    from rlgen.tools import git, git_recovery

    kustomize.command()
    from rlgen.tools.signals import terminate_as_interrupt

    # One change at a time, on a branch, from a repository no killed git left locked; SIGTERM
    # restores the repository like Ctrl-C (exit 130).
    click.get_current_context().with_resource(terminate_as_interrupt())
    click.get_current_context().with_resource(git_recovery.lock(root))
    git.require_no_stale_lock(root)
    git.require_writable(root)
    git.require_branch(root)
    recorded = answers.read(root)
    outcome = update(root, recorded, new_selection(discover(), recorded, change), change, no_branch, dry_run)
    if outcome.clashes:
        from rlgen.generate.team_template import clash_line

        for path in outcome.clashes:
            click.echo(clash_line(path), err=True)
    if outcome.render and not outcome.conflicts and (hooks := git.hooks_present(root)):
        from rlgen.update.render import HOOKS_SKIPPED

        # A note, not data: on stderr, whatever the output format.
        click.echo("Hooks: " + HOOKS_SKIPPED.format(render=outcome.render[:7], hooks=" or ".join(hooks)), err=True)
    if output == "json":
        click.echo(to_json({**fields, **_as_json(outcome, dry_run)}))
        if outcome.conflicts:
            sys.exit(1)  # the JSON names them; no second line on stderr
        return
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
    for line in outcome.verl.describe() if outcome.verl else []:
        click.echo(f"{'Would move' if dry_run else 'Moved'} trainer configs: {line}")
    if outcome.template_moved:
        click.echo(f"Template {outcome.template_moved}")
    for run, old, new in outcome.repinned:
        click.echo(f"Run {run}: RayJob {old} -> {new}")
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


def _as_json(outcome, dry_run: bool) -> dict:
    return {"up_to_date": not outcome.render, "dry_run": dry_run, "branch": outcome.branch,
            "new_branch": outcome.new_branch, "commit": outcome.commit, "render": outcome.render or None,
            "files": outcome.files, "conflicts": outcome.conflicts,
            "repinned": [{"run": run, "from": old, "to": new} for run, old, new in outcome.repinned],
            "migrated": [{"plugin": m.plugin, "from": m.from_version, "to": m.to_version} for m in outcome.migrated],
            "verl": outcome.verl.describe() if outcome.verl else [], "template": outcome.template_moved or None,
            "clashes": outcome.clashes}


def _check(root: Path, output: str) -> None:
    from rlgen.update.behind import check

    status = check(root)
    if output == "json":
        click.echo(to_json(status.as_json()))
    elif status.up_to_date:
        click.echo(f"Up to date (render {status.render[:7]}, rlgen {status.rendered_by}).")
    if not status.up_to_date:
        if output == "json":
            sys.exit(1)  # the JSON says why; no second line on stderr
        raise ProblemsFound(status.reason)


def _abort(root: Path, output: str) -> None:
    from rlgen.update import state

    before = state.load(root)
    if before is None:
        raise RlgenError("no rlgen update waits for a resolution: nothing to abort")
    state.restore(root, before)
    if output == "json":
        click.echo(to_json({"aborted": True, "branch": before.branch, "commit": before.head,
                            "removed_branch": before.update_branch}))
        return
    click.echo(f"Aborted: back on {before.branch or before.head[:7]} as before the update.")
