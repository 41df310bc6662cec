"""The verl releases rlgen targets (answer ``rlgen.verl``). One module per release holds
everything that differs between them, read from that release's source (``docs/upstream.md``):
its config keys, its batch rules, its dependency images, its agent loops and tool format. The
rest of rlgen asks :func:`get` and never compares versions itself."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Mapping

from rlgen.errors import RlgenError

#: Release -> its module in this package; the last is the default of new repositories.
MODULES = {"0.7.1": "v0_7_1", "0.9.1": "v0_9_1"}
SUPPORTED = tuple(MODULES)
DEFAULT = SUPPORTED[-1]
#: What a repository means that records no ``rlgen.verl``: rlgen rendered only verl 0.7.1 then.
LEGACY = "0.7.1"
#: The answer's name before it was ``rlgen.verl``.
LEGACY_ANSWER = "verl_version"
#: Label of the trainer ConfigMap naming its release, so checks of rendered objects apply
#: that release's rules.
LABEL = "rlgen.io/verl"


@dataclass(frozen=True)
class Release:
    version: str
    #: Every key of the release's ``ppo_trainer`` config with its default (a generated module).
    defaults: Mapping[str, Any]
    #: verl's dependency image per rollout engine (Docker Hub ``verlai/verl`` tags).
    base_images: Mapping[str, str]
    #: How the actor's mini batch is split over the GPUs, which decides the per-GPU batch rules:
    #: "fsdp_workers" (0.7's worker normalizes it by rollout.n and data parallel size and
    #: needs a whole number of micro batches) or "engine_workers" (0.9's engine splits
    #: mini_batch_size x rollout.n evenly over the data-parallel ranks).
    mini_batch_split: str
    #: Agent loops the release registers in-tree, and the one that calls tools.
    agent_loops: tuple[str, ...] = ("single_turn_agent", "tool_agent")
    tool_agent: str = "tool_agent"
    #: The ``config.type`` of a ``BaseTool`` entry in the tool config, and every type the
    #: release's tool registry loads.
    tool_type: str = "native"
    tool_types: tuple[str, ...] = ("native",)
    #: The module the RayJob runs (``python3 -m``).
    entrypoint: str = "verl.trainer.main_ppo"
    #: Requirements of the release's wheel (``Requires-Dist``, exactly as declared) that its
    #: dependency images do not meet: the training image installs them beside verl.
    image_requirements: tuple[str, ...] = ()
    #: Modules the training image imports at build time besides the entry point: what the
    #: trainer loads only once it runs, so a broken image fails its build instead of the job.
    trainer_modules: tuple[str, ...] = ()

    def base_image(self, engine: str) -> str:
        return f"verlai/verl:{self.base_images[engine]}"


def get(version: str) -> Release:
    """The release ``version``; one line naming the supported ones otherwise."""
    if version not in MODULES:
        raise RlgenError(f"rlgen does not know verl {version}: use one of {', '.join(SUPPORTED)}")
    return import_module(f"{__name__}.{MODULES[version]}").RELEASE


def of_object(obj: dict) -> Release:
    """The release a rendered trainer ConfigMap targets (:data:`LABEL`; none: :data:`LEGACY`)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return get(str(labels.get(LABEL) or LEGACY))


def version_error(value: str) -> str | None:
    """The check of the answer ``rlgen.verl``."""
    return None if value in MODULES else f"verl {value} is not supported (use one of {', '.join(SUPPORTED)})"
