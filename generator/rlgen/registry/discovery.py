"""Installed plugins: every entry point of the group ``rlgen``, built-in and third-party alike,
and the one way a plugin manager is made from them."""
from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Iterable

import pluggy

from rlgen import hookspecs
from rlgen.contributions import SLOTS, PluginInfo
from rlgen.errors import RlgenError

#: The plugin a slot gets when the user picks none.
DEFAULT_PLUGINS = {
    "sandbox": "opensource-sandbox",
    "storage": "ak-storage",
    "dataset": "gsm8k",
    "rollout": "vllm",
    "sync": "flux",
    "tracking": "no-tracking",
}


@dataclass(frozen=True)
class Installed:
    module: Any
    info: PluginInfo
    version: str


def plugin_manager(plugins: Iterable[tuple[str, Any]]) -> pluggy.PluginManager:
    """A plugin manager holding ``(name, module)`` pairs, registered in the order given
    (callers pass slot order); a misspelled or mistyped hook fails here, naming the plugin."""
    pm = pluggy.PluginManager("rlgen")
    pm.add_hookspecs(hookspecs)
    for name, module in plugins:
        pm.register(module, name=name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise RlgenError(f"plugin error: {' '.join(str(exc).split())}") from None
    return pm


def discover() -> dict[str, Installed]:
    """Every plugin registered under the ``rlgen`` entry-point group, by name."""
    modules = {}
    for ep in sorted(entry_points(group="rlgen"), key=lambda e: e.name):
        try:
            modules[ep.name] = (ep.load(), ep.dist.version if ep.dist else "")
        except Exception as exc:  # a broken third-party plugin must not break rlgen
            raise RlgenError(f"plugin '{ep.name}' failed to load: {exc}") from None
    catalog = plugin_manager((name, module) for name, (module, _) in modules.items())
    found: dict[str, Installed] = {}
    for name, (module, version) in modules.items():
        info = _describe(catalog, module)
        if info is None or info.name != name:
            raise RlgenError(f"plugin '{name}' must describe itself as '{name}' in rlgen_plugin()")
        if info.slot not in SLOTS:
            raise RlgenError(f"plugin '{name}' names unknown slot '{info.slot}' (slots: {', '.join(SLOTS)})")
        found[name] = Installed(module, info, version)
    return found


def _describe(pm: pluggy.PluginManager, module: Any) -> PluginInfo | None:
    for impl in pm.hook.rlgen_plugin.get_hookimpls():
        if impl.plugin is module:
            return impl.function()
    return None
