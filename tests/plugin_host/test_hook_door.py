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
from rlgen.spec import Spec


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
