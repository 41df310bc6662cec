"""``rlgen run``: create, change, list and remove training runs, one commit each.

Every command checks all of its input before it writes, and a failure after writing (kustomize,
a commit hook) restores the files and the branch: an error changes nothing.
"""
from __future__ import annotations

import click


def _actions():
    from rlgen.runs import actions

    return actions


@click.group("run")
def command():
    """Create, change, list and remove training runs (runs/<run>/, one RayJob each).

    Run these inside the generated repository; each change is one commit.
    """


@command.command("new")
@click.argument("name")
@click.option("--from", "source", metavar="RUN", help="Start from the changes of this run.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="verl Hydra key to change, VALUE in YAML (repeatable).")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of a new branch run/NAME.")
def new(name: str, source: str | None, sets: tuple[str, ...], no_branch: bool):
    """Add run NAME on a new branch run/NAME, committed: open a pull request to start it."""
    _actions().new(name, source, sets, no_branch)


@command.command("set")
@click.argument("name")
@click.argument("assignments", nargs=-1, required=True, metavar="KEY=VALUE...")
def set_(name: str, assignments: tuple[str, ...]):
    """Change verl keys of run NAME and give it a new RayJob name; commits on the current branch.

    Setting a key to its current value still re-pins the RayJob name, which starts the run
    again after run.yaml or the training base was edited by hand.
    """
    _actions().set_(name, assignments)


@command.command("rm")
@click.argument("name")
def rm(name: str):
    """Remove run NAME (its folder and its index entry); the sync engine prunes its RayJob."""
    _actions().rm(name)


@command.command("list")
def list_():
    """The active runs: run, RayJob name, and the keys each run changes."""
    _actions().list_()
