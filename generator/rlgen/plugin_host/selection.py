"""From installed plugins and the user's answers to one validated selection: one plugin per
slot, every option converted and checked."""
from __future__ import annotations

import dataclasses
import difflib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import math

import click

from rlgen.contributions import Context
from rlgen.option_checks import control_error, credential_error
from rlgen.errors import RlgenError
from rlgen.naming import dns1123_label_error, git_host
from rlgen.plugin_host.core_options import CORE
from rlgen.plugin_host.discovery import Installed
from rlgen.plugin_host.manager import Hooks
from rlgen.plugin_info import DEFAULT_PLUGINS, SLOTS, Option, PluginInfo, condition_answer
from rlgen.spec import MODELSCOPE_PREFIX, Spec, in_mainland_china

if TYPE_CHECKING:
    from rlgen.contributions import DatasetFormat


@dataclass
class Selection:
    """One plugin per slot, with every option converted and checked."""

    plugins: dict[str, str]
    installed: dict[str, Installed]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Clusters besides ``rlgen.cluster``, name -> environment (``rlgen cluster add``).
    clusters: dict[str, str] = field(default_factory=dict)
    #: Those clusters' own answers (``Option.per_cluster``): cluster -> plugin -> option -> value.
    cluster_answers: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: The hooks of :meth:`hooks` and the plugins they were made for: made once, not once per
    #: caller (a command may ask for its spec, its rules' context and its Secrets' plan).
    _hooks: tuple[tuple[str, ...], Hooks] | None = field(default=None, init=False, repr=False, compare=False)

    def all_clusters(self) -> list[tuple[str, str]]:
        """(cluster, environment) of every cluster that syncs this repository, ``rlgen.cluster`` first."""
        core = self.values["rlgen"]
        return [(core["cluster"], core["environment"]), *sorted(self.clusters.items())]

    def infos(self) -> list[PluginInfo]:
        return [CORE] + [self.installed[self.plugins[slot]].info for slot in SLOTS]

    def hooks(self) -> Hooks:
        """The hooks of the selected plugins only."""
        chosen = tuple(self.plugins[s] for s in SLOTS)
        if self._hooks is None or self._hooks[0] != chosen:
            self._hooks = chosen, Hooks({s: (self.plugins[s], self.installed[self.plugins[s]].module) for s in SLOTS})
        return self._hooks[1]

    def context(self, spec: Spec) -> Context:
        """The hooks' context; for another cluster than ``rlgen.cluster`` (``spec.cluster``), with
        that cluster's own answers over the shared ones."""
        own = self.cluster_answers.get(spec.cluster, {})
        values = {name: {**v, **own.get(name, {})} for name, v in self.values.items()}
        return Context(spec, {slot: self.plugins[slot] for slot in SLOTS}, values)

    def per_cluster_options(self) -> list[tuple[str, Option]]:
        """(plugin, option) of every answer of the selected plugins that a cluster has its own of."""
        return [(info.name, o) for info in self.infos() for o in info.options if o.per_cluster]

    def spec(self, hooks: Hooks) -> Spec:
        """The shared names and paths these answers give (the dataset plugin supplies the
        defaults of the model and the data source)."""
        distributions = {d for slot in SLOTS
                         if (d := self.installed[self.plugins[slot]].distribution) and d.lower() != "rlgen"}
        return core_spec(self.values["rlgen"], hooks.dataset_format(), tuple(sorted(distributions)))


def core_spec(core: dict[str, Any], fmt: DatasetFormat | None = None, distributions: tuple[str, ...] = ()) -> Spec:
    """The Spec of rlgen's own answers ``core`` (converted by :func:`core_values` or :func:`select`),
    the selected dataset plugin's format ``fmt`` and the selected plugins' ``distributions``.
    Without ``fmt`` what the dataset plugin supplies is empty: ``dataset``, and ``model`` and
    ``dataset_source`` unless answered."""
    # A core option named like a Spec field is that field: a new option is one Option above
    # and the field plugins read; only defaults drawn from other answers are spelled out here.
    fields = {f.name for f in dataclasses.fields(Spec)}
    values = {name: value for name, value in core.items() if name in fields}
    values.update(
        dataset=fmt.name if fmt else "",
        dataset_source=core["dataset_source"] or _default_dataset_source(core["region"], fmt),
        model=core["model"] or (fmt.default_model if fmt else ""),
        model_source=core["model_source"] or ("modelscope" if in_mainland_china(core["region"]) else "huggingface"),
        training_image=core["training_image"] or f"{core['registry']}/verl-training",
        data_image=core["data_image"] or f"{core['registry']}/rlgen-data:0.1.0",
        rlgen_install=core["install"],
        git_host=git_host(core["git_url"] or "", core["git_host"]),
        plugin_packages=tuple(core["plugin_packages"]),
        plugin_distributions=distributions,
        verl_version=core["verl"],
    )
    return Spec(**values)


