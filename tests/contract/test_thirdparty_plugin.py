"""A plugin from another distribution: installed with pip, found through the ``rlgen``
entry-point group, listed with its version and usable by ``rlgen new``."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.plugins import install_example_plugin
from support.repos import REQUIRED, build, kustomize_roots, run_rlgen, schema_dir


@pytest.fixture(scope="session")
def plugin_env(tmp_path_factory):
    """The environment of an rlgen that has the example distribution installed (pip, isolated
    build, a folder of its own on PYTHONPATH)."""
    return install_example_plugin(tmp_path_factory.mktemp("thirdparty"))


def test_listed_with_its_distribution_version(plugin_env):
    result = run_rlgen("plugins", "--output", "json", env=plugin_env)
    assert result.returncode == 0, result.stderr
    rows = {p["name"]: p for p in json.loads(result.stdout)["plugins"]}
    assert rows["example-math"]["version"] == "0.3.1"
    assert rows["example-math"]["slot"] == "dataset"
    assert rows["example-math"]["default"] is False
    assert rows["gsm8k"]["default"] is True


def test_not_installed_without_the_distribution():
    result = run_rlgen("plugins", "--output", "json")
    assert "example-math" not in {p["name"] for p in json.loads(result.stdout)["plugins"]}


def test_new_uses_it(tmp_path, plugin_env):
    target = tmp_path / "repo"
    result = run_rlgen("new", str(target), *REQUIRED, "--plugin", "example-math", "--no-input", env=plugin_env)
    assert result.returncode == 0, result.stderr
    trainer = (target / "base" / "training" / "trainer.yaml").read_text()
    assert "train_files: /var/datasets/example-math/train.parquet" in trainer
    assert "## Dataset: MATH (example-math plugin)" in (target / "README.md").read_text()
    assert "dataset: example-math" in (target / "rlgen.yaml").read_text()
    for root in kustomize_roots(target):
        build(root)
    jobs = [o for o in build(target / "overlays" / "production" / "platform") if o["kind"] == "Job"]
    env = {e["name"]: e.get("value") for e in jobs[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DATASET"] == "example-math"
    assert env["DATASET_SOURCE"] == "DigitalLearningGmbH/MATH-lighteval"


def test_its_rows_carry_the_last_boxed_answer(plugin_env):
    code = ("import json, rlgen_example_math as m; "
            "print(json.dumps(m.map_row({'problem': 'p', 'solution': 'a \\\\boxed{1} b \\\\boxed{\\\\frac{1}{2}}'}, "
            "'train', 3)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=plugin_env)
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["reward_model"] == {"style": "rule", "ground_truth": "\\frac{1}{2}"}
    assert row["data_source"] == "DigitalLearningGmbH/MATH-lighteval"
    assert row["extra_info"] == {"split": "train", "index": 3}


def test_agent_loop_comes_from_the_trainer_config_when_rows_name_none(tmp_path, plugin_env):
    """Its rows carry no agent_name: only its default_agent_loop makes rollouts call the tools."""
    target = tmp_path / "repo"
    assert run_rlgen("new", str(target), *REQUIRED, "--plugin", "example-math", "--no-input", env=plugin_env).returncode == 0
    assert agent_problems(target, plugin_env) == []
    trainer = target / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("default_agent_loop: tool_agent", "default_agent_loop: single_turn_agent"))
    (problem,) = agent_problems(target, plugin_env)
    assert problem["obj"].startswith("ConfigMap/rl-training/")
    assert "example-math rows run 'single_turn_agent' (agent.default_agent_loop), which never calls a tool" in problem["message"]


def agent_problems(repo, env):
    result = run_rlgen("validate", str(repo), "--output", "json", env={**env, "RLGEN_SCHEMA_DIR": str(schema_dir())})
    return [p for p in json.loads(result.stdout)["problems"] if "agent" in p["message"]]
