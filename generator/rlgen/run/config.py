"""What a run's files make: the trainer config its pods compose (the training base's, then its
``run.yaml``), its size, the keys it changes, the keys rlgen owns in it, and verl's batch rules
for its world size."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rlgen import pool
from rlgen.errors import RlgenError
from rlgen.repo import answers
from rlgen.repo.layout import TRAINING_BASE
from rlgen.run.checkpoints import SOURCE_KEY
from rlgen.run.files import read_data
from rlgen.spec import Spec
from rlgen.tools import repo_files
from rlgen.verl import batch_rules, releases, trainer_config
from rlgen.verl.batch_rules import Size

#: The keys that size a run: its run.yaml sets them, its kustomization patches the RayJob to match.
SIZE_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")


def effective(repo: Path, spec: Spec, run_doc: dict) -> dict:
    """The trainer config a run's pods compose: the repository's base, then the run's file."""
    base = repo / TRAINING_BASE / spec.trainer_config_key
    text = repo_files.read_text(base, repo) if base.is_file() else ""
    # Not dumped and parsed again: ruamel moves comments when a document is dumped twice.
    # A copy: effective_config shares its parse of the base with every caller.
    base_config = copy.deepcopy(trainer_config.effective_config({spec.trainer_config_key: text}))
    return trainer_config.deep_merge(base_config, _builtin_types(run_doc))


def _builtin_types(value: Any) -> Any:
    """``value`` as dicts with string keys and lists: ruamel's types left behind."""
    if isinstance(value, dict):
        return {str(k): _builtin_types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_builtin_types(v) for v in value]
    return value


def run_size(repo: Path, spec: Spec, run_doc: dict) -> Size | None:
    """The run's own size when its run.yaml sets one; None leaves the base RayJob's size."""
    flat = trainer_config.flatten(run_doc)
    if not any(key in flat for key in SIZE_KEYS):
        return None
    path = repo / TRAINING_BASE / "rayjob.yaml"
    base = (read_data(repo_files.read_text(path, repo)) if path.is_file() else None) or {}
    if path.is_file() and not ((base.get("spec") or {}).get("rayClusterSpec") or {}).get("workerGroupSpecs"):
        raise RlgenError(f"{TRAINING_BASE}/rayjob.yaml has no GPU worker group (an older layout), so a run "
                         "cannot change trainer.nnodes or trainer.n_gpus_per_node: give it the worker group this rlgen generates")
    return batch_rules.size(effective(repo, spec, run_doc))


def check_batches(repo: Path, spec: Spec, run: str, run_doc: dict) -> None:
    """verl's batch rules for the run's world size, and whether the pool and the queue could
    ever hold the run, before anything is written."""
    config = effective(repo, spec, run_doc)
    size = batch_rules.size(config)
    found = [*pool.fit_problems(pool.of(spec), size.nnodes, size.gpus_per_node),
             *pool.quota_problems(size.nnodes, size.gpus_per_node, *queue_limit(repo))]
    found = found or batch_rules.problems(config, releases.get(spec.verl_version))
    if found:
        raise RlgenError(f"run {run}: " + "; ".join(found))


def queue_limit(repo: Path) -> tuple[int, str]:
    """The most GPUs the repository's queue ever admits one run with (0: no limit): a queue
    plugin's ``gpu_quota``, plus its ``borrowing_limit`` when it borrows from a ``cohort``
    (the kueue plugin's answers; its rlgen_validate_rules says the same to ``rlgen validate``)."""
    doc = answers.read(repo)
    options = doc.get("options", {}).get(doc.get("plugins", {}).get("queue")) or {}
    quota = int(options.get("gpu_quota") or 0)
    borrow = int(options.get("borrowing_limit") or 0) if options.get("cohort") else 0
    note = f" = kueue.gpu_quota {quota} + kueue.borrowing_limit {borrow}" if borrow else " of kueue.gpu_quota"
    return quota + borrow, note


def run_gpus(repo: Path, spec: Spec, run_doc: dict) -> int:
    """The GPUs a run holds while it runs (trainer.nnodes x trainer.n_gpus_per_node)."""
    size = batch_rules.size(effective(repo, spec, run_doc))
    return size.nnodes * size.gpus_per_node


def owned_keys(spec: Spec, run: str) -> dict[str, str]:
    """Keys ``rlgen run`` refuses to change, with the reason."""
    per_run = {key: ("rlgen writes it into every run.yaml (experiment names and checkpoints are per run, "
                     "and a retried RayJob resumes from its own folder)")
               for key in trainer_config.flatten(trainer_config.run_config(spec, run))}
    per_run[SOURCE_KEY] = "rlgen run new/set --resume-from RUN sets it, once the sizes and models match"
    return per_run


def changes(spec: Spec, run: str, run_doc: dict) -> dict[str, Any]:
    """What a run's ``run.yaml`` changes in the base trainer config, as flat keys in order."""
    own = owned_keys(spec, run)
    return {k: v for k, v in sorted(trainer_config.flatten(run_doc).items()) if k not in own}


def show(value: Any) -> str:
    """A value as reviewers read it in commit messages and diffs (JSON is also YAML)."""
    return json.dumps(value, default=str, ensure_ascii=False)
