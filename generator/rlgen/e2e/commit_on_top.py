"""One commit on top of the one tested, written outside the repository: what ``rlgen e2e``
syncs when the commit cannot be synced as it is (SOPS values encrypted for the team's key, an
Argo CD Application pointing at the team's Git host). Its objects go to a temporary folder and
the repository's own are read through Git's alternates, so the repository is left as it was."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlgen.errors import RlgenError


def git_env(root: Path, work: Path) -> dict[str, str]:
    """Git writing objects and its index under ``work`` and reading the repository's objects as
    alternates: nothing is added to the repository."""
    common = Path(git(root, dict(os.environ), "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (work / "objects").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "GIT_OBJECT_DIRECTORY": str(work / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(common / "objects"), "GIT_INDEX_FILE": str(work / "index"),
            # A CI runner has no Git identity; the commit is the run's own.
            "GIT_AUTHOR_NAME": "rlgen e2e", "GIT_AUTHOR_EMAIL": "rlgen-e2e@rlgen.invalid",
            "GIT_COMMITTER_NAME": "rlgen e2e", "GIT_COMMITTER_EMAIL": "rlgen-e2e@rlgen.invalid"}


def files(root: Path, env: dict, commit: str, folder: str = "") -> list[tuple[str, str, str]]:
    """(mode, blob, path) of each file under ``folder`` (default: every file) at ``commit``."""
    listed = git(root, env, "ls-tree", "-r", "-z", commit, *(["--", f"{folder}/"] if folder else [])).split("\0")
    found = []
    for entry in filter(None, listed):
        info, path = entry.split("\t", 1)
        mode, kind, blob = info.split()
        if kind == "blob":
            found.append((mode, blob, path))
    return found


def blob(root: Path, env: dict, sha: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), "cat-file", "blob", sha], env=env, capture_output=True,
                          check=True).stdout


def commit(root: Path, env: dict, parent: str, changed: dict[str, tuple[str, bytes]], message: str) -> str:
    """A commit of ``parent``'s tree with ``changed`` (path -> (mode, content)) on top of it."""
    git(root, env, "read-tree", parent)
    for path, (mode, content) in sorted(changed.items()):
        sha = git(root, env, "hash-object", "-w", "--stdin", input=content).strip()
        git(root, env, "update-index", "--cacheinfo", f"{mode},{sha},{path}")
    tree = git(root, env, "write-tree").strip()
    return git(root, env, "commit-tree", tree, "-p", parent, "-m", message).strip()


def git(root: Path, env: dict, *args: str, input: bytes | None = None) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], env=env, input=input, capture_output=True)
    if result.returncode != 0:
        raise RlgenError(f"{root}: git {args[0]}: {result.stderr.decode(errors='replace').strip() or 'failed'}")
    return result.stdout.decode()
