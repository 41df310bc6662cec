"""Rollout plugin: SGLang async rollout and the matching verl training image."""
from __future__ import annotations

from rlgen.plugin_api import Option, PluginInfo, hookimpl

from rlgen_plugins import _rollout_common

NAME = "sglang"
#: Leave the kernels to verl, which picks them per release and SGLang version (fa3 with verl
#: 0.7.1's image; flashinfer from SGLang 0.5.12 on, as in verl 0.9's image, where FA3 CUDA-graph
#: capture is broken): async_sglang_server.py of each release.
VERL_ATTENTION_BACKEND = "auto"


@hookimpl
def rlgen_plugin():
    return PluginInfo(
        name=NAME,
        slot="rollout",
        summary="SGLang async rollout (verl's verlai/verl SGLang image)",
        options=_rollout_common.rollout_options(
            "Share of GPU memory SGLang reserves for weights and KV cache (its mem_fraction_static)") + (
            Option("attention_backend", "SGLang attention kernels: auto (verl's choice for its release and "
                   "SGLang), or fa3, flashinfer, triton", VERL_ATTENTION_BACKEND,
                   choices=(VERL_ATTENTION_BACKEND, "fa3", "flashinfer", "triton")),
        ),
    )


@hookimpl
def rlgen_check(ctx):
    return _rollout_common.check(ctx, NAME, "sglang", ctx.options(NAME)["tensor_parallel_size"])


@hookimpl
def rlgen_trainer_config(ctx):
    o = ctx.options(NAME)
    rollout = _rollout_common.rollout_config("sglang", o)
    # engine_kwargs.sglang goes straight to SGLang's server arguments: only what differs from verl.
    if o["attention_backend"] != VERL_ATTENTION_BACKEND:
        rollout["engine_kwargs"] = {"sglang": {"attention_backend": o["attention_backend"]}}
    return {"actor_rollout_ref": {"rollout": rollout}}


@hookimpl
def rlgen_training_image(ctx):
    return _rollout_common.training_image(ctx, "sglang")
