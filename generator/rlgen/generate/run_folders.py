"""Training runs as folders: ``runs/<run>/`` builds the training base under its own names.

KubeRay ignores edits to a started RayJob and never re-runs a finished one, so a run's
RayJob is named ``<run>-<hash>``, the hash taken by the repository's naming scheme
(:mod:`rlgen.repo.naming_scheme`: the run's inputs, or its rendered spec in repositories from
before ``run_naming``): an edit renders as a new RayJob and the sync engine prunes the old one.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap

from rlgen.errors import RlgenError
from rlgen.generate.kustomizations import run_kustomization, runs_index
from rlgen.naming import MAX_RAYJOB_NAME, hashed_name
from rlgen.repo import answers, naming_scheme
from rlgen.repo.run_files import folder, index_path, read_data, run_labels, run_size
from rlgen.spec import Spec
from rlgen.tools import kustomize, repo_files, yamlio

if TYPE_CHECKING:  # ruamel is imported by the commands that write a run.yaml, when they do
    from ruamel.yaml.comments import CommentedMap

def rayjob_name(run: str, rendered: str) -> str:
    """The name for a run rendered without its rename transformer."""
    for doc in yamlio.load_all(rendered):
        if doc.get("kind") == "RayJob":
            return hashed_name(run, yamlio.dump(doc["spec"]).encode(), MAX_RAYJOB_NAME)
    raise ValueError(f"run {run} renders no RayJob")


def name_run(repo: Path, spec: Spec, run: str, labels: dict[str, str] | None = None) -> str:
    """Name ``runs/<run>``'s RayJob by the repository's scheme and pin it into its kustomization,
    with the run's size when its run.yaml sets one; ``labels`` (else the ones it has) are its
    queue and priority."""
    where = folder(repo, run)
    scheme = answers.read(repo)["run_naming"]
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, yamlio.load(repo_files.read_text(where / spec.run_config_key, repo)) or {})
    if scheme == naming_scheme.INPUTS:
        name = inputs_name(repo, spec, run, labels)
    else:
        (where / "kustomization.yaml").write_text(run_kustomization(spec, run, None, scheme, size, labels))
        name = rayjob_name(run, kustomize.build(where))
    (where / "kustomization.yaml").write_text(run_kustomization(spec, run, name, scheme, size, labels))
    if scheme == naming_scheme.INPUTS:
        # The name needs no render, but a run that does not render must not be committed.
        kustomize.build(where)
    return name


def inputs_name(repo: Path, spec: Spec, run: str, labels: dict[str, str] | None = None,
                shared: dict[str, bytes] | None = None) -> str:
    """The name scheme 2 gives the run as its files are now: its run.yaml, its size and labels,
    and the training inputs (``shared``, else read from ``repo``)."""
    config = repo_files.read_bytes(folder(repo, run) / spec.run_config_key, repo)
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, read_data(config.decode()) or {})
    unnamed = run_kustomization(spec, run, None, naming_scheme.INPUTS, size, labels)
    shared = naming_scheme.training_inputs(repo) if shared is None else shared
    return naming_scheme.inputs_name(run, unnamed, spec.run_config_key, config, shared)


def stale_names(repo: Path, spec: Spec, pinned: dict[str, str | None]) -> dict[str, tuple[str | None, str]]:
    """``{run: (pinned RayJob name, the name its files give)}`` of the runs edited by hand after
    ``rlgen run`` named them: synced as they are, KubeRay would never run the edit. Under
    scheme 1 a name needs a render without the name, which a read-only check cannot write: only
    scheme 2 repositories (every one ``rlgen new`` makes) are checked."""
    if answers.read(repo)["run_naming"] != naming_scheme.INPUTS:
        return {}
    shared = naming_scheme.training_inputs(repo)
    found = {}
    for run, name in pinned.items():
        expected = inputs_name(repo, spec, run, shared=shared)
        if name != expected:
            found[run] = (name, expected)
    return found


def write_index(repo: Path, runs: list[str]) -> None:
    path = index_path(repo)
    try:
        text = runs_index(runs, repo_files.read_text(path, repo))
    except ValueError as exc:
        raise RlgenError(f"{path.relative_to(repo)}: {exc}") from None
    path.write_text(text)


def set_keys(run_doc: CommentedMap, values: dict[str, Any]) -> None:
    """Set flat ``values`` in a loaded ``run.yaml``, keeping its comments and key order."""
    for key, value in values.items():
        node = run_doc
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = CommentedMap()
            node = node[part]
        node[leaf] = value
