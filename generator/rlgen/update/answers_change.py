"""New answers from the recorded ones and ``rlgen update``'s flags, validated through the same
selection as ``rlgen new``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import Installed
from rlgen.plugin_host.selection import Selection, check_clusters, parse_sets, select
from rlgen.plugin_host.selection import _asked as asked
from rlgen.plugin_info import Option, PluginInfo


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
    #: Asks an answer a plugin swap cannot carry over (a terminal's prompt); None: refuse instead.
    prompt: Callable[[str, Option], str] | None = field(default=None, compare=False, repr=False)

    def describe(self) -> list[str]:
        return ([f"template at {self.template_ref}"] if self.template_ref else []) + ([f"plugin {p}" for p in self.plugins] + [f"set {s}" for s in self.sets]
                + [f"unset {u}" for u in self.unsets]
                + [f"add cluster {c} (environment {e})" for c, e in self.add_clusters.items()]
                + [f"remove cluster {c}" for c in self.remove_clusters])


def new_selection(installed: dict[str, Installed], recorded: dict[str, Any], change: Change) -> Selection:
    plugins = dict(recorded["plugins"])
    options = {k: dict(v) for k, v in recorded["options"].items()}
    swapped_in: list[str] = []
    for name in change.plugins:
        if name not in installed:
            select(installed, [name], {}, None)  # the same "unknown plugin (did you mean ...)" error
        slot = installed[name].info.slot
        old = plugins.get(slot)
        if old and old != name:
            previous = installed[old].info if old in installed else None
            carried = carry_over(previous, installed[name].info, options.pop(old, {}))
            if carried:
                options[name] = {**carried, **options.get(name, {})}
            swapped_in.append(name)
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
    _ask_unanswered([installed[n].info for n in swapped_in], options, change.prompt)
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


def same_meaning(old: Option, new: Option) -> bool:
    """Two plugins' options mean the same when they are declared alike: name, type and help
    (the storage plugins share their bucket options, the sandbox plugins their pool's)."""
    return (old.name, old.type, old.help) == (new.name, new.type, new.help)


def carry_over(old: PluginInfo | None, new: PluginInfo, answers: dict[str, Any]) -> dict[str, Any]:
    """The answers of the plugin leaving a slot that its successor takes as they are."""
    if old is None:
        return {}
    before = {o.name: o for o in old.options}
    return {o.name: answers[o.name] for o in new.options
            if o.name in answers and o.name in before and same_meaning(before[o.name], o)}


def _needed(info: PluginInfo, option: Option, answers: dict[str, Any]) -> bool:
    """Whether ``option`` is required by the value of the option its ``required_when`` names
    (as answered, else that option's default)."""
    if option.required_when is None:
        return False
    name, value = option.required_when
    default = next((o.default for o in info.options if o.name == name), None)
    return str(answers.get(name, default)) == str(value)


def _ask_unanswered(infos: list[PluginInfo], options: dict[str, dict[str, Any]],
                    prompt: Callable[[str, Option], str] | None) -> None:
    """A swapped-in plugin's question that ``rlgen new`` would ask (a bucket, a role) gets no
    default behind the user's back: ``prompt`` asks it, or, without one, it must come with
    ``--set``. Only the swapped-in plugins are asked: an update changes nothing else."""
    missing = [(info.name, o) for info in infos for o in info.options
               if (o.ask or o.required and o.default is None or _needed(info, o, options.get(info.name, {})))
               and o.name not in options.get(info.name, {})]
    if missing and prompt is not None:
        for name, option in missing:
            answers = options.setdefault(name, {})
            required = option.required and option.default is None or option.required_when is not None
            answers[option.name] = asked(name, option, prompt, answers, required)
        return
    if missing:
        raise RlgenError("the swapped-in plugin needs answers the plugin it replaces does not give: "
                         + "; ".join(f"{n}.{o.name} ({o.help})" for n, o in missing) + ": "
                         + " ".join(f"--set {n}.{o.name}=VALUE" for n, o in missing))
