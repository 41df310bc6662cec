"""What both rollout plugins share: their options, their rollout section, and verl's
dependency image for each engine (the generator builds the training image on it; the
repository's verl release, ``verl_release(ctx.spec)``, names the image verl documents for it)."""
from __future__ import annotations

from rlgen.plugin_api import Option, Problem, TrainingImage, int_range, verl_release


def rollout_options(memory_help: str) -> tuple[Option, ...]:
    """The options both engines share: how many GPUs a replica spans and its memory share."""
    return (
        Option("tensor_parallel_size", "GPUs per rollout replica (must divide GPUs per node)", 2, int,
               check=int_range(1, 1024)),
        Option("gpu_memory_utilization", memory_help, 0.5, float,
               check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]"),
    )


def rollout_config(engine: str, options: dict) -> dict:
    """The trainer's rollout section for ``engine`` (verl's key names for both engines)."""
    return {
        "name": engine,
        "tensor_model_parallel_size": options["tensor_parallel_size"],
        "gpu_memory_utilization": options["gpu_memory_utilization"],
    }


def check(ctx, plugin: str, engine: str, tensor_parallel: int) -> list[Problem]:
    problems = []
    if ctx.spec.gpus_per_node % tensor_parallel:
        problems.append(Problem(f"tensor parallel size {tensor_parallel} does not divide "
                                f"{ctx.spec.gpus_per_node} GPUs per node", (plugin, "rlgen")))
    return problems


def training_image(ctx, engine: str) -> TrainingImage:
    release = verl_release(ctx.spec)
    return TrainingImage(release.base_image(engine), f"{release.version}-{engine}")
