"""A plugin from another distribution: installed with pip, found through the ``rlgen``
entry-point group, listed with its version and usable by ``rlgen new``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rlgen import __version__
from support.plugins import PLUGIN_PACKAGES, SOURCE, install_example_plugin
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
    result = run_rlgen("new", str(target), *REQUIRED, *PLUGIN_PACKAGES, "--plugin", "example-math", "--no-input", env=plugin_env)
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
    assert run_rlgen("new", str(target), *REQUIRED, *PLUGIN_PACKAGES, "--plugin", "example-math", "--no-input", env=plugin_env).returncode == 0
    assert agent_problems(target, plugin_env) == []
    trainer = target / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("default_agent_loop: tool_agent", "default_agent_loop: single_turn_agent"))
    (problem,) = agent_problems(target, plugin_env)
    assert problem["obj"].startswith("ConfigMap/rl-training/")
    assert "example-math rows run 'single_turn_agent' (agent.default_agent_loop), which never calls a tool" in problem["message"]


def agent_problems(repo, env):
    result = run_rlgen("validate", str(repo), "--output", "json", env={**env, "RLGEN_SCHEMA_DIR": str(schema_dir())})
    return [p for p in json.loads(result.stdout)["problems"] if "agent" in p["message"]]


def test_a_plugin_from_a_local_folder_needs_its_source_named(tmp_path, plugin_env):
    """Installed from a local folder, the plugin has no source the CI or an image could reach:
    rlgen new says which answer names one, and writes nothing."""
    from support.repos import one_error_line

    target = tmp_path / "repo"
    line = one_error_line(run_rlgen("new", str(target), *REQUIRED, "--plugin", "example-math", "--no-input",
                                    env=plugin_env))
    assert "rlgen.plugin_packages" in line and "rlgen-example-math" in line and "a local directory" in line
    assert not target.exists()


def _step(workflow, name: str) -> str:
    from ruamel.yaml import YAML

    doc = YAML(typ="safe").load(workflow.read_text())
    return next(s["run"] for job in doc["jobs"].values() for s in job["steps"] if s.get("name") == name)


def test_the_generated_ci_installs_the_plugin_and_validate_runs_its_rule(tmp_path, plugin_env):
    """End to end, offline: rlgen new --plugin example-math; the validate workflow's install step,
    run as it is in a fresh virtualenv with pip reading only a folder of wheels, installs the
    plugin beside rlgen; that rlgen's validate runs the plugin's own rule."""
    import os
    import site
    import sysconfig

    target = tmp_path / "repo"
    # The rlgen the runner has is this checkout's: the step pins its version.
    pinned = ("--set", f"rlgen.install=rlgen=={__version__}")
    assert run_rlgen("new", str(target), *REQUIRED, *pinned, *PLUGIN_PACKAGES, "--plugin", "example-math", "--no-input",
                     env=plugin_env).returncode == 0
    step = _step(target / ".github" / "workflows" / "validate.yaml", "Install rlgen")
    assert "rlgen-example-math==0.3.1" in step
    assert "rlgen-example-math==0.3.1" in (target / "images" / "data" / "Dockerfile").read_text()

    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(SOURCE)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "ci"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # The CI runner's Python has rlgen's own dependencies (and this checkout's rlgen):
    # the step under test is the one that adds the plugin.
    ci_site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in site.getsitepackages() if "site-packages" in p] or [sysconfig.get_path("purelib")]
    (Path(ci_site) / "rlgen-test-base.pth").write_text(f"import site; site.addsitedir({ours[0]!r})\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_FIND_LINKS")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}", PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    installed = subprocess.run(["bash", "-euo", "pipefail", "-c", step], cwd=target, capture_output=True, text=True, env=env)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    def validate():
        result = subprocess.run([str(venv / "bin" / "python"), "-m", "rlgen", "validate", ".", "-o", "json", "--offline"],
                                cwd=target, capture_output=True, text=True, env=env)
        assert result.returncode in (0, 1), result.stderr
        return [p for p in json.loads(result.stdout)["problems"] if "cuts MATH solutions" in p["message"]]

    assert validate() == []
    trainer = target / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("max_response_length: 1024", "max_response_length: 512"))
    (problem,) = validate()
    assert problem["source"] == "runs/baseline/run.yaml" and problem["obj"].startswith("RayJob/")
    assert problem["fix"] == "rlgen run set baseline data.max_response_length=1024"
