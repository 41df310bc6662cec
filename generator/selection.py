"""From installed plugins and the user's answers to one validated selection.

Discovery loads every entry point of the group ``rlgen`` (built-in and third-party alike);
selection picks one plugin per slot and checks every option; :class:`Context` is what the
contribution hooks receive.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Callable

import pluggy

from rlgen import hookspecs
from rlgen.contributions import SLOTS, Option, PluginInfo, Problem
from rlgen.errors import RlgenError
from rlgen.naming import HASH_LENGTH, MAX_RAYJOB_NAME, dns1035_label_error, dns1123_label_error
from rlgen.spec import Spec

#: The plugin a slot gets when the user picks none (DESIGN.md section 2).
DEFAULT_PLUGINS = {
    "sandbox": "opensource-sandbox",
    "storage": "ak-storage",
    "dataset": "gsm8k",
    "rollout": "vllm",
    "sync": "flux",
}

def _run_name_error(run: str) -> str | None:
    # The RayJob is named <run>-<hash>; KubeRay refuses names over 47 characters.
    limit = MAX_RAYJOB_NAME - HASH_LENGTH - 1
    if len(run) > limit:
        return f"'{run}' gives a RayJob name over {MAX_RAYJOB_NAME} characters (use at most {limit})"
    return dns1035_label_error(run)


#: Options of the generator itself, set as ``--set rlgen.NAME=VALUE``.
CORE = PluginInfo(
    name="rlgen",
    slot="",
    summary="Repository-wide settings",
    options=(
        Option("namespace", "Namespace of the training objects", "rl-training", check=dns1123_label_error),
        Option("cluster", "Cluster name (clusters/<cluster>/ holds the sync entry points)", "production",
               check=dns1123_label_error),
        Option("git_url", "URL the sync engine pulls this repository from", "ssh://git@example.com/platform/rl-repo.git"),
        Option("git_branch", "Branch the sync engine follows", "main"),
        Option("model", "Hugging Face model to train (default: the dataset plugin's)", ""),
        Option("dataset_source", "Hugging Face dataset the dataset Job loads (default: the dataset plugin's)", ""),
        Option("verl_version", "verl release the trainer config and images target", "0.7.1"),
        Option("gpus_per_node", "GPUs of each Ray node", 8, int, check=lambda v: None if v > 0 else "must be > 0"),
        Option("nnodes", "Ray nodes of a run", 1, int, check=lambda v: None if v > 0 else "must be > 0"),
        Option("training_image", "Repository the training image is pushed to",
               "registry.example.com/rl/verl-training"),
        Option("data_image", "Image of the dataset Job (images/data/Dockerfile)",
               "registry.example.com/rl/rlgen-data:0.1.0"),
        Option("environment", "Platform overlay the cluster syncs", "production",
               choices=("production", "staging")),
        Option("run", "Name of the first training run", "baseline", check=_run_name_error),
    ),
)


@dataclass(frozen=True)
class Installed:
    module: Any
    info: PluginInfo
    version: str


def discover() -> dict[str, Installed]:
    """Every plugin registered under the ``rlgen`` entry-point group, by name."""
    found: dict[str, Installed] = {}
    catalog = pluggy.PluginManager("rlgen")
    catalog.add_hookspecs(hookspecs)
    for ep in sorted(entry_points(group="rlgen"), key=lambda e: e.name):
        try:
            module = ep.load()
        except Exception as exc:  # a broken third-party plugin must not break rlgen
            raise RlgenError(f"plugin '{ep.name}' failed to load: {exc}") from None
        catalog.register(module, name=ep.name)
        info = _describe(catalog, module)
        if info is None or info.name != ep.name:
            raise RlgenError(f"plugin '{ep.name}' must describe itself as '{ep.name}' in rlgen_plugin()")
        if info.slot not in SLOTS:
            raise RlgenError(f"plugin '{ep.name}' names unknown slot '{info.slot}' (slots: {', '.join(SLOTS)})")
        found[ep.name] = Installed(module, info, ep.dist.version if ep.dist else "")
    return found


def _describe(pm: pluggy.PluginManager, module: Any) -> PluginInfo | None:
    for impl in pm.hook.rlgen_plugin.get_hookimpls():
        if impl.plugin is module:
            return impl.function()
    return None


@dataclass
class Selection:
    """One plugin per slot, with every option converted and checked."""

    plugins: dict[str, str]
    installed: dict[str, Installed]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def infos(self) -> list[PluginInfo]:
        return [CORE] + [self.installed[self.plugins[slot]].info for slot in SLOTS]


def choose(installed: dict[str, Installed], names: list[str]) -> dict[str, str]:
    """Slot -> plugin name, from ``--plugin`` names and the defaults."""
    chosen: dict[str, str] = {}
    for name in names:
        if name not in installed:
            raise RlgenError(f"unknown plugin '{name}'{_did_you_mean(name, installed)}")
        slot = installed[name].info.slot
        if slot in chosen and chosen[slot] != name:
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
    return chosen


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
) -> Selection:
    """Validate the whole input. ``ask`` prompts for a missing required option; without it
    (``--no-input`` or no terminal) a missing required option is an error."""
    plugins = choose(installed, plugin_names)
    selection = Selection(plugins, installed)
    infos = {info.name: info for info in selection.infos()}
    for name in sets:
        if name not in infos:
            where = "not selected" if name in installed else "unknown"
            raise RlgenError(f"--set names plugin '{name}', which is {where}{_did_you_mean(name, infos)}")
    for info in infos.values():
        given = dict(sets.get(info.name, {}))
        known = {o.name: o for o in info.options}
        for key in given:
            if key not in known:
                raise RlgenError(f"plugin '{info.name}' has no option '{key}'{_did_you_mean(key, known)}")
        values: dict[str, Any] = {}
        for opt in info.options:
            if opt.name in given:
                raw = given[opt.name]
            elif opt.required and opt.default is None:
                if ask is None:
                    raise RlgenError(
                        f"missing required option {info.name}.{opt.name} ({opt.help}): "
                        f"--set {info.name}.{opt.name}=VALUE")
                raw = ask(info.name, opt)
                given[opt.name] = raw
            else:
                values[opt.name] = opt.default
                continue
            values[opt.name] = convert(info.name, opt, raw)
        selection.values[info.name] = values
        if given:
            selection.answers[info.name] = {k: values[k] for k in given}
    return selection


def convert(plugin: str, opt: Option, raw: Any) -> Any:
    label = f"{plugin}.{opt.name}"
    if opt.type is bool and isinstance(raw, str):
        lowered = raw.strip().lower()
        if lowered not in ("true", "false", "yes", "no", "1", "0"):
            raise RlgenError(f"{label}: '{raw}' is not true or false")
        value: Any = lowered in ("true", "yes", "1")
    else:
        try:
            value = opt.type(raw)
        except (TypeError, ValueError):
            raise RlgenError(f"{label}: '{raw}' is not a valid {opt.type.__name__}") from None
    if opt.choices and value not in opt.choices:
        raise RlgenError(f"{label}: '{value}' is not one of {', '.join(opt.choices)}")
    if opt.required and value in ("", None):
        raise RlgenError(f"{label}: a value is required")
    if opt.check and (message := opt.check(value)):
        raise RlgenError(f"{label}: {message}")
    return value


def _did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (known: {', '.join(sorted(known))})" if known else ""


class Context:
    """What every contribution hook receives (see :mod:`rlgen.hookspecs`)."""

    def __init__(self, selection: Selection, spec: Spec):
        self.spec = spec
        self.plugins = dict(selection.plugins)
        self._values = selection.values

    def options(self, plugin: str) -> dict[str, Any]:
        return dict(self._values.get(plugin, {}))


def plugin_manager(selection: Selection) -> pluggy.PluginManager:
    """A plugin manager holding only the selected plugins; misspelled hooks fail here."""
    pm = pluggy.PluginManager("rlgen")
    pm.add_hookspecs(hookspecs)
    for slot in SLOTS:
        name = selection.plugins[slot]
        pm.register(selection.installed[name].module, name=name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise RlgenError(f"plugin error: {exc}") from None
    return pm


def problems(pm: pluggy.PluginManager, ctx: Context) -> list[Problem]:
    return [p for batch in pm.hook.rlgen_check(ctx=ctx) for p in (batch or [])]
