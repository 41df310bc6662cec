"""verl's batch-size rules for a world of ``trainer.nnodes x trainer.n_gpus_per_node`` GPUs.

verl checks these when the job starts: ``verl/utils/config.py`` ``validate_config`` on the
driver, then ``verl/workers/fsdp_workers.py`` and ``verl/workers/rollout/replica.py`` on the
GPU workers, i.e. after every GPU of the run is allocated. Checking them here lets
``rlgen run`` refuse a run and ``rlgen validate`` report one before it holds any GPU.
Read from each supported release (FSDP strategies; ``docs/upstream.md`` lists the places);
what differs between releases is the release's :attr:`Release.mini_batch_split`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlgen.verl import releases
from rlgen.verl.releases import Release

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"
REF = "actor_rollout_ref.ref"


@dataclass(frozen=True)
class Size:
    """How many GPU nodes a run spans and the GPUs of each: verl's world size."""

    nnodes: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.nnodes * self.gpus_per_node

    def __str__(self) -> str:
        return f"{self.nnodes} x {self.gpus_per_node}"


class _Config:
    """A composed trainer config with verl's defaults for the keys it does not set."""

    def __init__(self, config: dict, release: Release):
        self.config = config
        self.release = release

    def __call__(self, key: str) -> Any:
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return self.release.defaults.get(key)
            node = node[part]
        return node

    def set(self, key: str) -> bool:
        return self(key) is not None


def size(config: dict) -> Size:
    # The world-size keys and their defaults are the same in every release.
    get = _Config(config, _any_release())
    return Size(int(get("trainer.nnodes") or 0), int(get("trainer.n_gpus_per_node") or 0))


def _any_release() -> Release:
    return releases.get(releases.DEFAULT)


def problems(config: dict, release: Release) -> list[str]:
    """Every rule of ``release`` that ``config`` breaks, one line each, naming the keys and the numbers."""
    get = _Config(config, release)
    world = size(config)
    if world.gpus <= 0:
        return [f"trainer.nnodes x trainer.n_gpus_per_node = {world} must be at least 1 GPU"]
    out = _train_batch(get, world) + _mini_batch(get, world, ACTOR, "actor")
    out += _micro_settings(get) + _rollout_world(get, world) + _sequence_parallel(get, world)
    if _uses_critic(get):
        out += _mini_batch(get, world, "critic", "critic")
    return out


def _dynamic(get: _Config, section: str) -> bool:
    # critic.use_dynamic_bsz follows the actor's unless set (verl's critic config).
    own = get(f"{section}.use_dynamic_bsz")
    return bool(get(f"{ACTOR}.use_dynamic_bsz") if own is None else own)


def _train_batch(get: _Config, world: Size) -> list[str]:
    if _dynamic(get, ACTOR):
        return []
    batch, n = get("data.train_batch_size"), get(f"{ROLLOUT}.n")
    if (batch * n) % world.gpus:
        return [f"data.train_batch_size x {ROLLOUT}.n = {batch} x {n} = {batch * n} is not divisible by "
                f"{world.gpus} GPUs (trainer.nnodes x trainer.n_gpus_per_node = {world}); "
                "verl validate_config: real_train_batch_size must be divisible by the world size"]
    return []


