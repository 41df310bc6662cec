"""Where things are in a generated repository: the paths every command that writes or reads
one agrees on. Cheap to import (a check of a path loads nothing else); what is in a run's files
is :mod:`rlgen.run`'s."""
from __future__ import annotations

#: The run template every runs/<run>/ builds on.
TRAINING_BASE = "base/training"
#: One folder per run, shared by every environment.
RUNS = "runs"
#: Each environment's index of the runs its clusters get (the main cluster's environment's is
#: the one ``rlgen run`` edits), listing run folders as :data:`RUN_ENTRY`.
RUNS_INDEX = "overlays/{env}/runs/kustomization.yaml"
RUN_ENTRY = "../../../runs/{run}"
#: Without an index (Flux, whose kustomize-controller builds a folder with no kustomization file
#: from each sub-folder holding one: docs/upstream.md), an environment gets a run by a folder of
#: its own, ``overlays/<env>/runs/<run>/``, whose kustomization names the run's folder as
#: :data:`RUN_LINK`: adding, changing or removing a run touches no file another run's change
#: touches, so run branches merge in any order.
RUN_LINK = "../../../../runs/{run}"
#: The file that keeps an environment's runs folder in Git when it has no run (not YAML: the
#: sync engine's scan passes it by).
RUNS_README = "README.md"
#: Where the main environment's index was before every environment had one (``rlgen update``
#: moves it).
OLD_RUNS_INDEX = f"{RUNS}/kustomization.yaml"


def runs_index(env: str) -> str:
    return RUNS_INDEX.format(env=env)


def runs_root(env: str) -> str:
    """The kustomization root of ``env``'s runs (its index's folder)."""
    return runs_index(env).rpartition("/")[0]


def run_link(env: str, run: str) -> str:
    """The folder that gives ``env`` the run ``run`` (a layout without index)."""
    return f"{runs_root(env)}/{run}"


def runs_env(path: str) -> str | None:
    """The environment whose runs folder holds ``path`` (None: no runs folder's)."""
    parts = path.split("/")
    return parts[1] if len(parts) > 3 and parts[0] == "overlays" and parts[2] == RUNS else None


def is_runs_root(path: str) -> bool:
    """``path`` is an environment's runs root (``overlays/<env>/runs``)."""
    parts = path.split("/")
    return len(parts) == 3 and runs_root(parts[1]) == path
