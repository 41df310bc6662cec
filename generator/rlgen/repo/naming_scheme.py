"""How a run's RayJob is named, by scheme (``run_naming`` in ``rlgen.yaml``).

- 1 (repositories without the field): a hash of the RayJob spec kustomize renders for the run.
  It costs a kustomize build per name.
- 2 (``rlgen new`` writes it): a hash of what that render is made of: the run's unnamed
  kustomization, its ``run.yaml`` and every file of the training base and the training
  Components, read in memory. Any edit of those gives a new name, as under scheme 1 (and so
  does an edit the render would not show, such as a comment).

A repository keeps its scheme: switching would rename every run the next ``rlgen run``
touches, and a rename starts the training again once synced.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Mapping

from rlgen.naming import MAX_RAYJOB_NAME, hashed_name
from rlgen.repo.layout import TRAINING_BASE
from rlgen.tools import repo_files

LEGACY, INPUTS = 1, 2
#: The scheme ``rlgen new`` gives a repository.
CURRENT = INPUTS
_TRAINING_INPUT = re.compile(rf"^(?:{re.escape(TRAINING_BASE)}/|components/[^/]+/training/)")


def is_training_input(path: str) -> bool:
    """A file (repository-relative, POSIX) every run's render reads."""
    return bool(_TRAINING_INPUT.match(path)) and not any(p.startswith(".") for p in path.split("/"))


def inputs_name(run: str, kustomization: str, config_key: str, config: bytes, shared: Mapping[str, bytes]) -> str:
    """Scheme 2: the run folder's ``kustomization`` (unnamed) and its config file (``run.yaml``),
    with ``shared`` the repository's files, of which the training inputs count."""
    digest = hashlib.sha256(b"rlgen run inputs 2\n")
    run_files = {f"runs/{run}/kustomization.yaml": kustomization.encode(), f"runs/{run}/{config_key}": config}
    files = {**{p: c for p, c in shared.items() if is_training_input(p)}, **run_files}
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + hashlib.sha256(files[path]).digest())
    return hashed_name(run, digest.hexdigest().encode(), MAX_RAYJOB_NAME)


def training_inputs(repo: Path) -> dict[str, bytes]:
    """The training inputs of a repository on disk, by repository-relative path."""
    out = {}
    for top in (repo / TRAINING_BASE, *sorted((repo / "components").glob("*/training"))):
        for path in top.rglob("*"):
            rel = path.relative_to(repo).as_posix()
            if path.is_file() and is_training_input(rel):
                out[rel] = repo_files.read_bytes(path, repo)
    return out
