"""``rlgen cluster``: sync entry points for more clusters, through the same update path."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from rlgen.output import output_option, resolve_output, to_json


@click.group("cluster")
def command():
    """Add or remove clusters that sync the repository.

    Each cluster syncs from clusters/<name>/, through the same update path as rlgen update."""


DRY_RUN = click.option("--dry-run", is_flag=True, help="Show what would change (files, branch), and change nothing.")


@command.command("add")
@click.argument("name")
@click.option("--env", "environment", required=True, metavar="ENV",
              help="Environment whose overlays the cluster syncs (overlays/<env>/): production, staging, or any "
                   "other DNS-1123 label, which gets an overlay of its own.")
@click.option("--set", "sets", multiple=True, metavar="PLUGIN.OPTION=VALUE",
              help="The new cluster's own answer of an option that differs per cluster (external-secrets: its "
                   "region, role_arn and oidc_provider_arn); asked on a terminal, required off one.")
@click.option("--no-input", is_flag=True, help="Never prompt: every answer of the new cluster comes with --set.")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of rlgen/update-<commit>.")
@DRY_RUN
@output_option()
def add(name: str, environment: str, sets: tuple[str, ...], no_input: bool, no_branch: bool, dry_run: bool,
        output: str | None):
    """Add cluster NAME syncing overlays/ENV/ (Flux or Argo CD, as the sync plugin).

    What differs per cluster (an RRSA OIDC provider, a role, a region) is the cluster's own
    answer, never copied from the main cluster's: only clusters/NAME/ reads it."""
    from rlgen.errors import RlgenError
    from rlgen.naming import dns1123_label_error
    from rlgen.output import ask_option

    # Said before anything is read: the environment names folders and the sync engine's paths.
    if problem := dns1123_label_error(environment):
        raise RlgenError(f"--env: environment {problem}")
    prompt = ask_option if not no_input and sys.stdin.isatty() else None
    _change(no_branch, dry_run, output, {"cluster": name, "environment": environment},
            add_clusters={name: environment}, cluster_sets=list(sets), prompt=prompt)


@command.command("rm")
@click.argument("name")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of rlgen/update-<commit>.")
@DRY_RUN
@output_option()
def rm(name: str, no_branch: bool, dry_run: bool, output: str | None):
    """Remove cluster NAME's entry points (the main cluster, rlgen.cluster, stays)."""
    _change(no_branch, dry_run, output, {"cluster": name}, remove_clusters=[name])


@command.command("list")
@output_option()
def list_(output: str | None):
    """Every cluster, its environment and the folder its sync engine reads."""
    from rlgen.repo.workspace import find_root
    from rlgen.update.change import clusters

    rows = [{"cluster": name, "environment": env, "folder": f"clusters/{name}/"}
            for name, env in clusters(find_root(Path.cwd()))]
    if resolve_output(output) == "json":
        click.echo(to_json(rows))
        return
    table = [("CLUSTER", "ENVIRONMENT", "FOLDER")] + [(r["cluster"], r["environment"], r["folder"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(2)]
    for row in table:
        click.echo(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}")


def _change(no_branch: bool, dry_run: bool, output: str | None, fields: dict, **change) -> None:
    from rlgen.repo.workspace import find_root
    from rlgen.update.answers_change import Change
    from rlgen.update.change import run_change

    run_change(find_root(Path.cwd()), Change(**change), no_branch, resolve_output(output), dry_run, **fields)
