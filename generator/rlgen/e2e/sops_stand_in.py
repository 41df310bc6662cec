"""A SOPS repository on the throwaway control plane, without the team's key.

The values under ``secrets/`` are encrypted for the team's age recipients, and ``rlgen e2e``
never reads a credential. So the commit Flux syncs is the one tested plus one commit on top: each
encrypted file there holds a placeholder encrypted for an age key pair made for this run, and the
decryption Secret holds that key. Flux then decrypts and builds the secrets stage exactly as on
the cluster (the Kustomization's ``decryption``, the ``secretGenerator`` entries, their formats);
only the values differ. The repository is left as it was (rlgen.e2e.commit_on_top).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rlgen.e2e import commit_on_top as on_top
from rlgen.e2e.programs import program
from rlgen.errors import RlgenError
from rlgen.plugin_api import SECRETS_FOLDER
from rlgen.tools import sops

#: What the decryption Secret's key is named: kustomize-controller imports each ``*.agekey`` key.
AGE_KEY = "age.agekey"


@dataclass(frozen=True)
class StandIn:
    """The commit to sync, the age identity that decrypts it, and the Git environment that
    finds the commit (commit_on_top.git_env)."""

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
    encrypted for a new key pair; ``work`` holds the new objects (commit_on_top.git_env)."""
    identity, recipient = key_pair()
    env = on_top.git_env(root, work)
    changed = {path: (mode, sops.encrypt_for(recipient, placeholder, path, cwd=work))
               for mode, blob, path in on_top.files(root, env, commit, SECRETS_FOLDER)
               if sops.is_encrypted(on_top.blob(root, env, blob))}
    if not changed:
        return StandIn(commit, identity, 0, env)
    message = "rlgen e2e: the secrets' values, placeholders encrypted for this run's age key"
    return StandIn(on_top.commit(root, env, commit, changed, message), identity, len(changed), env)
