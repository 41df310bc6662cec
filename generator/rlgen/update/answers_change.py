"""New answers from the recorded ones and ``rlgen update``'s flags, validated through the same
selection as ``rlgen new``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import click

from rlgen.errors import RlgenError
from rlgen.plugin_host.discovery import Installed
from rlgen.plugin_host.selection import Selection, check_clusters, convert, parse_sets, select
from rlgen.plugin_host.selection import _asked as asked
from rlgen.plugin_host.selection import _condition
from rlgen.plugin_host.core_options import CORE
from rlgen.plugin_info import CORE_ANSWER, Option, PluginInfo, condition_answer


@dataclass
class Change:
    """What the user asks to change; empty asks only for what this rlgen renders."""

    plugins: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    unsets: list[str] = field(default_factory=list)
    add_clusters: dict[str, str] = field(default_factory=dict)
    #: ``--set PLUGIN.OPTION=VALUE`` of the added cluster's own answers (``Option.per_cluster``).
    cluster_sets: list[str] = field(default_factory=list)
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
    _change_clusters(selection, recorded, change)
    return selection


def _change_clusters(selection: Selection, recorded: dict[str, Any], change: Change) -> None:
    """The clusters ``change`` adds and removes, each added one with its own answers."""
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
    selected = {info.name for info in selection.infos()}
    # A plugin swapped out takes its clusters' answers with it; a removed cluster its own.
    own = {c: {p: dict(v) for p, v in plugins.items() if p in selected}
           for c, plugins in recorded.get("cluster_options", {}).items() if c in clusters}
    for name in change.add_clusters:
        own[name] = cluster_answers(selection, name, parse_sets(change.cluster_sets), change.prompt)
    selection.cluster_answers = {c: plugins for c, plugins in sorted(own.items()) if plugins}


def cluster_answers(selection: Selection, cluster: str, sets: dict[str, dict[str, str]],
                    prompt: Callable[[str, Option], str] | None) -> dict[str, dict[str, Any]]:
    """The new ``cluster``'s own answers of every ``per_cluster`` option its plugins' shared
    answers make needed (an OIDC provider with auth=rrsa): from ``sets``, else asked, else
    every missing one named at once. Never copied from the main cluster's."""
    options = selection.per_cluster_options()
    known = {f"{p}.{o.name}" for p, o in options}
    for plugin, values in sets.items():
        for key in values:
            if f"{plugin}.{key}" not in known:
                raise RlgenError(f"--set {plugin}.{key}: no answer a cluster has its own of "
                                 f"(those of this repository: {', '.join(sorted(known)) or 'none'})")
    answers: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    for plugin, option in options:
        earlier = {**selection.values[plugin], **answers.get(plugin, {})}
        if option.required_when is not None and not _condition(option, earlier, selection.values["rlgen"]):
            continue
        if option.name in sets.get(plugin, {}):
            value = convert(plugin, option, sets[plugin][option.name], earlier=earlier)
        elif prompt is not None:
            click.echo(f"{plugin}.{option.name}: cluster {cluster}'s own ({option.help})", err=True)
            value = asked(plugin, option, prompt, earlier, required=True)
        else:
            missing.append(f"{plugin}.{option.name}")
            continue
        answers.setdefault(plugin, {})[option.name] = value
    if missing:
        raise RlgenError(f"cluster {cluster} needs its own answer{'s' if len(missing) > 1 else ''} of "
                         f"{', '.join(missing)} (each cluster has its own; none is copied from "
                         f"{selection.values['rlgen']['cluster']}): "
                         + " ".join(f"--set {m}=VALUE" for m in missing))
    return answers


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


def _needed(info: PluginInfo, option: Option, answers: dict[str, Any], core: dict[str, Any]) -> bool:
    """Whether ``option`` is required by the value of the option its ``required_when`` names
    (as answered, else that option's default; rlgen's own answers ``core``)."""
    if option.required_when is None:
        return False
    name, value = option.required_when
    # rlgen's own answer (rlgen.NAME) defaults as rlgen's option does.
    owner = CORE if name.startswith(CORE_ANSWER) else info
    default = next((o.default for o in owner.options if o.name == name.removeprefix(CORE_ANSWER)), None)
    given = condition_answer(option, answers, core, default)
    return bool(value(given)) if callable(value) else str(given) == str(value)


def _ask_unanswered(infos: list[PluginInfo], options: dict[str, dict[str, Any]],
                    prompt: Callable[[str, Option], str] | None) -> None:
    """A swapped-in plugin's question that ``rlgen new`` would ask (a bucket, a role) gets no
    default behind the user's back: ``prompt`` asks it, or, without one, it must come with
    ``--set``. Only the swapped-in plugins are asked: an update changes nothing else."""
    missing = [(info.name, o) for info in infos for o in info.options
               if (o.ask or o.required and o.default is None or _needed(info, o, options.get(info.name, {}), options.get("rlgen", {})))
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
