"""The generated trainer config composes in the real verl config tree of the pinned release."""
from __future__ import annotations

import pytest
from rlgen.tools.yamlio import load
from support.verl_config import (
    VERL_LINE,
    compose_run,
    mounted_configs,
    unknown_keys,
    verl_defaults,
    verl_root,
)


def test_installed_verl_is_the_pinned_line():
    from importlib.metadata import version

    assert version("verl").startswith(VERL_LINE)


@pytest.mark.parametrize("args", [()], ids=["defaults"])
def test_run_config_composes_with_zero_rejected_keys(generate, tmp_path, args):
    repo = generate(*args)
    configs, overrides = mounted_configs(repo, "baseline", tmp_path)
    cfg = compose_run(configs, overrides)
    reference = verl_defaults()
    for name in ("trainer.yaml", "run.yaml"):
        assert unknown_keys(load((configs / name).read_text()), reference) == [], name
    # What the run will actually train with.
    assert cfg.actor_rollout_ref.rollout.name == "vllm"
    assert cfg.algorithm.adv_estimator == "grpo"
    assert cfg.trainer.experiment_name == "baseline"
    assert cfg.trainer.default_local_dir == "/var/checkpoints/baseline"
    assert cfg.actor_rollout_ref.model.path == "/var/models/Qwen2.5-3B-Instruct"
    assert cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path == "/var/configs/tool_config.yaml"
    assert list(cfg.trainer.logger) == ["console"]


def test_verl_batch_rules_hold(generate, tmp_path):
    configs, overrides = mounted_configs(generate(), "baseline", tmp_path)
    cfg = compose_run(configs, overrides)
    gpus = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes
    assert (cfg.data.train_batch_size * cfg.actor_rollout_ref.rollout.n) % gpus == 0
    assert cfg.data.train_batch_size >= cfg.actor_rollout_ref.actor.ppo_mini_batch_size
    assert cfg.trainer.n_gpus_per_node % cfg.actor_rollout_ref.rollout.tensor_model_parallel_size == 0


def test_tool_classes_exist_in_the_pinned_verl(generate):
    tools = load((generate() / "base" / "training" / "tool_config.yaml").read_text())["tools"]
    for tool in tools:
        module, _, cls = tool["class_name"].rpartition(".")
        source = verl_root() / (module.replace(".", "/") + ".py")
        assert f"class {cls}" in source.read_text(), tool["class_name"]


def test_an_unknown_key_is_rejected(generate, tmp_path):
    configs, _ = mounted_configs(generate(), "baseline", tmp_path)
    with pytest.raises(Exception, match="trainer.no_such_key"):
        compose_run(configs, ["trainer.no_such_key=1"])
    assert unknown_keys({"trainer": {"no_such_key": 1}}, verl_defaults()) == ["trainer.no_such_key"]