def _default_dataset_source(region: str, fmt: DatasetFormat | None) -> str:
    """The dataset plugin's source, or in mainland China its ModelScope copy; a plugin that
    names none leaves the answer to the user there (the Hub is out of reach)."""
    if fmt is None:
        return ""
    if not in_mainland_china(region):
        return fmt.source
    if not fmt.modelscope_source:
        raise RlgenError(f"rlgen.dataset_source: dataset plugin '{fmt.name}' names no ModelScope copy of "
                         f"{fmt.source}, and Hugging Face is out of reach from {region}: "
                         f"--set rlgen.dataset_source={MODELSCOPE_PREFIX}OWNER/NAME")
    return MODELSCOPE_PREFIX + fmt.modelscope_source


def choose(installed: dict[str, Installed], names: list[str]) -> dict[str, str]:
    """Slot -> plugin name, from ``--plugin`` names and the defaults."""
    chosen: dict[str, str] = {}
    for name in names:
        if name not in installed:
            raise RlgenError(f"unknown plugin '{name}'{_did_you_mean(name, installed)}")
        slot = installed[name].info.slot
        if chosen.get(slot) == name:
            raise RlgenError(f"--plugin {name} is given twice")
        if slot in chosen:
            raise RlgenError(f"plugins '{chosen[slot]}' and '{name}' both fill slot '{slot}': pick one")
        chosen[slot] = name
    for slot in SLOTS:
        if slot in chosen:
            continue
        default = DEFAULT_PLUGINS.get(slot)
        if default not in installed:
            options = ", ".join(sorted(n for n, i in installed.items() if i.info.slot == slot)) or "none installed"
            raise RlgenError(f"slot '{slot}' needs a plugin: --plugin NAME ({options})")
        chosen[slot] = default
    # Slot order, not flag order: the same selection always writes the same files.
    return {slot: chosen[slot] for slot in SLOTS}


def parse_sets(items: list[str]) -> dict[str, dict[str, str]]:
    """``["vllm.tp=2"]`` -> ``{"vllm": {"tp": "2"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        plugin, dot, option = key.partition(".")
        if not sep or not dot or not plugin or not option:
            raise RlgenError(f"--set expects PLUGIN.OPTION=VALUE, got '{item}'")
        out.setdefault(plugin, {})[option] = value
    return out


def select(
    installed: dict[str, Installed],
    plugin_names: list[str],
    sets: dict[str, dict[str, Any]],
    ask: Callable[[str, Option], str] | None,
    require: dict[str, str] | None = None,
    recorded: bool = False,
) -> Selection:
    """Validate the whole input. ``ask`` prompts for a missing required option; without it
    (``--no-input`` or no terminal) every missing required option is listed in one error.
    ``require``: "PLUGIN.OPTION" -> why it is required though it has a default; asked first.
    ``recorded``: ``sets`` are rlgen.yaml's values, already typed (a quoted "8" is no count)."""
    plugins = choose(installed, plugin_names)
    selection = Selection(plugins, installed)
    infos = {info.name: info for info in selection.infos()}
    for name in sets:
        if name not in infos:
            where = "not selected" if name in installed else "unknown"
            raise RlgenError(f"--set names plugin '{name}', which is {where}{_did_you_mean(name, infos)}")
    missing: list[str] = []
    for info in infos.values():
        # rlgen's own answers come first (infos()): a plugin's option may be required by one.
        values, given = _values(info, sets.get(info.name, {}), ask, missing, require=require, recorded=recorded,
                                core=selection.values.get(CORE.name))
        selection.values[info.name] = values
        if given:
            selection.answers[info.name] = {k: values[k] for k in given}
    if missing:
        raise _missing(missing, infos.values())
    # Recorded even when it is the default: a repository keeps its verl release when a newer
    # rlgen defaults to another, until rlgen update --set rlgen.verl=... moves it.
    selection.answers.setdefault(CORE.name, {})["verl"] = selection.values[CORE.name]["verl"]
    return selection


