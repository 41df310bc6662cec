"""Training runs as folders: ``runs/<run>/`` builds the training base under its own names.

KubeRay ignores edits to a started RayJob and never re-runs a finished one, so a run's
RayJob is named ``<run>-<hash>``, the hash taken by the repository's naming scheme
(:mod:`rlgen.repo.naming_scheme`: the run's inputs, or its rendered spec in repositories from
before ``run_naming``): an edit renders as a new RayJob and the sync engine prunes the old one.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlgen.errors import RlgenError
from rlgen.generate.kustomizations import run_kustomization, runs_index
from rlgen.naming import MAX_RAYJOB_NAME, hashed_name
from rlgen.repo import naming_scheme
from rlgen.repo.layout import RUNS_INDEX, TRAINING_BASE
from rlgen.spec import Spec
from rlgen.tools import kustomize, repo_files, yamlio
from rlgen.verl import batch_rules, releases, trainer_config
from rlgen.verl.batch_rules import Size

if TYPE_CHECKING:  # ruamel is imported by the commands that write a run.yaml, when they do
    from ruamel.yaml.comments import CommentedMap

INDEX = Path(RUNS_INDEX)

#: The keys that size a run: its run.yaml sets them, its kustomization patches the RayJob to match.
SIZE_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")


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
    from rlgen.repo import answers

    folder = repo / "runs" / run
    scheme = answers.read(repo)["run_naming"]
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, yamlio.load(repo_files.read_text(folder / spec.run_config_key, repo)) or {})
    if scheme == naming_scheme.INPUTS:
        name = inputs_name(repo, spec, run, labels)
    else:
        (folder / "kustomization.yaml").write_text(run_kustomization(spec, run, None, scheme, size, labels))
        name = rayjob_name(run, kustomize.build(folder))
    (folder / "kustomization.yaml").write_text(run_kustomization(spec, run, name, scheme, size, labels))
    if scheme == naming_scheme.INPUTS:
        # The name needs no render, but a run that does not render must not be committed.
        kustomize.build(folder)
    return name


def inputs_name(repo: Path, spec: Spec, run: str, labels: dict[str, str] | None = None,
                shared: dict[str, bytes] | None = None) -> str:
    """The name scheme 2 gives the run as its files are now: its run.yaml, its size and labels,
    and the training inputs (``shared``, else read from ``repo``)."""
    config = repo_files.read_bytes(folder(repo, run) / spec.run_config_key, repo)
    labels = run_labels(repo, run) if labels is None else labels
    size = run_size(repo, spec, _read(config.decode()) or {})
    unnamed = run_kustomization(spec, run, None, naming_scheme.INPUTS, size, labels)
    shared = naming_scheme.training_inputs(repo) if shared is None else shared
    return naming_scheme.inputs_name(run, unnamed, spec.run_config_key, config, shared)


def stale_names(repo: Path, spec: Spec, pinned: dict[str, str | None]) -> dict[str, tuple[str | None, str]]:
    """``{run: (pinned RayJob name, the name its files give)}`` of the runs edited by hand after
    ``rlgen run`` named them: synced as they are, KubeRay would never run the edit. Under
    scheme 1 a name needs a render without the name, which a read-only check cannot write: only
    scheme 2 repositories (every one ``rlgen new`` makes) are checked."""
    from rlgen.repo import answers

    if answers.read(repo)["run_naming"] != naming_scheme.INPUTS:
        return {}
    shared = naming_scheme.training_inputs(repo)
    found = {}
    for run, name in pinned.items():
        expected = inputs_name(repo, spec, run, shared=shared)
        if name != expected:
            found[run] = (name, expected)
    return found


def run_labels(repo: Path, run: str) -> dict[str, str]:
    """The labels the run's kustomization gives its objects (its own queue and priority)."""
    path = folder(repo, run) / "kustomization.yaml"
    doc = (_read(repo_files.read_text(path, repo)) if path.is_file() else None) or {}
    return {str(k): str(v) for entry in doc.get("labels") or [] for k, v in (entry.get("pairs") or {}).items()}


