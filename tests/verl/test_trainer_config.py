"""The generated trainer config composes in the real verl config tree of the repository's
release, for each release rlgen supports, both rollout engines, one node and several."""
from __future__ import annotations

import pytest
from rlgen.tools.yamlio import load
from rlgen.verl import batch_rules, releases
from support.repos import build
from support.verl_config import compose_run, mounted_configs, unknown_keys, verl_defaults

#: (release answer or None for the default, rollout plugin, nodes)
CASES = [(v, engine, nodes) for v in (None, "0.7.1") for engine in ("vllm", "sglang") for nodes in (1, 4)]


def _args(version, engine, nodes):
    args = ("--plugin", engine, "--set", f"rlgen.nnodes={nodes}")
    return args + (("--set", f"rlgen.verl={version}") if version else ())


def test_new_repositories_default_to_the_current_line(generate):
    assert releases.DEFAULT.startswith("0.9.")
    assert load((generate() / "rlgen.yaml").read_text())["options"]["rlgen"]["verl"] == releases.DEFAULT


@pytest.mark.parametrize("version,engine,nodes", CASES, ids=lambda v: str(v or releases.DEFAULT))
def test_run_config_composes_with_zero_rejected_keys(generate, tmp_path, version, engine, nodes):
    version_ = version or releases.DEFAULT
    repo = generate(*_args(version, engine, nodes))
    configs, overrides = mounted_configs(repo, "baseline", tmp_path)
    cfg = compose_run(configs, overrides, version_)
    reference = verl_defaults(version_)
    for name in ("trainer.yaml", "run.yaml"):
        assert unknown_keys(load((configs / name).read_text()), reference) == [], name
    # What the run will actually train with.
    assert cfg.actor_rollout_ref.rollout.name == engine
    assert cfg.trainer.nnodes == nodes
    assert cfg.algorithm.adv_estimator == "grpo"
    assert cfg.trainer.experiment_name == "baseline"
    assert cfg.actor_rollout_ref.model.path == "/var/models/Qwen2.5-3B-Instruct"
    assert cfg.actor_rollout_ref.rollout.multi_turn.tool_config_path == "/var/configs/tool_config.yaml"
    # The release's own batch rules hold for the composed config (all of verl's defaults in it).
    assert batch_rules.problems(_plain(cfg), releases.get(version_)) == []
    # rlgen validate reads the release off the run's rendered ConfigMap.
    (configmap,) = [o for o in build(repo / "runs" / "baseline") if o["kind"] == "ConfigMap"]
    assert releases.of_object(configmap).version == version_
    # The image is the one verl documents for this release and engine.
    dockerfile = (repo / "images" / "training" / "Dockerfile").read_text()
    assert f"FROM {releases.get(version_).base_image(engine)}\n" in dockerfile
    assert f"ARG VERL_VERSION={version_}\n" in dockerfile


def _plain(cfg) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def test_the_releases_split_mini_batches_differently():
    """0.9's engine splits mini_batch x n over the data-parallel ranks; 0.7's worker divides the
    normalized per-GPU batch into micro batches: each config passes one release, not the other."""
    config = {"trainer": {"nnodes": 1, "n_gpus_per_node": 8},
              "algorithm": {"adv_estimator": "grpo"}, "data": {"train_batch_size": 64},
              "actor_rollout_ref": {"actor": {"ppo_mini_batch_size": 4, "ppo_micro_batch_size_per_gpu": 2},
                                    "rollout": {"n": 6, "log_prob_micro_batch_size_per_gpu": 1,
                                                "tensor_model_parallel_size": 2},
                                    "ref": {"log_prob_micro_batch_size_per_gpu": 1}}}
    # 4 x 6 = 24 samples: 3 per GPU, no whole number of micro batches of 3 for 0.7's worker;
    # 0.9's engine splits 24 evenly over 8 ranks and micro-batches what each holds.
    assert any("per GPU is not a multiple" in p for p in batch_rules.problems(config, releases.get("0.7.1")))
    assert batch_rules.problems(config, releases.get("0.9.1")) == []
    # 5 x 6 = 30 samples: 0.7 normalizes to 3 per GPU (micro batch 1 fits); 0.9 cannot split 30 over 8.
    config["actor_rollout_ref"]["actor"].update(ppo_mini_batch_size=5, ppo_micro_batch_size_per_gpu=1)
    assert batch_rules.problems(config, releases.get("0.7.1")) == []
    assert any("data-parallel ranks" in p for p in batch_rules.problems(config, releases.get("0.9.1")))


def test_tool_classes_are_rlgen_tools_shipped_in_the_image(generate):
    repo = generate()
    tools = load((repo / "base" / "training" / "tool_config.yaml").read_text())["tools"]
    for tool in tools:
        module, _, cls = tool["class_name"].rpartition(".")
        source = repo / "images" / "training" / (module.replace(".", "/") + ".py")
        assert f"class {cls}(" in source.read_text(), tool["class_name"]
        assert tool["config"]["type"] == "native"


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_an_unknown_key_is_rejected(generate, tmp_path, version):
    configs, _ = mounted_configs(generate("--set", f"rlgen.verl={version}"), "baseline", tmp_path)
    with pytest.raises(Exception, match="trainer.no_such_key"):
        compose_run(configs, ["trainer.no_such_key=1"], version)
    assert unknown_keys({"trainer": {"no_such_key": 1}}, verl_defaults(version)) == ["trainer.no_such_key"]


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_shipped_keys_are_those_of_the_installed_release(version):
    """generator/rlgen/verl/releases/keys_*.py regenerate byte for byte from each config tree."""
    import importlib.util

    from support.verl_config import CHECKOUT, verl_root

    spec = importlib.util.spec_from_file_location("make_verl_reference", CHECKOUT / "scripts" / "make_verl_reference.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    root = verl_root(version)
    assert script.verl_version(root) == version
    assert script.module_text(root) == script.target(version).read_text(), \
        f"keys of verl {version} are stale: run scripts/make_verl_reference.py .verl/{version}"
