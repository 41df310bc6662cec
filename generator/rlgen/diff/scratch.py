"""The temporary folder of one ``rlgen diff``, and what a killed one left behind.

A commit's files are written below it only as kustomize needs them; nothing is registered with
git. The folder holds a lock for as long as its command runs: a later ``rlgen diff`` removes
every folder whose lock nobody holds (its command was killed), and the git worktrees earlier
rlgen releases registered in such folders.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError
from rlgen.tools import git

PREFIX = "rlgen-diff-"
_OWNER = ".owner"


@contextmanager
def scratch(repo: Path) -> Iterator[Path]:
    # Removed while this diff runs: nothing of it waits for git's list of worktrees.
    cleaning = threading.Thread(target=_remove_leftovers_quietly, args=(repo,), name="remove-leftovers", daemon=True)
    cleaning.start()
    try:
        with tempfile.TemporaryDirectory(prefix=PREFIX) as tmp:
            # Locked before it is named: a lock file another diff can see is always held.
            fd = os.open(Path(tmp) / (_OWNER + ".new"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.rename(Path(tmp) / (_OWNER + ".new"), Path(tmp) / _OWNER)
                yield Path(tmp)
            finally:
                os.close(fd)
    finally:
        cleaning.join()


def _remove_leftovers_quietly(repo: Path) -> None:
    # Best effort, as each removal in it is: a leftover that stays costs the next diff a look.
    try:
        remove_leftovers(repo)
    except (OSError, RlgenError):
        pass


def remove_leftovers(repo: Path) -> None:
    earlier = []
    # Listed by name: a shared temporary folder holds thousands of entries, and matching each
    # against a pattern (glob) costs more than the rest of this clean-up.
    with os.scandir(tempfile.gettempdir()) as entries:
        found = [Path(entry.path) for entry in entries if entry.name.startswith(PREFIX)]
    for folder in found:
        owner = folder / _OWNER
        if owner.is_file():
            if _abandoned(owner):
                shutil.rmtree(folder, ignore_errors=True)
            continue
        earlier.append(folder)
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


def _abandoned(owner: Path) -> bool:
    try:
        fd = os.open(owner, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _registered_worktrees(repo: Path) -> list[Path]:
    try:
        listing = git.start(repo, "worktree", "list", "--porcelain")()
    except RlgenError:
        return []
    paths = [Path(line.removeprefix("worktree ")) for line in listing.splitlines() if line.startswith("worktree ")]
    return [p for p in paths if p.parent.name.startswith(PREFIX)]
