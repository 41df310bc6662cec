"""New answers from the recorded ones and ``rlgen update``'s flags, validated through the same
selection as ``rlgen new``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import Installed
from rlgen.plugin_host.selection import Selection, check_clusters, parse_sets, select


@dataclass
class Change:
    """What the user asks to change; empty asks only for what this rlgen renders."""

    plugins: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    unsets: list[str] = field(default_factory=list)
    add_clusters: dict[str, str] = field(default_factory=dict)
    remove_clusters: list[str] = field(default_factory=list)
    #: Drop trainer-config keys the new verl release removed instead of refusing the move.
    force: bool = False
    #: The team's template (``template`` in rlgen.yaml) at this branch, tag or commit; else, with
    #: ``template_newest``, at the newest commit of its source; else at the recorded commit.
    template_ref: str | None = None
    template_newest: bool = False

    def describe(self) -> list[str]:
        return ([f"template at {self.template_ref}"] if self.template_ref else []) + ([f"plugin {p}" for p in self.plugins] + [f"set {s}" for s in self.sets]
                + [f"unset {u}" for u in self.unsets]
                + [f"add cluster {c} (environment {e})" for c, e in self.add_clusters.items()]
                + [f"remove cluster {c}" for c in self.remove_clusters])


def new_selection(installed: dict[str, Installed], recorded: dict[str, Any], change: Change) -> Selection:
    plugins = dict(recorded["plugins"])
    options = {k: dict(v) for k, v in recorded["options"].items()}
    for name in change.plugins:
        if name not in installed:
            select(installed, [name], {}, None)  # the same "unknown plugin (did you mean ...)" error
        slot = installed[name].info.slot
        old = plugins.get(slot)
        if old and old != name:
            # The replaced plugin's answers mean nothing to its successor.
            options.pop(old, None)
        plugins[slot] = name
    for key in change.unsets:
        plugin, dot, option = key.partition(".")
        if not dot or option not in options.get(plugin, {}):
            raise RlgenError(f"--unset {key}: rlgen.yaml sets no such option")
        del options[plugin][option]
        if not options[plugin]:
            del options[plugin]
    for plugin, values in parse_sets(change.sets).items():
        options.setdefault(plugin, {}).update(values)
    selection = select(installed, list(plugins.values()), options, None)
    clusters = dict(recorded["clusters"])
    for name in change.remove_clusters:
        if name == selection.values["rlgen"]["cluster"]:
            raise RlgenError(f"'{name}' is the main cluster (rlgen.cluster): it cannot be removed")
        if clusters.pop(name, None) is None:
            raise RlgenError(f"no cluster '{name}' (clusters: {', '.join(sorted(clusters)) or 'only the main one'})")
    for name, env in change.add_clusters.items():
        if name in clusters:
            raise RlgenError(f"cluster '{name}' already exists (environment {clusters[name]})")
        clusters[name] = env
    selection.clusters = clusters
    check_clusters(selection)
    return selection
