"""``rlgen run``: create, change, list and remove training runs, one commit each.

The subcommands and their options; what each does is in :mod:`rlgen.runs.edits`, imported when
it runs.
"""
from __future__ import annotations

import click

from rlgen.output import output_option


#: --resume-from on run new, sweep and set.
RESUME_HELP = ("Continue from the newest checkpoint of this run's RayJob (its world size, model and engine "
               "must match); else the new RayJob starts from step 0.")


@click.group("run")
def command():
    """Create, change, list and remove training runs.

    Each run is a folder runs/<run>/ and one RayJob. Run these inside the generated repository; each change is one commit.
    """


@command.command("new")
@click.argument("name")
@click.option("--from", "source", metavar="RUN", help="Start from the changes of this run.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="verl Hydra key to change, VALUE in YAML (repeatable).")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of a new branch run/NAME.")
@click.option("--from-head", is_flag=True,
              help="Branch from HEAD instead of the synced branch (rlgen.git_branch, origin/ first).")
@click.option("--queue", metavar="QUEUE", help="Volcano queue of this run (rlgen.gang_scheduling=volcano).")
@click.option("--priority-class", metavar="NAME", help="PriorityClass of this run (rlgen.gang_scheduling=volcano).")
@click.option("--priority", metavar="CLASS", help="Kueue WorkloadPriorityClass of this run (queue plugin kueue).")
@click.option("--env", metavar="ENV", help="List it in this environment's runs (overlays/ENV/runs/) instead of the main cluster's.")
@click.option("--resume-from", metavar="RUN", help=RESUME_HELP)
@click.option("--dry-run", is_flag=True, help="Show what would be committed, and change nothing.")
@output_option()
def new(name: str, source: str | None, sets: tuple[str, ...], no_branch: bool, from_head: bool,
        queue: str | None, priority_class: str | None, priority: str | None, env: str | None,
        resume_from: str | None, dry_run: bool, output: str | None):
    """Add run NAME on a new branch run/NAME, committed: open a pull request to start it.

    The branch starts from the branch the cluster syncs, fetched from origin first, so it carries
    no other run's commits; its upstream is its own name on origin, so a plain git push goes there."""
    from rlgen.runs import edits

    edits.new(edits.NewRequest(name=name, source=source, sets=sets, queue=queue, priority_class=priority_class,
                               priority=priority, resume_from=resume_from, no_branch=no_branch, from_head=from_head,
                               env=env, dry_run=dry_run, output=output))


@command.command("sweep")
@click.argument("name")
@click.option("--grid", "grids", multiple=True, required=True, metavar="KEY=V1,V2",
              help="verl Hydra key and its values, one run per value; each --grid multiplies the runs. Values are "
                   "YAML separated by commas, or one YAML flow list: KEY=[1e-6, \"a,b\"] (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="verl Hydra key to change in every run, VALUE in YAML (repeatable).")
@click.option("--from", "source", metavar="RUN", help="Start every run from the changes of this run.")
@click.option("--no-branch", is_flag=True,
              help="Commit on the current branch instead of a new branch run/sweep-NAME.")
@click.option("--from-head", is_flag=True,
              help="Branch from HEAD instead of the synced branch (rlgen.git_branch, origin/ first).")
# A larger grid is asked for by name: each run holds its own GPUs once merged.
@click.option("--max-runs", type=click.IntRange(min=1), default=16, show_default=True, metavar="N",
              help="Refuse a grid of more runs than this.")
@click.option("--env", metavar="ENV", help="List them in this environment's runs (overlays/ENV/runs/) instead of the main cluster's.")
@click.option("--resume-from", metavar="RUN", help=RESUME_HELP)
@click.option("--dry-run", is_flag=True, help="Show what would be committed, and change nothing.")
@output_option()
def sweep(name: str, grids: tuple[str, ...], sets: tuple[str, ...], source: str | None, no_branch: bool,
          from_head: bool, max_runs: int, env: str | None, resume_from: str | None, dry_run: bool,
          output: str | None):
    """Add one run per point of the grid (the product of the --grid values), named NAME-1, NAME-2, ...
    in grid order (the last --grid varying fastest; NAME-01 ... from 10 runs on), on one new branch
    run/sweep-NAME in one commit.

    Each run is made and checked as rlgen run new makes it, and labelled rlgen.io/sweep=NAME:
    rlgen run list groups by it, rlgen run rm --sweep NAME removes them all."""
    from rlgen.runs import sweep as sweeps

    sweeps.new(sweeps.SweepRequest(name=name, grids=grids, sets=sets, source=source, max_runs=max_runs,
                                   resume_from=resume_from, no_branch=no_branch, from_head=from_head, env=env,
                                   dry_run=dry_run, output=output))


@command.command("set")
@click.argument("name")
@click.argument("assignments", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--resume-from", metavar="RUN", help=RESUME_HELP)
@click.option("--dry-run", is_flag=True, help="Show what would be committed, and change nothing.")
@output_option()
def set_(name: str, assignments: tuple[str, ...], resume_from: str | None, dry_run: bool, output: str | None):
    """Change verl keys of run NAME and give it a new RayJob name, in one commit: on the synced
    branch (rlgen.git_branch) on a new branch run/set-NAME from it (fetched first), elsewhere on
    the current branch. Hand edits of the run's files are committed with it.

    Without KEY=VALUE it only names the RayJob for the run's files as they are: what
    `rlgen validate` asks for after run.yaml or the training base was edited by hand (the
    new name starts the run again once synced).

    The new RayJob starts from step 0 in a checkpoint folder of its own; --resume-from NAME
    continues from the old RayJob's newest checkpoint when the world size and model allow it.
    """
    from rlgen.runs import edits

    edits.set_(name, assignments, resume_from=resume_from, dry_run=dry_run, output=output)


@command.command("rm")
@click.argument("name", required=False)
@click.option("--sweep", metavar="SWEEP", help="Remove every run of this sweep instead (branch run/rm-sweep-SWEEP).")
@click.option("--no-branch", is_flag=True, help="Commit on the current branch instead of a new branch run/rm-NAME.")
@click.option("--from-head", is_flag=True,
              help="Branch from HEAD instead of the synced branch (rlgen.git_branch, origin/ first).")
@click.option("--dry-run", is_flag=True, help="Show what would be committed, and change nothing.")
@output_option()
def rm(name: str | None, sweep: str | None, no_branch: bool, from_head: bool, dry_run: bool, output: str | None):
    """Remove run NAME (its folder and its index entry) on a new branch run/rm-NAME, committed:
    once merged, the sync engine prunes its RayJob. With --sweep, every run of the sweep in one commit.

    The branch starts from the branch the cluster syncs, as for rlgen run new."""
    if (name is None) == (sweep is None):
        raise click.UsageError("give a run NAME or --sweep SWEEP (one of them)")
    if sweep is not None:
        from rlgen.runs import sweep as sweeps

        sweeps.rm(sweep, no_branch=no_branch, from_head=from_head, dry_run=dry_run, output=output)
        return
    from rlgen.runs import edits

    edits.rm(name, no_branch=no_branch, from_head=from_head, dry_run=dry_run, output=output)


@command.command("list")
@output_option()
def list_(output: str | None):
    """The active runs: run, RayJob name, size (GPU nodes x GPUs each), what one checkpoint save
    writes (CKPT/SAVE: from the model's size and save_contents; every save is kept unless
    trainer.max_actor_ckpt_to_keep says otherwise), and the keys each run changes.

    The runs of a sweep (rlgen run sweep) are listed together, with a SWEEP column."""
    from rlgen.runs import edits

    edits.list_(output)
