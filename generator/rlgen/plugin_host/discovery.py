"""Installed plugins: every entry point of the group ``rlgen``, built-in and third-party alike."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from rlgen.contributions import SLOTS, DatasetFormat, PluginInfo
from rlgen.errors import RlgenError
from rlgen.plugin_host.manager import Hooks, describe

#: The plugin a slot gets when the user picks none.
DEFAULT_PLUGINS = {
    "sandbox": "opensource-sandbox",
    "storage": "ak-storage",
    "dataset": "gsm8k",
    "rollout": "vllm",
    "sync": "flux",
    "tracking": "no-tracking",
    "secrets": "manual-secrets",
}


@dataclass(frozen=True)
class Installed:
    module: Any
    info: PluginInfo
    version: str
    #: The distribution that installed it ("rlgen" for the built-in plugins).
    distribution: str = ""


def discover() -> dict[str, Installed]:
    """Every plugin registered under the ``rlgen`` entry-point group, by name."""
    return dict(_discovered())


@lru_cache(maxsize=1)
def _discovered() -> dict[str, Installed]:
    # Once per process: the commands that select plugins and the rules that ask what a dataset
    # plugin declares would each scan every installed distribution's entry points.
    modules = {}
    origins: dict[int, tuple[str, str]] = {}
    for ep in sorted(entry_points(group="rlgen"), key=lambda e: e.name):
        try:
            modules[ep.name] = (ep.load(), *_origin(ep.dist, origins))
        except Exception as exc:  # a broken third-party plugin must not break rlgen
            raise RlgenError(f"plugin '{ep.name}' failed to load: {exc}") from None
    infos = describe({name: module for name, (module, _, _) in modules.items()})
    found: dict[str, Installed] = {}
    for name, (module, version, distribution) in modules.items():
        info = infos[name]
        if info is None or info.name != name:
            raise RlgenError(f"plugin '{name}' must describe itself as '{name}' in rlgen_plugin()")
        if info.slot not in SLOTS:
            raise RlgenError(f"plugin '{name}' names unknown slot '{info.slot}' (slots: {', '.join(SLOTS)})")
        found[name] = Installed(module, info, version, distribution)
    return found


def _origin(dist, seen: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """(version, name) of the distribution that installed an entry point. Each read of a
    distribution's metadata parses its whole METADATA file (rlgen's holds the README): once
    per distribution, not once per plugin it installs."""
    if dist is None:
        return "", ""
    if id(dist) not in seen:
        metadata = dist.metadata
        seen[id(dist)] = (metadata["Version"], metadata["Name"])
    return seen[id(dist)]


def dataset_format(installed: dict[str, Installed], name: str) -> DatasetFormat:
    """The format of the installed dataset plugin ``name``, outside any selection."""
    return Hooks({"dataset": (name, installed[name].module)}).dataset_format()
