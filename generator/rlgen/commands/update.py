"""``rlgen update``: render new answers (or the same ones with a newer rlgen) and merge the
render into the current branch with git, keeping the team's edits; ``--check`` and ``--abort``.
The update itself is :mod:`rlgen.update.change`, which ``rlgen cluster`` shares."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen.errors import ProblemsFound, RlgenError
from rlgen.output import ask_option, output_option, resolve_output, to_json


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
@click.option("--no-input", is_flag=True, help="Never prompt: an answer a --plugin swap cannot carry over must "
              "come with --set.")
def command(plugins, sets, unsets, no_branch, check_only, abort, dry_run, output, template_ref, force, no_input):
    """Render new answers (or a newer rlgen) and merge them, keeping edits.

    The answers in rlgen.yaml with these changes are rendered and the render merged into the
    current branch: your edits stay, conflicts are left as standard conflict markers (exit 1)."""
    from rlgen.repo.workspace import find_root

    root = find_root(Path.cwd())
    output = resolve_output(output)
    if abort:
        return _abort(root, output)
    if check_only:
        return _check(root, output)
    from rlgen.update.answers_change import Change
    from rlgen.update.change import run_change

    prompt = ask_option if not no_input and sys.stdin.isatty() else None
    run_change(root, Change(list(plugins), list(sets), list(unsets), force=force, template_ref=template_ref,
                            template_newest=True, prompt=prompt), no_branch, output, dry_run)


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
