"""A run's RayJob name, and the scheme it is taken by (``run_naming`` in ``rlgen.yaml``).

KubeRay ignores edits to a started RayJob and never re-runs a finished one, so a run's RayJob is
named ``<run>-<hash>``: an edit renders as a new RayJob and the sync engine prunes the old one.

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
from rlgen.repo import answers
from rlgen.repo.layout import TRAINING_BASE
from rlgen.run.config import run_size
from rlgen.run.files import folder_of, read_data
from rlgen.run.folder import run_kustomization, run_labels
from rlgen.spec import Spec
from rlgen.tools import kustomize, repo_files, yamlio

LEGACY, INPUTS = 1, 2
#: The scheme ``rlgen new`` gives a repository.
CURRENT = INPUTS
_TRAINING_INPUT = re.compile(rf"^(?:{re.escape(TRAINING_BASE)}/|components/[^/]+/training/)")


def is_training_input(path: str) -> bool:
    """A file (repository-relative, POSIX) every run's render reads."""
    return bool(_TRAINING_INPUT.match(path)) and not any(p.startswith(".") for p in path.split("/"))


def inputs_hash(run: str, kustomization: str, config_key: str, config: bytes, shared: Mapping[str, bytes]) -> str:
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


def rayjob_name(run: str, rendered: str) -> str:
    """Scheme 1: the name for a run rendered without its rename transformer."""
    for doc in yamlio.load_all(rendered):
        if doc.get("kind") == "RayJob":
            return spec_hash(run, doc["spec"])
    raise ValueError(f"run {run} renders no RayJob")


def spec_hash(run: str, rayjob_spec: dict) -> str:
    """Scheme 1: the name of a run whose unnamed render has this RayJob ``spec``."""
    return hashed_name(run, yamlio.dump(rayjob_spec).encode(), MAX_RAYJOB_NAME)


def name_run(repo: Path, spec: Spec, run: str, labels: dict[str, str] | None = None) -> str:
    """Name ``runs/<run>``'s RayJob by the repository's scheme and pin it into its kustomization,
    with the run's size when its run.yaml sets one; ``labels`` (else the ones it has) are its
    queue and priority."""
    where = folder_of(repo, run)
    scheme = answers.read(repo)["run_naming"]
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, yamlio.load(repo_files.read_text(where / spec.run_config_key, repo)) or {})
    if scheme == INPUTS:
        name = inputs_name(repo, spec, run, labels)
    else:
        (where / "kustomization.yaml").write_text(run_kustomization(spec, run, None, scheme, size, labels))
        name = rayjob_name(run, kustomize.build(where))
    (where / "kustomization.yaml").write_text(run_kustomization(spec, run, name, scheme, size, labels))
    if scheme == INPUTS:
        # The name needs no render, but a run that does not render must not be committed.
        kustomize.build(where)
    return name


def inputs_name(repo: Path, spec: Spec, run: str, labels: dict[str, str] | None = None,
                shared: dict[str, bytes] | None = None) -> str:
    """The name scheme 2 gives the run as its files are now: its run.yaml, its size and labels,
    and the training inputs (``shared``, else read from ``repo``)."""
    config = repo_files.read_bytes(folder_of(repo, run) / spec.run_config_key, repo)
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, read_data(config.decode()) or {})
    unnamed = run_kustomization(spec, run, None, INPUTS, size, labels)
    shared = training_inputs(repo) if shared is None else shared
    return inputs_hash(run, unnamed, spec.run_config_key, config, shared)


def stale_names(repo: Path, spec: Spec, pinned: dict[str, str | None]) -> dict[str, tuple[str | None, str]]:
    """``{run: (pinned RayJob name, the name its files give)}`` of the runs edited by hand after
    ``rlgen run`` named them: synced as they are, KubeRay would never run the edit. Under
    scheme 1 a name needs a render without the name, which a read-only check cannot write: only
    scheme 2 repositories (every one ``rlgen new`` makes) are checked."""
    if answers.read(repo)["run_naming"] != INPUTS:
        return {}
    shared = training_inputs(repo)
    found = {}
    for run, name in pinned.items():
        expected = inputs_name(repo, spec, run, shared=shared)
        if name != expected:
            found[run] = (name, expected)
    return found
