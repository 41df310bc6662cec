"""Training runs as folders: ``runs/<run>/`` builds the training base under its own names.

KubeRay ignores edits to a started RayJob and never re-runs a finished one, so a run's
RayJob is named ``<run>-<hash of its rendered spec>``: an edit renders as a new RayJob and
the sync engine prunes the old one.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from rlgen.generate.kustomizations import (
    RUNS_INDEX,
    run_kustomization,
    runs_index,
)
from rlgen.naming import MAX_RAYJOB_NAME, hashed_name
from rlgen.runs import naming_scheme
from rlgen.spec import Spec
from rlgen.tools import kustomize, yamlio
from rlgen.verl import trainer_config

INDEX = Path(RUNS_INDEX)

#: verl keys a run may not change, with the reason: the RayJob's resources come from these.
SHARED_WITH_RAYJOB = {
    "trainer.n_gpus_per_node": "it must match the GPUs the RayJob requests (rlgen.gpus_per_node)",
    "trainer.nnodes": "it must match the Ray nodes of the RayJob (rlgen.nnodes)",
}


def rayjob_name(run: str, rendered: str) -> str:
    """The name for a run rendered without its rename transformer."""
    for doc in yamlio.load_all(rendered):
        if doc.get("kind") == "RayJob":
            return hashed_name(run, yamlio.dump(doc["spec"]).encode(), MAX_RAYJOB_NAME)
    raise ValueError(f"run {run} renders no RayJob")


def name_run(repo: Path, spec: Spec, run: str) -> str:
    """Name ``runs/<run>``'s RayJob by the repository's scheme and pin it into its kustomization."""
    from rlgen.repo import answers

    folder = repo / "runs" / run
    scheme = answers.read(repo)["run_naming"]
    unnamed = run_kustomization(spec, run, None, scheme)
    if scheme == naming_scheme.INPUTS:
        run_files = {f"runs/{run}/kustomization.yaml": unnamed.encode(),
                     f"runs/{run}/{spec.run_config_key}": (folder / spec.run_config_key).read_bytes()}
        name = naming_scheme.inputs_name(run, run_files, naming_scheme.training_inputs(repo))
    else:
        (folder / "kustomization.yaml").write_text(unnamed)
        name = rayjob_name(run, kustomize.build(folder))
    (folder / "kustomization.yaml").write_text(run_kustomization(spec, run, name, scheme))
    if scheme == naming_scheme.INPUTS:
        # The name needs no render, but a run that does not render must not be committed.
        kustomize.build(folder)
    return name


def folder(repo: Path, run: str) -> Path:
    return repo / "runs" / run


def active(repo: Path) -> list[str]:
    """The runs ``runs/kustomization.yaml`` lists, i.e. the ones the cluster gets."""
    from rlgen.runs import files

    return files.read_index(repo)


def write_index(repo: Path, runs: list[str]) -> None:
    (repo / INDEX).write_text(runs_index(runs, (repo / INDEX).read_text()))


def pinned_name(repo: Path, run: str) -> str | None:
    """The RayJob name ``name_run`` pinned into the run's kustomization."""
    from rlgen.runs import files

    return files.read_run_kustomization(folder(repo, run) / "kustomization.yaml", run)


def owned_keys(spec: Spec, run: str) -> dict[str, str]:
    """Keys ``rlgen run`` refuses to change, with the reason."""
    per_run = {key: "rlgen writes it into every run.yaml (experiment names and checkpoints are per run)"
               for key in trainer_config.flatten(trainer_config.run_config(spec, run))}
    return {**per_run, **SHARED_WITH_RAYJOB}


def changes(spec: Spec, run: str, run_doc: dict) -> dict[str, Any]:
    """What a run's ``run.yaml`` changes in the base trainer config, as flat keys in order."""
    own = owned_keys(spec, run)
    return {k: v for k, v in sorted(trainer_config.flatten(run_doc).items()) if k not in own}


def show(value: Any) -> str:
    """A value as reviewers read it in commit messages and diffs (JSON is also YAML)."""
    return json.dumps(value, default=str, ensure_ascii=False)


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
