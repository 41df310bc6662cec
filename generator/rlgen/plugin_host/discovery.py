"""Installed plugins: every entry point of the group ``rlgen``, built-in and third-party alike."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from rlgen.errors import RlgenError
from rlgen.plugin_info import SLOTS, PluginInfo

if TYPE_CHECKING:
    from rlgen.contributions import DatasetFormat
    from rlgen.plugin_host.manager import Describer

@dataclass(frozen=True)
class Installed:
    module: Any
    info: PluginInfo
    version: str
    #: The distribution that installed it ("rlgen" for the built-in plugins).
    distribution: str = ""


class Plugins(Mapping[str, Installed]):
    """Every plugin registered under the ``rlgen`` entry-point group, by name. A plugin is
    imported and described when it is first asked for: a command that reads one repository's
    answers loads the plugins they select, not every one installed."""

    def __init__(self) -> None:
        # Lazy: importlib.metadata is 81 ms (median of 7); a command that checks only rlgen's own
        # answers reads no metadata.
        from importlib.metadata import entry_points

        self._points: dict[str, object] = {}
        #: A name two distributions register, and the entry points of both: refused when asked
        #: for, as nothing says which one the user meant.
        self._twice: dict[str, list] = {}
        for ep in sorted(entry_points(group="rlgen"), key=lambda e: e.name):
            if ep.name in self._points:
                self._twice.setdefault(ep.name, [self._points[ep.name]]).append(ep)
            self._points[ep.name] = ep
        self._loaded: dict[str, Installed] = {}
        self._origins: dict[int, tuple[str, str]] = {}
        self._describe: Describer | None = None

    def __getitem__(self, name: str) -> Installed:
        if name not in self._loaded:
            self._loaded[name] = self._load(self._points[name])
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._points)

    def __len__(self) -> int:
        return len(self._points)

    def __contains__(self, name: object) -> bool:
        return name in self._points

    def _load(self, ep) -> Installed:
        name = ep.name
        if name in self._twice:
            owners = " and ".join(sorted(f"'{_origin(e.dist, self._origins)[1] or e.value}'" for e in self._twice[name]))
            raise RlgenError(f"plugin '{name}' is registered by two distributions, {owners}: "
                             "uninstall one (pip uninstall NAME)")
        try:
            module = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break rlgen
            raise RlgenError(f"plugin '{name}' failed to load: {exc}") from None
        version, distribution = _origin(ep.dist, self._origins)
        if self._describe is None:
            # Lazy: pluggy and the hook specs are 24 ms (median of 5, -X importtime).
            from rlgen.plugin_host.manager import Describer

            self._describe = Describer()
        info = self._describe(name, module)
        if info is None or info.name != name:
            raise RlgenError(f"plugin '{name}' must describe itself as '{name}' in rlgen_plugin()")
        if info.slot not in SLOTS:
            raise RlgenError(f"plugin '{name}' names unknown slot '{info.slot}' (slots: {', '.join(SLOTS)})")
        return Installed(module, info, version, distribution)


def discover() -> Plugins:
    """Every plugin registered under the ``rlgen`` entry-point group, by name."""
    return _plugins()


@lru_cache(maxsize=1)
def _plugins() -> Plugins:
    # Once per process: the commands that select plugins and the rules that ask what a dataset
    # plugin declares would each list every installed distribution's entry points again.
    return Plugins()


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
    # Lazy: pluggy and the hook specs are 24 ms (median of 5, -X importtime).
    from rlgen.plugin_host.manager import Hooks

    return Hooks({"dataset": (name, installed[name].module)}).dataset_format()
