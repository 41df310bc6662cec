"""What ``rlgen update --abort`` needs to put back: the branch and commit before the update,
kept in the git directory while a conflicted update waits for its resolution."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from rlgen.tools import git
from rlgen.tools import git_plumbing
from rlgen.tools.git_recovery import UPDATE_STATE as FILE


@dataclass(frozen=True)
class Before:
    branch: str | None  # None when HEAD was detached
    head: str
    update_branch: str | None


def merging(root: Path) -> bool:
    return git_plumbing.git_path(root, "MERGE_HEAD").is_file()


def save(root: Path, before: Before) -> None:
    git_plumbing.git_path(root, FILE).write_text(json.dumps(asdict(before)))


def load(root: Path) -> Before | None:
    path = git_plumbing.git_path(root, FILE)
    if not path.is_file():
        return None
    if not merging(root):
        path.unlink()  # the user committed (or aborted) the merge with git itself
        return None
    return Before(**json.loads(path.read_text()))


def restore(root: Path, before: Before) -> None:
    """HEAD, index and work tree exactly as they were; the update branch gone."""
    git.run(root, "reset", "-q", "--hard", before.head)
    if before.update_branch:
        git.run(root, "switch", "-q", *([before.branch] if before.branch else ["--detach", before.head]))
        git.run(root, "branch", "-q", "-D", before.update_branch)
    for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", FILE):
        git_plumbing.git_path(root, name).unlink(missing_ok=True)
