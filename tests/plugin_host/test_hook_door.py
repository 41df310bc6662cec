"""The one door to the hooks (rlgen.plugin_host.manager.Hooks): results in slot order, and a
first-result hook answered by its owning slot's plugin alone."""
from __future__ import annotations

import ast
import types
from pathlib import Path

import pytest
from rlgen import hookspecs
from rlgen.contributions import Context, DatasetFormat, SecretRef, TrainingImage
from rlgen.errors import RlgenError
from rlgen.plugin_host.manager import Hooks


def plugin(name: str, **hooks) -> types.ModuleType:
    """A plugin module implementing ``hooks`` (hook name without ``rlgen_`` -> function)."""
    module = types.ModuleType(name)
    for hook, function in hooks.items():
        function.__name__ = f"rlgen_{hook}"
        setattr(module, f"rlgen_{hook}", hookspecs.hookimpl(function))
    return module


def secret(name: str):
    return lambda ctx: [SecretRef(name, "ns", ("key",), "test", "test")]


def fmt():
    return DatasetFormat("d", "src", ("q", "a"), lambda row: row, default_model="m")


CTX = Context(None, {}, {})  # type: ignore[arg-type]


def test_results_come_in_slot_order_whatever_the_registration_order():
    # Registered last to first: pluggy alone would call them in reverse order of registration.
    slots = {"tracking": ("t", plugin("t", secrets=secret("from-t"))),
             "sandbox": ("s", plugin("s", secrets=secret("from-s"))),
             "storage": ("st", plugin("st"))}
    names = [ref.name for ref in Hooks(slots).secrets(CTX)]
    assert names == ["from-s", "from-t"]


def test_a_first_result_hook_is_answered_by_its_slot():
    hooks = Hooks({"dataset": ("gsm", plugin("gsm", dataset_format=fmt))})
    assert hooks.dataset_format().name == "d"


def test_a_first_result_hook_answered_by_another_slot_is_refused_naming_both():
    image = lambda ctx: TrainingImage("img", "tag")  # noqa: E731
    hooks = Hooks({"rollout": ("vllm", plugin("vllm", training_image=image)),
                   "tracking": ("mlflow", plugin("mlflow", training_image=image))})
    with pytest.raises(RlgenError, match=r"'mlflow' \(tracking slot\) answers rlgen_training_image\(\).*rollout plugin 'vllm'"):
        hooks.training_image(CTX)


def test_a_first_result_hook_answered_by_two_plugins_is_refused():
    hooks = Hooks({"sandbox": ("a", plugin("a", dataset_format=fmt)),
                   "dataset": ("b", plugin("b", dataset_format=fmt))})
    with pytest.raises(RlgenError, match="'a' .*rlgen_dataset_format.*dataset plugin 'b'"):
        hooks.dataset_format()


def test_a_first_result_hook_nobody_answers_names_the_owner():
    hooks = Hooks({"sync": ("flux", plugin("flux"))})
    with pytest.raises(RlgenError, match="sync plugin 'flux' returns no rlgen_sync_files"):
        hooks.sync_files(CTX, [])


def test_every_first_result_hook_has_an_owning_slot_and_a_method():
    from rlgen.contributions import SLOTS

    first = {name for name, spec in vars(hookspecs).items()
             if name.startswith("rlgen_") and getattr(spec, "rlgen_spec", {}).get("firstresult")}
    assert first == set(hookspecs.FIRST_RESULT)
    assert set(hookspecs.FIRST_RESULT.values()) <= set(SLOTS)


def test_every_hook_has_a_method_on_the_door():
    hooks = [name for name in vars(hookspecs) if name.startswith("rlgen_") and name != "rlgen_plugin"]
    assert [h for h in hooks if not hasattr(Hooks, h.removeprefix("rlgen_"))] == []


def test_only_the_door_calls_hooks():
    """No module of rlgen but the plugin host reaches into pluggy's hook relay."""
    package = Path(hookspecs.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        if path.parent.name == "plugin_host":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("hook", "subset_hook_caller", "get_hookimpls"):
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []


def broken(ctx):
    raise KeyError("tracking_uri")


def test_an_exception_in_a_plugin_names_the_plugin_and_the_hook():
    from rlgen.errors import INTERNAL_ERROR, PluginFailed

    hooks = Hooks({"sandbox": ("s", plugin("s", secrets=secret("fine"))), "tracking": ("t", plugin("t", readme=broken))})
    with pytest.raises(PluginFailed) as caught:
        hooks.readme(CTX)
    assert str(caught.value).startswith("plugin 't' failed in rlgen_readme(): KeyError: 'tracking_uri'")
    assert caught.value.exit_code not in (INTERNAL_ERROR, 2) and "broken" in caught.value.details


def test_a_plugin_failure_is_one_line_and_its_own_exit_code(monkeypatch, capsys, tmp_path):
    """Through the command line: one line naming plugin and hook, the traceback in a file."""
    from rlgen import cli
    from rlgen.errors import PLUGIN_ERROR
    from rlgen.plugin_host import discovery
    from support.repos import REQUIRED

    real = discovery.discover

    def with_broken_readme():
        installed = real()
        module = types.ModuleType("flux_broken")
        for name in dir(installed["flux"].module):
            if name.startswith("rlgen_"):
                setattr(module, name, getattr(installed["flux"].module, name))
        module.rlgen_readme = hookspecs.hookimpl(lambda ctx: [1 / 0])
        module.rlgen_readme.__name__ = "rlgen_readme"
        return {**installed, "flux": discovery.Installed(module, installed["flux"].info, installed["flux"].version)}

    monkeypatch.setattr(discovery, "discover", with_broken_readme)
    with pytest.raises(SystemExit) as exited:
        cli.main(["new", str(tmp_path / "repo"), *REQUIRED, "--no-input"])
    assert exited.value.code == PLUGIN_ERROR
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("rlgen: error: plugin 'flux' failed in rlgen_readme(): ZeroDivisionError")
    crash = line.rsplit("details in ", 1)[1]
    assert "1 / 0" in Path(crash).read_text()
    assert not (tmp_path / "repo").exists()
