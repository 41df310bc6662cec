"""The temporary folder of one ``rlgen diff``, and what a killed one left behind.

A commit's files are written below it only as kustomize needs them; nothing is registered with
git. The folder holds a lock for as long as its command runs: a later ``rlgen diff`` removes
every folder whose lock nobody holds (its command was killed), and the git worktrees earlier
rlgen releases registered in such folders.
"""
from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError
from rlgen.tools import git, scratch as held

PREFIX = "rlgen-diff-"


@contextmanager
def scratch(repo: Path) -> Iterator[Path]:
    # Removed while this diff runs: nothing of it waits for git's list of worktrees.
    with held.held_folder(PREFIX, lambda: remove_leftovers(repo)) as folder:
        yield folder


def remove_leftovers(repo: Path) -> None:
    earlier = held.remove_abandoned(PREFIX)
    # git is asked about worktrees only when a folder of an earlier release is there.
    registered = _registered_worktrees(repo) if earlier else []
    for folder in earlier:
        # No lock file: a folder of an earlier rlgen, which checked revisions out as worktrees.
        ours = [w for w in registered if w.parent == folder]
        for worktree in ours:
            git.run(repo, "worktree", "remove", "--force", str(worktree), check=False)
        if ours:
            shutil.rmtree(folder, ignore_errors=True)
    if registered:
        git.run(repo, "worktree", "prune", check=False)


def _registered_worktrees(repo: Path) -> list[Path]:
    try:
        listing = git.start(repo, "worktree", "list", "--porcelain")()
    except RlgenError:
        return []
    paths = [Path(line.removeprefix("worktree ")) for line in listing.splitlines() if line.startswith("worktree ")]
    return [p for p in paths if p.parent.name.startswith(PREFIX)]
