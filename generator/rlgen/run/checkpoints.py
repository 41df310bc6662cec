"""Where a run's checkpoints go, what a RayJob resumes from, and what a save costs.

A run's ``run.yaml`` names its checkpoint root (``trainer.default_local_dir``): the run's
folder of the checkpoints volume and, for a run made by ``rlgen run new`` or ``sweep``, the
commit it was made on (:func:`root`), so a run removed and made again under the same name gets a
root of its own. Each RayJob writes below it, in a folder named as the RayJob: the RayJob's name
is a hash of the run's files (root included), and the folder is set after the name, on the
pods' environment (:func:`env_ops`), so nothing is hashed twice. ``base/training/resume.py``
hands verl that folder; verl's ``resume_mode: auto`` resumes a retry of the same RayJob from
it, and any RayJob of a new name starts from step 0.

``--resume-from RUN`` (``rlgen run new`` and ``set``) continues from another RayJob's folder:
``trainer.resume_from_path`` in run.yaml, read by resume.py while the new RayJob has saved
nothing. verl loads FSDP shards one file per rank and never reshards
(``model_world_size_{W}_rank_{r}.pt``), so :func:`resume_problems` refuses a source of another
world size, model, training engine or LoRA rank before anything is written.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from rlgen.spec import Spec

#: The start script of every RayJob (``base/training/``, in the trainer ConfigMap), and the
#: environment variable it reads the RayJob's name from.
SCRIPT, ENV = "resume.py", "RLGEN_RAYJOB"
#: The run.yaml key of a --resume-from source: the folder of the RayJob it continues from.
SOURCE_KEY = "trainer.resume_from_path"
#: Characters of the commit a run is made on that name its root.
INSTANCE_LENGTH = 10
#: Bytes per parameter each item of ``save_contents`` writes per save (verl's FSDP checkpoint
#: manager): the actor's sharded fp32 weights, Adam's two fp32 moments, the LR scheduler and
#: RNG (a few kB), and a bf16 Hugging Face copy.
BYTES_PER_PARAMETER = {"model": 4, "optimizer": 8, "extra": 0, "hf_model": 2}
SAVE_CONTENTS = "actor_rollout_ref.actor.checkpoint.save_contents"
#: What must match for verl to load another RayJob's checkpoint, and why.
MUST_MATCH = {
    "world size": "verl saves one shard file per rank (model_world_size_{W}_rank_{r}.pt) and does not reshard",
    "actor_rollout_ref.model.path": "the weights are the model's",
    "actor_rollout_ref.actor.strategy": "each training engine saves its own format",
    "actor_rollout_ref.model.lora_rank": "a LoRA run saves other parameters",
}
_BILLIONS = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)[Bb](?![a-zA-Z])")


def root(spec: Spec, run: str, instance: str | None = None) -> str:
    """A run's checkpoint root: its folder of the checkpoints volume, and below it the commit
    ``instance`` it was made on (none for the first run ``rlgen new`` writes)."""
    folder = PurePosixPath(spec.checkpoint_dir(run))
    return str(folder / instance if instance else folder)


def rayjob_folder(run_doc: dict, rayjob: str | None) -> str | None:
    """The folder a run's RayJob saves to and resumes from."""
    base = ((run_doc or {}).get("trainer") or {}).get("default_local_dir")
    return f"{str(base).rstrip('/')}/{rayjob}" if base and rayjob else None


def env_ops(rayjob: str, templates: tuple[str, ...]) -> list[dict]:
    """JSON patch operations that tell resume.py, on the head, its RayJob's name; each pod
    template (head and GPU workers) gets it, so every pod of the Ray cluster sees one environment."""
    return [{"op": "add", "path": f"{template}/spec/containers/0/env/-", "value": {"name": ENV, "value": rayjob}}
            for template in templates]


def claim(rayjob: dict) -> str | None:
    """The claim a RayJob mounts its checkpoints volume from: another claim, another volume."""
    pod = ((((rayjob.get("spec") or {}).get("rayClusterSpec") or {}).get("headGroupSpec") or {})
           .get("template") or {}).get("spec") or {}
    return next(((v.get("persistentVolumeClaim") or {}).get("claimName") for v in pod.get("volumes") or []
                 if v.get("name") == "checkpoints"), None)


def restarts(runs: list[str], new_volume: bool) -> str:
    """One line: the runs a change gives new RayJobs, which start from step 0, and why."""
    if not runs:
        return ""
    why = "new RayJobs, so new checkpoint folders" + (
        ", on a new checkpoints volume (the old one and its data are kept)" if new_volume else "")
    return f"Restart from step 0: {', '.join(runs)} ({why})."


def _world(config: dict) -> int:
    trainer = config.get("trainer") or {}
    return int(trainer.get("nnodes", 1)) * int(trainer.get("n_gpus_per_node", 1))


def _get(config: dict, key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def resume_problems(source: dict, target: dict) -> list[str]:
    """Why a RayJob of the effective config ``target`` cannot load one saved under ``source``."""
    found = []
    for key, why in MUST_MATCH.items():
        old, new = (_world(source), _world(target)) if key == "world size" else (_get(source, key), _get(target, key))
        if old != new:
            found.append(f"{key} is {new} here, {old} in the source ({why})")
    saved = set(_get(source, SAVE_CONTENTS) or ())
    missing = [item for item in ("model", "optimizer", "extra") if item not in saved]
    if missing:
        found.append(f"the source saves no {', '.join(missing)} ({SAVE_CONTENTS}): a resume would start them anew")
    return found


def parameters(config: dict) -> float | None:
    """The model's parameters, from the size its folder name says (``Qwen2.5-3B-Instruct``: 3e9)."""
    match = _BILLIONS.search(PurePosixPath(str(_get(config, "actor_rollout_ref.model.path") or "")).name)
    return float(match[1]) * 1e9 if match else None


def save_bytes(config: dict) -> int | None:
    """What one save of the run writes, when its model's size is known."""
    count = parameters(config)
    contents = _get(config, SAVE_CONTENTS) or ()
    if count is None:
        return None
    return int(count * sum(BYTES_PER_PARAMETER.get(str(item), 0) for item in contents))


def per_parameter(config: dict) -> int:
    return sum(BYTES_PER_PARAMETER.get(str(item), 0) for item in _get(config, SAVE_CONTENTS) or ())


def show_size(size: int | None, config: dict) -> str:
    """``42 GB`` per save, or bytes per parameter when the model's size is unknown."""
    return f"{size / 1e9:.0f} GB" if size is not None else f"{per_parameter(config)} B/param"
