"""The generation pipeline: the same selection gives the same files in any flag order, and a
plugin's contribution that the generator cannot place is an error naming the plugin."""
from __future__ import annotations

import types

import pytest
from support.repos import CORE_ANSWERS, one_error_line, repo_files, required_for, run_rlgen

from rlgen.contributions import PluginInfo, Resource
from rlgen.errors import RlgenError
from rlgen.hookspecs import hookimpl
from rlgen.plugin_host.discovery import Installed, discover
from rlgen.plugin_host.selection import select

PLUGINS = ["--plugin", "sglang", "--plugin", "rrsa-storage", "--plugin", "argo"]
SETS = ["--set", "rrsa-storage.role_name=rl-oss-reader", *required_for(*PLUGINS)]


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
