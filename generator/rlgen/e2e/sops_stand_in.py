"""A SOPS repository on the throwaway control plane, without the team's key.

The values under ``secrets/`` are encrypted for the team's age recipients, and ``rlgen e2e``
never reads a credential. So the commit Flux syncs is the one tested plus one commit on top: each
encrypted file there holds a placeholder encrypted for an age key pair made for this run, and the
decryption Secret holds that key. Flux then decrypts and builds the secrets stage exactly as on
the cluster (the Kustomization's ``decryption``, the ``secretGenerator`` entries, their formats);
only the values differ. The commit's objects are written to a temporary folder (the
repository's own objects read through Git's alternates), so the repository is left as it was.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rlgen.e2e.programs import program
from rlgen.errors import RlgenError
from rlgen.plugin_api import SECRETS_FOLDER
from rlgen.tools import sops

#: What the decryption Secret's key is named: kustomize-controller imports each ``*.agekey`` key.
AGE_KEY = "age.agekey"


@dataclass(frozen=True)
class StandIn:
    """The commit to sync, the age identity that decrypts it, and the Git environment that
    finds the commit (see :func:`git_env`)."""

    commit: str
    identity: str
    files: int
    env: dict


def key_pair() -> tuple[str, str]:
    """A new age identity (``age-keygen``'s output) and its recipient."""
    made = subprocess.run([program("age-keygen")], capture_output=True, text=True)
    found = re.search(r"^# public key: (age1\S+)$", made.stdout, re.M)
    if made.returncode != 0 or not found:
        raise RlgenError(f"age-keygen made no key pair: {made.stderr.strip() or 'no public key in its output'}")
    return made.stdout, found.group(1)


def stand_in(root: Path, commit: str, work: Path, placeholder: bytes) -> StandIn:
    """``commit`` with every SOPS-encrypted file under ``secrets/`` replaced by ``placeholder``
    encrypted for a new key pair; ``work`` holds the new objects (see :func:`git_env`)."""
    identity, recipient = key_pair()
    env = git_env(root, work)
    listed = _git(root, env, "ls-tree", "-r", "-z", commit, "--", f"{SECRETS_FOLDER}/").split("\0")
    updates = []
    for entry in filter(None, listed):
        info, path = entry.split("\t", 1)
        mode, kind, blob = info.split()
        if kind != "blob" or not sops.is_encrypted(_blob(root, env, blob)):
            continue
        replaced = sops.encrypt_for(recipient, placeholder, path, cwd=work)
        new = _git(root, env, "hash-object", "-w", "--stdin", input=replaced).strip()
        updates.append(f"{mode},{new},{path}")
    if not updates:
        return StandIn(commit, identity, 0, env)
    _git(root, env, "read-tree", commit)
    for update in updates:
        _git(root, env, "update-index", "--cacheinfo", update)
    tree = _git(root, env, "write-tree").strip()
    message = "rlgen e2e: the secrets' values, placeholders encrypted for this run's age key"
    top = _git(root, env, "commit-tree", tree, "-p", commit, "-m", message).strip()
    return StandIn(top, identity, len(updates), env)


def git_env(root: Path, work: Path) -> dict[str, str]:
    """Git writing objects and its index under ``work`` and reading the repository's objects as
    alternates: nothing is added to the repository."""
    common = Path(_git(root, dict(os.environ), "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (work / "objects").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "GIT_OBJECT_DIRECTORY": str(work / "objects"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(common / "objects"), "GIT_INDEX_FILE": str(work / "index"),
            # A CI runner has no Git identity; the commit is the run's own.
            "GIT_AUTHOR_NAME": "rlgen e2e", "GIT_AUTHOR_EMAIL": "rlgen-e2e@rlgen.invalid",
            "GIT_COMMITTER_NAME": "rlgen e2e", "GIT_COMMITTER_EMAIL": "rlgen-e2e@rlgen.invalid"}


def _blob(root: Path, env: dict, blob: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), "cat-file", "blob", blob], env=env, capture_output=True,
                          check=True).stdout


def _git(root: Path, env: dict, *args: str, input: bytes | None = None) -> str:
    result = subprocess.run(["git", "-C", str(root), *args], env=env, input=input, capture_output=True)
    if result.returncode != 0:
        raise RlgenError(f"{root}: git {args[0]}: {result.stderr.decode(errors='replace').strip() or 'failed'}")
    return result.stdout.decode()
