"""Rollout plugin: vLLM async rollout and the matching verl training image."""
from __future__ import annotations

from rlgen.contributions import Option, PluginInfo
from rlgen.hookspecs import hookimpl
from rlgen_plugins import training_image

NAME = "vllm"


def _positive(value) -> str | None:
    return None if value > 0 else "must be > 0"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="rollout",
        summary="vLLM async rollout (verl's verlai/verl vLLM image)",
        options=(
            Option("tensor_parallel_size", "GPUs per rollout replica (must divide GPUs per node)", 2, int,
                   check=_positive),
            Option("gpu_memory_utilization", "Share of GPU memory for vLLM's weights and KV cache", 0.5, float,
                   check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]"),
        ),
    )


@hookimpl
def rlgen_check(ctx):
    return training_image.check(ctx, NAME, "vllm", ctx.options(NAME)["tensor_parallel_size"])


@hookimpl
def rlgen_trainer_config(ctx):
    o = ctx.options(NAME)
    return {"actor_rollout_ref": {"rollout": {
        "name": "vllm",
        "tensor_model_parallel_size": o["tensor_parallel_size"],
        "gpu_memory_utilization": o["gpu_memory_utilization"],
    }}}


@hookimpl
def rlgen_images(ctx):
    return training_image.images(ctx, "vllm")


@hookimpl
def rlgen_files(ctx):
    return training_image.dockerfile(ctx, "vllm")