def _mini_batch(get: _Config, world: Size, section: str, role: str) -> list[str]:
    """The mini batch of ``section`` (actor or critic), as each GPU worker normalizes it."""
    out = []
    batch, n = get("data.train_batch_size"), get(f"{ROLLOUT}.n")
    mini = get(f"{section}.ppo_mini_batch_size")
    if mini is None:
        mini = get(f"{ACTOR}.ppo_mini_batch_size")
    if not _dynamic(get, section) and batch < mini:
        out.append(f"data.train_batch_size {batch} is smaller than {section}.ppo_mini_batch_size {mini} "
                   f"(verl {role} config: train_batch_size must be >= ppo_mini_batch_size)")
    sp = get(f"{section}.ulysses_sequence_parallel_size") or 1
    out += _deprecated_micro(get, world, section, role, mini, sp)
    data_parallel = max(world.gpus // sp, 1)
    if get.release.mini_batch_split == "engine_workers":
        return out + _engine_split(get, world, section, mini, n, sp, data_parallel)
    normalized = mini * n // data_parallel
    if normalized <= 0:
        out.append(f"{section}.ppo_mini_batch_size x {ROLLOUT}.n / (GPUs / ulysses_sequence_parallel_size) = "
                   f"{mini} x {n} / ({world.gpus} / {sp}) is 0 per GPU (verl {role} worker: "
                   "ppo_mini_batch_size should be larger than 0 after normalization)")
        return out
    micro = get(f"{section}.ppo_micro_batch_size_per_gpu")
    if micro and (normalized % micro or normalized < micro):
        out.append(f"{section}.ppo_mini_batch_size x {ROLLOUT}.n / (GPUs / ulysses_sequence_parallel_size) = "
                   f"{mini} x {n} / ({world.gpus} / {sp}) = {normalized} per GPU is not a multiple of "
                   f"{section}.ppo_micro_batch_size_per_gpu {micro} (verl {role} worker normalization)")
    return out


def _engine_split(get: _Config, world: Size, section: str, mini: int, n: int, sp: int, data_parallel: int) -> list[str]:
    # verl >= 0.8 engine workers (train_mini_batch): mini_batch_size x rollout.n over the DP ranks,
    # dynamic batch size or not; micro batches then come from whatever each rank holds.
    if (mini * n) % data_parallel:
        return [f"{section}.ppo_mini_batch_size x {ROLLOUT}.n = {mini} x {n} = {mini * n} is not divisible by "
                f"the {data_parallel} data-parallel ranks (GPUs / ulysses_sequence_parallel_size = "
                f"{world.gpus} / {sp}; verl engine worker train_mini_batch)"]
    return []


def _deprecated_micro(get: _Config, world: Size, section: str, role: str, mini: int, sp: int) -> list[str]:
    micro = get(f"{section}.ppo_micro_batch_size")
    if micro is None or _dynamic(get, section):
        return []
    out = []
    if mini % micro:
        out.append(f"{section}.ppo_mini_batch_size {mini} is not divisible by {section}.ppo_micro_batch_size {micro} "
                   f"(verl {role} config)")
    if micro * sp < world.gpus:
        out.append(f"{section}.ppo_micro_batch_size x ulysses_sequence_parallel_size = {micro} x {sp} is smaller "
                   f"than the {world.gpus} GPUs (verl {role} config: ppo_micro_batch_size * "
                   "ulysses_sequence_parallel_size must be >= n_gpus)")
    return out


def _micro_settings(get: _Config) -> list[str]:
    """Exactly one of the deprecated global micro batch and its per-GPU form, per role."""
    pairs = [(ACTOR, "ppo_micro_batch_size", ACTOR), (ROLLOUT, "log_prob_micro_batch_size", ACTOR)]
    if get("algorithm.use_kl_in_reward") or get(f"{ACTOR}.use_kl_loss"):
        pairs.append((REF, "log_prob_micro_batch_size", ACTOR))
    if _uses_critic(get):
        pairs.append(("critic", "ppo_micro_batch_size", "critic"))
    out = []
    for section, key, dynamic_from in pairs:
        if _dynamic(get, dynamic_from):
            continue
        both = get.set(f"{section}.{key}"), get.set(f"{section}.{key}_per_gpu")
        if both == (False, False):
            out.append(f"set {section}.{key}_per_gpu (neither it nor {section}.{key} is set; "
                       "verl needs one unless use_dynamic_bsz)")
        elif all(both):
            out.append(f"{section}.{key} and {section}.{key}_per_gpu are both set: remove the deprecated "
                       f"{section}.{key} (verl refuses both)")
    return out


def _rollout_world(get: _Config, world: Size) -> list[str]:
    parts = [get(f"{ROLLOUT}.{k}") or 1 for k in
             ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")]
    replica = parts[0] * parts[1] * parts[2]
    shown = (f"{ROLLOUT}.tensor_model_parallel_size x data_parallel_size x pipeline_model_parallel_size = "
             f"{parts[0]} x {parts[1]} x {parts[2]} = {replica} GPUs")
    if world.gpus % replica:
        return [f"a rollout replica of {shown} does not divide the {world.gpus} GPUs of trainer.nnodes x "
                f"trainer.n_gpus_per_node = {world} (verl worker: rollout world_size is not divisible by "
                "infer_world_size)"]
    # A replica larger than a node spans whole nodes.
    if replica % min(world.gpus_per_node, replica):
        return [f"a rollout replica of {shown} spans nodes but is no multiple of trainer.n_gpus_per_node "
                f"{world.gpus_per_node} (verl rollout replica: world_size must be divisible by gpus_per_node)"]
    return []


def _sequence_parallel(get: _Config, world: Size) -> list[str]:
    sp = get(f"{ACTOR}.ulysses_sequence_parallel_size") or 1
    if sp <= 1:
        return []
    out = []
    if world.gpus % sp:
        out.append(f"{ACTOR}.ulysses_sequence_parallel_size {sp} does not divide the {world.gpus} GPUs "
                   f"(trainer.nnodes x trainer.n_gpus_per_node = {world})")
    if not get("actor_rollout_ref.model.use_remove_padding"):
        out.append(f"{ACTOR}.ulysses_sequence_parallel_size {sp} needs "
                   "actor_rollout_ref.model.use_remove_padding: true (verl FSDP actor config)")
    return out


def _uses_critic(get: _Config) -> bool:
    # verl's need_critic: critic.enable when set, else only GAE trains a critic.
    enable = get("critic.enable")
    return bool(enable) if enable is not None else get("algorithm.adv_estimator") == "gae"
