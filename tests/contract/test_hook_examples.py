"""Every example in the hook contract runs through the real pipeline and does what it says.

An example's function replaces (or joins) the hooks of one selected plugin; the repository is
generated in memory and, where the example changes Kubernetes objects, rendered by kustomize.
"""
from __future__ import annotations

import inspect
import re
import textwrap

import pytest
from support.plugins import with_hooks
from support.repos import CORE_ANSWERS, build

from rlgen import contributions, hookspecs
from rlgen.errors import RlgenError
from rlgen.generate import image_builds, pipeline
from rlgen.plugin_host.discovery import Installed, discover
from rlgen.plugin_host.selection import select
from rlgen.repo import image_tags

HOOKS = {name: fn for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("rlgen_")}


def example(hook: str):
    """The function an example defines, executed with the names a plugin imports."""
    return example_module(hook)[hook]


def example_module(hook: str) -> dict:
    """Every name an example defines (an example may need a second hook, as rlgen_images
    needs rlgen_files), executed with the names a plugin imports."""
    doc = inspect.getdoc(HOOKS[hook])
    code = textwrap.dedent(re.search(r"Example::\n\n(.*)", doc, re.S)[1])
    from rlgen_plugins.gsm8k import map_row

    from rlgen.plugin_api import verl_release

    namespace = {"hookimpl": hookspecs.hookimpl, "map_row": map_row, "verl_release": verl_release,
                 **{n: getattr(contributions, n) for n in dir(contributions) if n[0].isupper()}}
    exec(compile(code, f"<example of {hook}>", "exec"), namespace)
    return namespace


def with_example(installed: dict, plugin: str, hook: str) -> dict:
    """``installed`` where ``plugin`` also has (or now has) the example's ``hook``."""
    return with_hooks(installed, plugin, **{hook: example(hook)})


def generate(hook: str, plugin: str, plugins=(), sets=None):
    from rlgen.generate.pipeline import generate as run_pipeline

    installed = with_example(discover(), plugin, hook)
    sets = {**CORE_ANSWERS, **(sets or {})}
    sets["rlgen"] = {**CORE_ANSWERS["rlgen"], **(sets or {}).get("rlgen", {})}
    return run_pipeline(select(installed, list(plugins), sets, None))


def written(tmp_path, build_result):
    build_result.tree.write(tmp_path)
    return tmp_path


def text(b, path: str) -> str:
    return b.tree.files[path].decode()


def test_every_hook_has_a_runnable_example():
    assert set(HOOKS) == set(CASES) | {"rlgen_plugin"}
    for hook in HOOKS:
        assert callable(example(hook))


def test_plugin_example_describes_a_plugin():
    info = example("rlgen_plugin")()
    assert info.slot in contributions.SLOTS and info.options[0].default == 0.5


def _with_plugin_example(installed: dict) -> dict:
    info = example("rlgen_plugin")()
    return {**installed, "vllm": Installed(installed["vllm"].module, info, installed["vllm"].version)}


@pytest.mark.parametrize("answers, refused", [
    ({}, "vllm.reward_url"),
    ({"reward_url": "http://reward.team.test"}, "must be an https:// URL"),
    ({"reward_url": "https://reward.team.test", "gpu_memory_utilization": "1.5"}, "must be in (0, 1]"),
])
def test_plugin_example_options_are_required_and_checked(answers, refused):
    sets = {**CORE_ANSWERS, "vllm": answers}
    with pytest.raises(RlgenError, match=re.escape(refused)):
        select(_with_plugin_example(discover()), [], sets, None)


def test_plugin_example_options_reach_the_hooks():
    sets = {**CORE_ANSWERS, "vllm": {"reward_url": "https://reward.team.test", "gpu_memory_utilization": "0.7"}}
    selection = select(_with_plugin_example(discover()), [], sets, None)
    assert selection.values["vllm"] == {"gpu_memory_utilization": 0.7, "reward_url": "https://reward.team.test"}


def test_check_example_stops_generation():
    with pytest.raises(RlgenError, match="sglang \\+ rlgen: this reward model needs 2 GPUs per node"):
        generate("rlgen_check", "flux", ["sglang"], {"rlgen": {"gpus_per_node": "1"}})


