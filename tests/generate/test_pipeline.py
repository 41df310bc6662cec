"""The generation pipeline: the same selection gives the same files in any flag order, and a
plugin's contribution that the generator cannot place is an error naming the plugin."""
from __future__ import annotations

import types

import pytest
from support.repos import CORE_ANSWERS, REQUIRED, one_error_line, repo_files, run_rlgen

from rlgen.contributions import PluginInfo, Resource
from rlgen.errors import RlgenError
from rlgen.hookspecs import hookimpl
from rlgen.plugin_host.discovery import Installed, discover
from rlgen.plugin_host.selection import select

PLUGINS = ["--plugin", "sglang", "--plugin", "rrsa-storage", "--plugin", "argo"]
SETS = ["--set", "rrsa-storage.role_name=rl-oss-reader", *REQUIRED]


def test_plugin_flag_order_does_not_change_the_repository(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    assert run_rlgen("new", str(first), *PLUGINS, *SETS, "--no-input").returncode == 0
    reordered = ["--plugin", "argo", "--plugin", "sglang", "--plugin", "rrsa-storage"]
    assert run_rlgen("new", str(second), *reordered, *SETS, "--no-input").returncode == 0
    assert repo_files(first) == repo_files(second)


def test_a_repeated_plugin_is_refused(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), "--plugin", "vllm", "--plugin", "vllm", "--no-input"))
    assert line == "rlgen: error: --plugin vllm is given twice"
    assert not (tmp_path / "r").exists()


def _with_resource(layer: str) -> dict:
    installed = discover()
    module = types.ModuleType("misplaced")
    info = PluginInfo("misplaced", "sync", "puts a resource in a layer that does not exist")
    module.rlgen_plugin = hookimpl(lambda: info)
    module.rlgen_sync_files = installed["flux"].module.rlgen_sync_files
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}
    module.rlgen_resources = hookimpl(lambda ctx: [Resource(layer, "svc.yaml", svc)])
    return {**installed, "misplaced": Installed(module, info, "1")}


def test_an_unknown_layer_names_the_plugin():
    from rlgen.generate.pipeline import generate

    selection = select(_with_resource("platfrom"), ["misplaced"], CORE_ANSWERS, None)
    with pytest.raises(RlgenError, match="plugin 'misplaced' returns a resource for unknown layer 'platfrom'"):
        generate(selection)


@pytest.mark.parametrize("plugins, options", [
    ([], {}),
    (["argo", "sops", "mlflow"], {"sops": {"age_recipients": "age1vngvum279s0kwxpjqddg0rnkt3ckfuuxpp2rf3hddfh9kuq70q7sqyxhuw"},
                                  "mlflow": {"tracking_uri": "http://mlflow.example.com:5000"}}),
])
def test_the_files_rlgen_new_adds_while_kustomize_renders_are_ones_no_render_reads(plugins, options):
    """rlgen new renders the tree before its last stages ran: those stages add the same files as
    a whole run of the pipeline, none of them in a kustomization's folder or a sync entry point."""
    from rlgen.generate.pipeline import finish, generate
    from rlgen.render.manifests import NOT_SYNCED, split

    answers = {**CORE_ANSWERS, **options}
    whole = generate(select(discover(), plugins, answers, None))
    early = generate(select(discover(), plugins, answers, None), defer_unrendered=True)
    rendered = dict(early.tree.files)
    later = finish(early)

    assert later and early.tree.files == whole.tree.files
    assert set(rendered) | set(later) == set(whole.tree.files) and not set(rendered) & set(later)
    folders = {path.rpartition("/")[0] for path in rendered if path.rpartition("/")[2] == "kustomization.yaml"}
    for path in later:
        assert not any(path.startswith(f"{folder}/") for folder in folders), path
        objects = path.endswith((".yaml", ".yml")) and split(whole.tree.files[path].decode())
        assert not objects or path.split("/")[0] in NOT_SYNCED, path
