"""``rlgen diff``: render two revisions with kustomize and compare them object by object.

A commit is read from git's object store, never checked out: git says which files differ, only
the roots that read one of them are built, and a commit's side of such a root is written to a
temporary folder holding just the files it reads (the user's checkout is never touched,
nothing is registered with git); compared with the working tree, only the files that differ
come from git, the others from disk. Defaults:

- ``--base``: the commit where HEAD (or ``--head``) forks from the branch the cluster syncs
  (``rlgen.git_branch``), taken from ``origin/<branch>`` when that exists, else ``<branch>``:
  on a run branch, exactly what its pull request would change.
- ``--head``: the working tree, uncommitted edits included, like ``git diff <base>``.
"""
from __future__ import annotations

import click

from rlgen.output import output_option


@click.command("diff")
@click.option("--base", metavar="REF", help="Revision to compare with (default: where HEAD forks from the synced branch).")
@click.option("--head", metavar="REF", help="Revision to compare (default: the working tree).")
@output_option("markdown")
# The old spelling, hidden: CI workflows generated before -o/--output keep working.
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), hidden=True)
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are differences, 0 when none (like git diff).")
def command(base: str | None, head: str | None, output: str | None, fmt: str | None, exit_code: bool):
    """Compare the rendered manifests of two revisions.

    Added, removed and changed objects, and the trainer-config keys each run changes, as far as a sync entry point applies them.
    Secret values are never shown. -o markdown: for a pull-request comment."""
    from rlgen.collector import paused

    with paused():
        from rlgen.diff.revisions import diff

        diff(base, head, output, fmt, exit_code)