def _trainer_memory(b, tmp_path):
    assert "gpu_memory_utilization: 0.6" in text(b, "base/training/trainer.yaml")


def _tools(b, tmp_path):
    assert "rlgen_verl_tools.rewards.Geo3kRewardTool" in text(b, "base/training/tool_config.yaml")


def _config_file(b, tmp_path):
    assert "reward_weights.json" in text(b, "base/training/kustomization.yaml")
    configmap = next(o for o in build(written(tmp_path, b) / "runs" / "baseline") if o["kind"] == "ConfigMap")
    assert configmap["data"]["reward_weights.json"] == '{"format": 0.1}\n'


def _resources(b, tmp_path):
    objects = build(written(tmp_path, b) / "overlays" / "production" / "platform")
    quota = next(o for o in objects if o["kind"] == "ResourceQuota")
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "16"}


def _patches(b, tmp_path):
    assert "components/flux/platform/dataset-job-memory.yaml" in b.tree.files
    objects = build(written(tmp_path, b) / "overlays" / "production" / "platform")
    job = next(o for o in objects if o["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["memory"] == "16Gi"
    rayjob = next(o for o in build(tmp_path / "runs" / "baseline") if o["kind"] == "RayJob")
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in head["env"]}
    # Appended by the JSON patch: the template's own variables are still there.
    assert env["NCCL_DEBUG"] == "WARN" and env["VERL_ROOT"] == "/home/verl"


def _training_image(b, tmp_path):
    assert "FROM verlai/verl:vllm024.latest" in text(b, "images/training/Dockerfile")
    assert "newTag: 0.9.1-vllm" in text(b, "base/training/kustomization.yaml")


def _packages(b, tmp_path):
    assert '"mathruler==0.1.0"' in text(b, "images/training/Dockerfile")


def _upstream(b, tmp_path):
    assert "openkruise/agents" in text(b, "infrastructure/upstream/openkruise-agents.yaml")


def _sync_files(b, tmp_path):
    platform = text(b, "clusters/production/platform.yaml")
    assert "# Stage platform: applied after infrastructure." in platform and "- name: infrastructure" in platform


def _files(b, tmp_path):
    assert text(b, "docs/sandbox.md") == "# The sandbox\n"


def _secrets(b, tmp_path):
    assert "wandb-api-key" in text(b, "rlgen.yaml") and "wandb-api-key" in text(b, "README.md")


def _secret_delivery(b, tmp_path):
    readme = text(b, "README.md")
    assert "## Secrets\nCreate these before the first sync:\n\n- `sandbox-admin-api-key` in `sandbox-system`" in readme
    assert "- `hf-token` in `rl-training`: keys token" in readme and "kubectl create secret" not in readme


def _readme(b, tmp_path):
    assert "## Dashboards\nGrafana boards for the runs live in `dashboards/`." in text(b, "README.md")


def _validate_rules(b, tmp_path):
    from rlgen.generate.staged_rules import refuse_failing
    from rlgen.rules import Rendered, check

    repo = written(tmp_path, b)
    objects = [Rendered("runs/baseline/run.yaml", o) for o in build(repo / "runs" / "baseline")]
    assert [f for f in check(objects, (), (b.hooks, b.ctx)) if "saves no checkpoint" in f.message] == []
    trainer = repo / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("save_freq: 20", "save_freq: -1"))
    objects = [Rendered("runs/baseline/run.yaml", o) for o in build(repo / "runs" / "baseline")]
    (finding,) = [f for f in check(objects, (), (b.hooks, b.ctx)) if "saves no checkpoint" in f.message]
    assert finding.obj.startswith("RayJob/") and finding.fix == "rlgen run set baseline trainer.save_freq=20"
    # rlgen new refuses such a repository, naming the problem
    import subprocess
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with pytest.raises(RlgenError, match="the run saves no checkpoint"):
        refuse_failing(repo, [s.name for s in b.secrets()], (b.hooks, b.ctx))


def _dataset_format(b, tmp_path):
    assert "value: openai/gsm8k" in text(b, "base/platform/dataset-job.yaml")