def core_values(sets: dict[str, dict[str, Any]], unchecked: tuple[str, ...] = (), recorded: bool = False) -> dict[str, Any]:
    """rlgen's own answers (``sets["rlgen"]``), converted and checked as :func:`select` does,
    without a plugin loaded; the options named in ``unchecked`` are converted to their type
    but their own check is not run."""
    missing: list[str] = []
    values, _ = _values(CORE, sets.get(CORE.name, {}), None, missing, unchecked, recorded=recorded)
    if missing:
        raise _missing(missing, [CORE])
    return values


#: Where every option is, said when one is unknown.
_LISTED = "rlgen plugins lists every option with its help"


def _values(info: PluginInfo, sets: dict[str, Any], ask: Callable[[str, Option], str] | None,
            missing: list[str], unchecked: tuple[str, ...] = (), require: dict[str, str] | None = None,
            recorded: bool = False, core: dict | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every option of ``info`` converted, the options answered); a required option with no
    answer is added to ``missing``. Options are asked in their order: one required only under a
    condition (``required_when``, on rlgen's own answers ``core`` too) right after the answer that
    makes it so. ``require`` names options required though they have a default, with why
    (``rlgen.install`` where the default cannot be used), asked before every other."""
    given = dict(sets)
    known = {o.name: o for o in info.options}
    for key in given:
        if key not in known:
            raise RlgenError(f"plugin '{info.name}' has no option '{key}'{_did_you_mean(key, known)}: {_LISTED}")
    require = require or {}
    first = [o for o in info.options if f"{info.name}.{o.name}" in require]
    values: dict[str, Any] = {}
    for opt in first + [o for o in info.options if o not in first]:
        label = f"{info.name}.{opt.name}"
        condition = _condition(opt, values, core or {})
        why = f"needed when {condition}" if condition else require.get(label)
        required = opt.required and opt.default is None or why is not None
        if opt.name in given:
            values[opt.name] = convert(info.name, opt, given[opt.name], opt.name not in unchecked, values, not recorded)
            if condition and values[opt.name] in ("", None):
                raise RlgenError(f"{label}: a value is required when {condition}")
        elif ask is not None and (opt.ask or required):
            if why:
                click.echo(f"{label}: {why}", err=True)
            values[opt.name] = _asked(info.name, opt, ask, values, required)
            given[opt.name] = values[opt.name]
        elif required:
            missing.append(label + (f" ({why})" if why else ""))
            values[opt.name] = None
        else:
            values[opt.name] = opt.default
        if opt.ask:
            # Recorded even at its default: rlgen.yaml states what the repository uses.
            given.setdefault(opt.name, values[opt.name])
    # The options' own order: rlgen.yaml and every reader see the same mapping whatever was asked first.
    return {o.name: values[o.name] for o in info.options}, given


def _condition(opt: Option, values: dict[str, Any], core: dict[str, Any]) -> str | None:
    """"NAME=VALUE" (or the reason its predicate gives) when ``opt`` is required because of an
    earlier answer (or rlgen's own, ``core``), else None."""
    if opt.required_when is None:
        return None
    name, value = opt.required_when
    given = condition_answer(opt, values, core)
    why = value(given) if callable(value) else given == value
    return (why if isinstance(why, str) else f"{name}={given}") if why else None


def _missing(missing: list[str], infos) -> RlgenError:
    """Every missing answer at once, one line each with the --set that gives it: one run of
    --no-input tells the whole list."""
    helps = {f"{i.name}.{o.name}": _short(o.help) for i in infos for o in i.options}
    entries = [m.partition(" (") for m in missing]  # "PLUGIN.OPTION (why it is needed)"
    count = f"{len(missing)} required answers are" if len(missing) > 1 else "a required answer is"
    return RlgenError(f"{count} missing: give each with --set (on a terminal rlgen new asks for them)",
                      tuple(f"--set {name}=VALUE ({helps[name]}{'; ' + why[:-1] if why else ''})"
                            for name, _, why in entries))


def _short(text: str) -> str:
    """An option's help up to its first parenthesis or semicolon: what the answer is, on one line."""
    cut = min((i for i in (text.find(" ("), text.find("; ")) if i > 0), default=len(text))
    return text[:cut]


def _asked(plugin: str, opt: Option, ask: Callable[[str, Option], str], earlier: dict[str, Any] | None = None,
           required: bool = False) -> Any:
    """An answer typed at the prompt, asked again until it passes the option's checks, those
    against the ``earlier`` answers included, and is not empty when ``required``."""
    while True:
        raw = ask(plugin, opt)
        try:
            value = convert(plugin, opt, raw, earlier=earlier)
            if required and value in ("", None):
                raise RlgenError(f"{plugin}.{opt.name}: a value is required")
            return value
        except RlgenError as exc:
            click.echo(f"rlgen: {exc}", err=True)


def check_clusters(selection: Selection) -> None:
    """Extra clusters: names and environments DNS labels (they name folders and sync objects;
    an environment other than production and staging gets an overlay of its own), none named
    like the main cluster."""
    primary = selection.values["rlgen"]["cluster"]
    for name, env in selection.clusters.items():
        if problem := dns1123_label_error(name):
            raise RlgenError(f"cluster name {problem}")
        if name == primary:
            raise RlgenError(f"'{name}' is the main cluster (rlgen.cluster)")
        if problem := dns1123_label_error(env):
            raise RlgenError(f"cluster {name}: environment {problem}")


def convert(plugin: str, opt: Option, raw: Any, check: bool = True, earlier: dict[str, Any] | None = None,
            text: bool = True) -> Any:
    """``raw`` (typed text from ``--set`` or a prompt, or a value of ``rlgen.yaml``) as the
    option's type: a text is parsed, a value read from YAML must already be of that type (a
    ``true`` is no count of GPUs, a ``4.9`` no integer, a list no registry). ``text``: a string
    ``raw`` is typed text; else it is YAML's string, and no number or flag. ``check``: the
    option's own check too, and its ``cross_check`` against the ``earlier`` answers of the plugin."""
    label = f"{plugin}.{opt.name}"
    if isinstance(raw, str) and (problem := control_error(raw) or credential_error(raw)):
        raise RlgenError(f"{label}: {problem}")
    if opt.type is bool and isinstance(raw, str) and text:
        lowered = raw.strip().lower()
        if lowered not in ("true", "false", "yes", "no", "1", "0"):
            raise RlgenError(f"{label}: '{raw}' is not true or false")
        value: Any = lowered in ("true", "yes", "1")
    elif not isinstance(raw, str) or not text:
        value = _typed(label, opt, raw)
    else:
        try:
            value = opt.type(raw.strip() if opt.type in (int, float) else raw)
        except (TypeError, ValueError, OverflowError):
            raise RlgenError(f"{label}: '{raw}' is not a valid {opt.type.__name__}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise RlgenError(f"{label}: '{raw}' is not a finite number")
    if opt.choices and value not in opt.choices:
        raise RlgenError(f"{label}: '{value}' is not one of {', '.join(opt.choices)}")
    if opt.required and value in ("", None):
        raise RlgenError(f"{label}: a value is required")
    if check and opt.check and (message := opt.check(value)):
        raise RlgenError(f"{label}: {message}")
    if check and opt.cross_check and earlier is not None and (message := opt.cross_check(value, earlier)):
        raise RlgenError(f"{label}: {message}")
    return value


def _typed(label: str, opt: Option, raw: Any) -> Any:
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}.get(opt.type)
    if kinds is None:
        return opt.type(raw)
    if isinstance(raw, bool) and opt.type is not bool or not isinstance(raw, kinds):
        raise RlgenError(f"{label}: {_shown(raw)} is not {_KIND_NAMES[opt.type]}")
    return opt.type(raw)


_KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def _shown(value: Any) -> str:
    return json.dumps(value, default=str)[:80]


def _did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known: {', '.join(sorted(known))})" if known else ""

