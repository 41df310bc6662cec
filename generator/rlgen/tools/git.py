"""Real git through subprocess, with an explicit identity so it works on machines where
git has no global user configured: the one way rlgen runs git, and the questions every
command asks of a repository (its HEAD, whether its tree is clean). The object-store
plumbing of ``rlgen update`` is in :mod:`rlgen.tools.git_plumbing`, the all-or-nothing
change of ``rlgen run`` and ``rlgen update`` in :mod:`rlgen.tools.git_change`."""
from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError

IDENTITY = {
    "GIT_AUTHOR_NAME": "rlgen",
    "GIT_AUTHOR_EMAIL": "rlgen@users.noreply.localhost",
    "GIT_COMMITTER_NAME": "rlgen",
    "GIT_COMMITTER_EMAIL": "rlgen@users.noreply.localhost",
}


def run(repo: Path, *args: str, identity: bool = False, check: bool = True, input: str | None = None,
        extra_env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> str:
    """git's output; an exit code outside ``ok_codes`` is an :class:`RlgenError` unless ``check``
    is false (then the output is empty)."""
    env = {**os.environ, **(extra_env or {})}
    if identity:
        # A user's own identity wins when git has one; rlgen's fills in otherwise.
        env = env if _has_identity(repo) else {**env, **IDENTITY}
    try:
        result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, input=input)
    except FileNotFoundError:
        raise RlgenError("git is not installed") from None
    if result.returncode not in ok_codes and check:
        raise RlgenError(f"git {args[0]} failed: {' '.join(result.stderr.split())}")
    return result.stdout if result.returncode in ok_codes else ""


def _has_identity(repo: Path) -> bool:
    probe = subprocess.run(["git", "config", "user.email"], cwd=repo, capture_output=True, text=True)
    return probe.returncode == 0 and bool(probe.stdout.strip())


def init(repo: Path, branch: str) -> None:
    """A repository whose first commit lands on ``branch``: a new one, or an empty clone
    already there (symbolic-ref, not ``init -b``, which a re-init ignores)."""
    run(repo, "init", "-q")
    run(repo, "symbolic-ref", "HEAD", f"refs/heads/{branch}")


def commit_all(repo: Path, message: str) -> None:
    run(repo, "add", "-A")
    run(repo, "commit", "-q", "-m", message, identity=True)


def origin_url(repo: Path) -> str | None:
    """``git remote get-url origin`` of ``repo``, or None when it has no such remote."""
    probe = subprocess.run(["git", "remote", "get-url", "origin"], cwd=repo, capture_output=True, text=True)
    return probe.stdout.strip() or None if probe.returncode == 0 else None


def has_commits(repo: Path) -> bool:
    probe = subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=repo, capture_output=True, text=True)
    return probe.returncode == 0


def head(repo: Path) -> tuple[str | None, str]:
    """(the checked-out branch, ``None`` on a detached HEAD; the commit HEAD points at)."""
    sha = run(repo, "rev-parse", "HEAD").strip()
    return run(repo, "symbolic-ref", "-q", "--short", "HEAD", check=False).strip() or None, sha


def name_status(repo: Path, *args: str) -> dict[str, list[str]]:
    """``git diff --name-status ARGS`` as the ``files`` object of a change's JSON: paths added,
    changed and removed (a rename is a removal and an addition)."""
    found: dict[str, list[str]] = {"A": [], "M": [], "D": []}
    for line in run(repo, "diff", "--name-status", "--no-renames", *args).splitlines():
        status, _, path = line.partition("\t")
        found.get(status[:1], found["M"]).append(path)
    return {"added": sorted(found["A"]), "changed": sorted(found["M"]), "removed": sorted(found["D"])}


def require_clean(repo: Path) -> None:
    # A commit of ours must hold only our change, and a rollback must not touch the user's work.
    if run(repo, "status", "--porcelain").strip():
        raise RlgenError("the working tree has uncommitted changes: commit or stash them first")


def require_no_stale_lock(repo: Path) -> None:
    """A git lock file left by a killed git (``index.lock``, ``HEAD.lock``) makes a later step
    fail halfway; said first, before anything is created."""
    git_dir = Path(repo, run(repo, "rev-parse", "--git-dir").strip())
    for name in ("index.lock", "HEAD.lock"):
        if (git_dir / name).exists():
            raise RlgenError(f"{git_dir / name} exists: another git command is running, or one was killed and left "
                             "its lock; if no git runs, delete that file and run this again")


def require_branch(repo: Path) -> str:
    # A commit on a detached HEAD belongs to no branch: the next checkout orphans it.
    branch = head(repo)[0]
    if branch is None:
        raise RlgenError("HEAD is detached (no branch checked out): switch to a branch first, "
                         "or a commit here would belong to no branch")
    return branch


@contextmanager
def lock(repo: Path) -> Iterator[None]:
    """Hold ``.git/rlgen.lock`` while a command changes the repository: two commands at once
    would commit each other's files or branch from each other's half-written state."""
    import fcntl

    path = Path(repo, run(repo, "rev-parse", "--git-common-dir").strip()) / "rlgen.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RlgenError(f"another rlgen command is changing this repository (it holds {path}): "
                             "wait for it to finish, then run this one again") from None
        yield
    finally:
        os.close(fd)