MARKETPLACE = {"marketplace-sandbox": {"domain": "sandbox.example.com"}}
#: hook -> (plugin that gets the example, extra plugins, options, what the user sees)
CASES = {
    "rlgen_check": None,
    "rlgen_trainer_config": ("flux", (), None, _trainer_memory),
    "rlgen_tools": ("flux", (), None, _tools),
    "rlgen_config_files": ("flux", (), None, _config_file),
    "rlgen_resources": ("flux", (), None, _resources),
    "rlgen_patches": ("flux", (), None, _patches),
    "rlgen_training_image": ("vllm", (), None, _training_image),
    "rlgen_training_packages": ("flux", (), None, _packages),
    "rlgen_upstream_sources": ("flux", ("marketplace-sandbox",), MARKETPLACE, _upstream),
    "rlgen_sync_files": ("flux", (), None, _sync_files),
    "rlgen_secrets": ("flux", (), None, _secrets),
    "rlgen_secret_delivery": ("manual-secrets", (), None, _secret_delivery),
    "rlgen_files": ("flux", (), None, _files),
    "rlgen_images": None,  # needs the example's rlgen_files too: below
    "rlgen_readme": ("flux", (), None, _readme),
    "rlgen_dataset_format": ("gsm8k", (), None, _dataset_format),
    "rlgen_validate_rules": ("flux", (), None, _validate_rules),
    "rlgen_migrate": None,  # runs in rlgen update, on a repository: below
}


@pytest.mark.parametrize("hook", [h for h, case in CASES.items() if case])
def test_example_changes_the_generated_repository(hook, tmp_path):
    plugin, plugins, sets, check = CASES[hook]
    check(generate(hook, plugin, plugins, sets), tmp_path)


def test_images_example_is_built_by_images_build_sh_under_its_folders_hash():
    installed = discover()
    namespace = example_module("rlgen_images")
    with_images = with_hooks(installed, "flux", rlgen_files=namespace["rlgen_files"],
                             rlgen_images=namespace["rlgen_images"])
    b = pipeline.generate(select(with_images, [],
                            CORE_ANSWERS, None))
    digest = image_builds.context_hash(b.tree.files, "images/proxy")[:12]
    ref = f"{CORE_ANSWERS['rlgen']['registry']}/proxy:v1-{digest}"
    assert ("images/proxy", ref) in image_tags.listed(text(b, image_tags.SCRIPT))
    assert f"`{ref}`" in text(b, "README.md")


def test_migrate_example_moves_the_page_of_an_older_version():
    migrate = example("rlgen_migrate")
    old = {"docs/math.md": "# MATH\nour notes\n", "README.md": "x"}
    assert migrate(None, "0.2.4", "0.3.1", old) == {"docs/math.md": None, "docs/example-math.md": "# MATH\nour notes\n"}
    assert migrate(None, "0.3.0", "0.3.1", old) == {}


def _staged(tmp_path, b):
    import subprocess

    repo = written(tmp_path, b)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_every_patch_of_the_example_reaches_an_object_and_the_check_leaves_no_trace(tmp_path):
    from rlgen.generate.staged_rules import refuse_failing
    from support.repos import repo_files

    b = generate("rlgen_patches", "flux")
    repo = _staged(tmp_path, b)
    before = repo_files(repo)
    refuse_failing(repo, [s.name for s in b.secrets()], (b.hooks, b.ctx), b.hooks.patches(b.ctx))
    assert repo_files(repo) == before


def test_a_patch_whose_target_matches_nothing_is_an_error_naming_the_plugin(tmp_path):
    from rlgen.generate.staged_rules import refuse_failing

    b = generate("rlgen_patches", "flux")
    repo = _staged(tmp_path, b)
    stray = contributions.Patch(contributions.Layer.PLATFORM, {"kind": "Job", "labelSelector": "app=no-such-job"},
                                {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}, "stray-job")
    with pytest.raises(RlgenError, match=r"plugin 'flux': patch 'stray-job' \(platform layer\) matches no object"):
        refuse_failing(repo, [s.name for s in b.secrets()], (b.hooks, b.ctx), [("flux", [stray])])
