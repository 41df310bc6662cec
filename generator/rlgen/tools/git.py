"""Real git through subprocess, with an explicit identity so it works on machines where
git has no global user configured."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rlgen.errors import RlgenError

IDENTITY = {
    "GIT_AUTHOR_NAME": "rlgen",
    "GIT_AUTHOR_EMAIL": "rlgen@users.noreply.localhost",
    "GIT_COMMITTER_NAME": "rlgen",
    "GIT_COMMITTER_EMAIL": "rlgen@users.noreply.localhost",
}


def run(repo: Path, *args: str, identity: bool = False) -> str:
    env = dict(os.environ)
    if identity:
        # A user's own identity wins when git has one; rlgen's fills in otherwise.
        env = env if _has_identity(repo) else {**env, **IDENTITY}
    try:
        result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env)
    except FileNotFoundError:
        raise RlgenError("git is not installed") from None
    if result.returncode != 0:
        raise RlgenError(f"git {args[0]} failed: {' '.join(result.stderr.split())}")
    return result.stdout


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
