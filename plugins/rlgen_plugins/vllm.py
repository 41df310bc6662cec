"""Rollout plugin: vLLM async rollout and the matching verl training image."""
from __future__ import annotations

from rlgen.plugin_api import PluginInfo, hookimpl

from rlgen_plugins import _rollout_common

NAME = "vllm"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="rollout",
        summary="vLLM async rollout (verl's verlai/verl vLLM image)",
        options=_rollout_common.rollout_options("Share of GPU memory for vLLM's weights and KV cache"),
    )


@hookimpl
def rlgen_check(ctx):
    return _rollout_common.check(ctx, NAME, "vllm", ctx.options(NAME)["tensor_parallel_size"])


@hookimpl
def rlgen_trainer_config(ctx):
    return {"actor_rollout_ref": {"rollout": _rollout_common.rollout_config("vllm", ctx.options(NAME))}}


@hookimpl
def rlgen_training_image(ctx):
    return _rollout_common.training_image(ctx, "vllm")