def _read(text: str):
    """A file's data, only read: at libyaml speed (``rlgen validate`` names every run),
    the round-trip reader only for a file the fast one refuses, so a defect reads as before."""
    try:
        return yamlio.read_checked12(text)  # which keeps the round-trip reader's bounds
    except ValueError:
        return yamlio.load(text)


def effective(repo: Path, spec: Spec, run_doc: dict) -> dict:
    """The trainer config a run's pods compose: the repository's base, then the run's file."""
    base = repo / TRAINING_BASE / spec.trainer_config_key
    text = repo_files.read_text(base, repo) if base.is_file() else ""
    # Not dumped and parsed again: ruamel moves comments when a document is dumped twice.
    # A copy: effective_config shares its parse of the base with every caller.
    base_config = copy.deepcopy(trainer_config.effective_config({spec.trainer_config_key: text}))
    return trainer_config.deep_merge(base_config, _plain(run_doc))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def run_size(repo: Path, spec: Spec, run_doc: dict) -> Size | None:
    """The run's own size when its run.yaml sets one; None leaves the base RayJob's size."""
    flat = trainer_config.flatten(run_doc)
    if not any(key in flat for key in SIZE_KEYS):
        return None
    path = repo / TRAINING_BASE / "rayjob.yaml"
    base = (_read(repo_files.read_text(path, repo)) if path.is_file() else None) or {}
    if path.is_file() and not ((base.get("spec") or {}).get("rayClusterSpec") or {}).get("workerGroupSpecs"):
        raise RlgenError(f"{TRAINING_BASE}/rayjob.yaml has no GPU worker group (an older layout), so a run "
                         "cannot change trainer.nnodes or trainer.n_gpus_per_node: give it the worker group this rlgen generates")
    return batch_rules.size(effective(repo, spec, run_doc))


def check_batches(repo: Path, spec: Spec, run: str, run_doc: dict) -> None:
    """verl's batch rules for the run's world size, before anything is written."""
    found = batch_rules.problems(effective(repo, spec, run_doc), releases.get(spec.verl_version))
    if found:
        raise RlgenError(f"run {run}: " + "; ".join(found))


def folder(repo: Path, run: str) -> Path:
    return repo / "runs" / run


def active(repo: Path) -> list[str]:
    """The runs ``runs/kustomization.yaml`` lists, i.e. the ones the cluster gets."""
    from rlgen.repo import run_files

    return run_files.read_index(repo)


def write_index(repo: Path, runs: list[str]) -> None:
    try:
        text = runs_index(runs, repo_files.read_text(repo / INDEX, repo))
    except ValueError as exc:
        raise RlgenError(f"{INDEX}: {exc}") from None
    (repo / INDEX).write_text(text)


def pinned_name(repo: Path, run: str) -> str | None:
    """The RayJob name ``name_run`` pinned into the run's kustomization."""
    from rlgen.repo import run_files

    return run_files.read_run_kustomization(folder(repo, run) / "kustomization.yaml", run)


def owned_keys(spec: Spec, run: str) -> dict[str, str]:
    """Keys ``rlgen run`` refuses to change, with the reason."""
    per_run = {key: "rlgen writes it into every run.yaml (experiment names and checkpoints are per run)"
               for key in trainer_config.flatten(trainer_config.run_config(spec, run))}
    return per_run


def changes(spec: Spec, run: str, run_doc: dict) -> dict[str, Any]:
    """What a run's ``run.yaml`` changes in the base trainer config, as flat keys in order."""
    own = owned_keys(spec, run)
    return {k: v for k, v in sorted(trainer_config.flatten(run_doc).items()) if k not in own}


def show(value: Any) -> str:
    """A value as reviewers read it in commit messages and diffs (JSON is also YAML)."""
    return json.dumps(value, default=str, ensure_ascii=False)


def set_keys(run_doc: CommentedMap, values: dict[str, Any]) -> None:
    """Set flat ``values`` in a loaded ``run.yaml``, keeping its comments and key order."""
    from ruamel.yaml.comments import CommentedMap

    for key, value in values.items():
        node = run_doc
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = CommentedMap()
            node = node[part]
        node[leaf] = value
