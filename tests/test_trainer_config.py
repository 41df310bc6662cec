"""The generated trainer config composes in the real verl config tree of the pinned release."""
from __future__ import annotations

import importlib.util
import os
import shlex
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import build
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from rlgen.trainer_config import flatten
from rlgen.yamlio import load

VERL_LINE = "0.7."


def verl_root() -> Path:
    """The folder holding the installed ``verl`` package, found without importing it (its
    ``__init__`` needs ray and torch, which a config check does not)."""
    spec = importlib.util.find_spec("verl")
    assert spec and spec.submodule_search_locations, "verl is not installed (pip install --no-deps verl)"
    return Path(list(spec.submodule_search_locations)[0]).parent


def test_installed_verl_is_the_pinned_line():
    from importlib.metadata import version

    assert version("verl").startswith(VERL_LINE)


@contextmanager
def in_dir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def mounted_configs(repo: Path, run: str, dest: Path) -> tuple[Path, list[str]]:
    """Write the run's ConfigMap as the pod sees it; return the dir and entrypoint overrides."""
    objects = build(repo / "runs" / run)
    configmap = next(o for o in objects if o["kind"] == "ConfigMap")
    for key, text in configmap["data"].items():
        (dest / key).write_text(text)
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    argv = shlex.split(rayjob["spec"]["entrypoint"])
    assert argv[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    options = dict(a.split("=", 1) for a in argv[3:] if a.startswith("--"))
    assert options["--config-path"] == "/var/configs" and options["--config-name"] == "run"
    return dest, [a for a in argv[3:] if not a.startswith("--")]


def compose_run(configs: Path, overrides: list[str]):
    # hydra.searchpath is relative to the RayJob's working_dir, the folder holding verl/.
    with in_dir(verl_root()), initialize_config_dir(config_dir=str(configs), version_base=None):
        return compose(config_name="run", overrides=overrides)


def verl_defaults():
    with initialize_config_dir(config_dir=str(verl_root() / "verl" / "trainer" / "config"), version_base=None):
        return OmegaConf.to_container(compose(config_name="ppo_trainer"))


def unknown_keys(config: dict, reference: dict) -> list[str]:
    missing = []
    for key in flatten({k: v for k, v in config.items() if k not in ("hydra", "defaults")}):
        node = reference
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                missing.append(key)
                break
            node = node[part]
    return missing


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
