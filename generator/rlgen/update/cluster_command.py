"""``rlgen cluster``: sync entry points for more clusters, through the same update path."""
from __future__ import annotations

from pathlib import Path

import click

from rlgen.output import output_option, resolve_output, to_json
from rlgen.spec import ENVIRONMENTS


@click.group("cluster")
def cluster():
    """Add or remove clusters that sync this repository (clusters/<name>/)."""


@cluster.command("add")
@click.argument("name")
@click.option("--env", "environment", required=True, type=click.Choice(ENVIRONMENTS),
              help="Environment whose overlays the cluster syncs (overlays/<env>/).")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of rlgen/update-<commit>.")
def add(name: str, environment: str, no_branch: bool):
    """Add cluster NAME syncing overlays/ENV/ (Flux or Argo CD, as the sync plugin)."""
    _change(add_clusters={name: environment}, no_branch=no_branch)


@cluster.command("rm")
@click.argument("name")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of rlgen/update-<commit>.")
def rm(name: str, no_branch: bool):
    """Remove cluster NAME's entry points (the main cluster, rlgen.cluster, stays)."""
    _change(remove_clusters=[name], no_branch=no_branch)


@cluster.command("list")
@output_option()
def list_(output: str | None):
    """Every cluster, its environment and the folder its sync engine reads."""
    from rlgen.plugin_host.discovery import discover
    from rlgen.repo import answers
    from rlgen.repo.workspace import find_root
    from rlgen.update.answers_change import Change, new_selection

    root = find_root(Path.cwd())
    rows = [{"cluster": name, "environment": env, "folder": f"clusters/{name}/"}
            for name, env in new_selection(discover(), answers.read(root), Change()).all_clusters()]
    if resolve_output(output) == "json":
        click.echo(to_json(rows))
        return
    for row in rows:
        click.echo(f"{row['cluster']}  {row['environment']}  {row['folder']}")


def _change(no_branch: bool, **change) -> None:
    from rlgen.repo.workspace import find_root
    from rlgen.update.answers_change import Change
    from rlgen.update.command import run_change

    run_change(find_root(Path.cwd()), Change(**change), no_branch)


command = cluster
