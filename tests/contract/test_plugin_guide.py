"""docs/plugins.md: its hook reference names every hook of the contract, and its example, as
printed there: its pyproject registers the module,
its options are required and checked, its JSON patch reaches every Ray container, and its
validate rule reports a RayJob the patch no longer reaches."""
from __future__ import annotations

import re
import tomllib
import types

import pytest
from support.repos import CORE_ANSWERS, REPO, build

from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import Installed, discover
from rlgen.plugin_host.manager import describe
from rlgen.plugin_host.selection import select

DOC = (REPO / "docs" / "plugins.md").read_text()
GUIDE, REFERENCE = DOC.split("\n## Hook reference", 1)
BASE_URL = "https://wandb.team.test"


def block(language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", GUIDE, re.S)[1]


@pytest.fixture(scope="module")
def installed():
    module = types.ModuleType("rlgen_wandb")
    exec(compile(block("python"), "docs/plugins.md (rlgen_wandb.py)", "exec"), module.__dict__)
    info = describe({"wandb": module})["wandb"]
    return {**discover(), "wandb": Installed(module, info, "0.1.0", "rlgen-wandb")}


def answers(**wandb):
    core = {**CORE_ANSWERS["rlgen"], "plugin_packages": '["rlgen-wandb==0.1.0"]'}
    return {**CORE_ANSWERS, "rlgen": core, "wandb": wandb}


def test_its_pyproject_registers_the_module():
    project = tomllib.loads(block("toml"))["project"]
    assert project["entry-points"]["rlgen"] == {"wandb": "rlgen_wandb"}
    assert "# rlgen_wandb.py" in block("python")


def test_its_option_is_required_and_checked(installed):
    with pytest.raises(RlgenError, match=r"wandb\.base_url"):
        select(installed, ["wandb"], answers(), None)
    with pytest.raises(RlgenError, match="must be an https:// URL"):
        select(installed, ["wandb"], answers(base_url="http://wandb.team.test"), None)


def test_it_reaches_every_ray_container_and_its_rule_runs(installed, tmp_path):
    from rlgen.generate.pipeline import generate
    from rlgen.rules import Rendered, check

    b = generate(select(installed, ["wandb"], answers(base_url=BASE_URL), None))
    assert "rlgen-wandb==0.1.0" in b.tree.files["images/data/Dockerfile"].decode()
    b.tree.write(tmp_path)
    rayjob = next(o for o in build(tmp_path / "runs" / "baseline") if o["kind"] == "RayJob")
    cluster = rayjob["spec"]["rayClusterSpec"]
    for pod in (cluster["headGroupSpec"], cluster["workerGroupSpecs"][0]):
        env = {e["name"]: e for e in pod["template"]["spec"]["containers"][0]["env"]}
        assert env["WANDB_BASE_URL"]["value"] == BASE_URL
        assert env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "wandb-api-key"
        assert "VERL_ROOT" in env  # appended: the container's own variables stay

    def rule_findings():
        objects = [Rendered("runs/baseline/run.yaml", o) for o in build(tmp_path / "runs" / "baseline")]
        return [f for f in check(objects, (), (b.hooks, b.ctx)) if "W&B" in f.message]

    assert rule_findings() == []
    kustomization = tmp_path / "components" / "wandb" / "training" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().split("patches:")[0] + "patches: []\n")
    (finding,) = rule_findings()
    assert finding.obj.startswith("RayJob/") and finding.fix == "restore components/wandb/training/rayjob-wandb-env.yaml"


def test_the_hook_reference_is_the_contract():
    import inspect

    from rlgen import hookspecs

    specs = {name: fn.rlgen_spec["firstresult"] for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(fn, "rlgen_spec")}
    rows = {m[1]: m[2].startswith("first result") for m in re.finditer(r"^\|[^|]*\| `(rlgen_\w+)` \| ([^|]+) \|",
                                                                        REFERENCE, re.M)}
    assert rows == specs


def test_the_guide_says_how_a_plugins_package_reaches_the_training_image():
    """Only the hook table named rlgen_training_packages: a logger's author learnt that the
    package must reach the Ray nodes when the job failed to import it there."""
    prose = " ".join(GUIDE.split())
    assert "`rlgen_training_packages(ctx)`" in prose and "training image" in prose
