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
from rlgen.option_checks import (
    control_error,
    credential_error,
    git_branch_error,
    git_url_error,
    hub_id_error,
    image_reference_error,
    int_range,
    plain_http_error,
    registry_error,
    revision_error,
)
from rlgen.errors import RlgenError
from rlgen.naming import (
    HASH_LENGTH,
    image_host,
    is_example_host,
    GIT_HOSTS,
    git_host_error,
    known_git_host,
    unknown_git_host,
    url_host,
    MAX_RAYJOB_NAME,
    dns1035_label_error,
    dns1123_label_error,
)
from rlgen.plugin_host import install
from rlgen.plugin_host.discovery import Installed
from rlgen.plugin_host.manager import Hooks
from rlgen.plugin_info import DEFAULT_PLUGINS, SLOTS, Option, PluginInfo
from rlgen.spec import DEFAULT_GIT_BRANCH, ENVIRONMENTS, GANG_SCHEDULERS, NETWORKS, Spec
from rlgen.verl import releases

if TYPE_CHECKING:
    from rlgen.contributions import Context, DatasetFormat
    from rlgen.plugin_host.manager import Hooks


def _run_name_error(run: str) -> str | None:
    # The RayJob is named <run>-<hash>; KubeRay refuses names over 47 characters.
    limit = MAX_RAYJOB_NAME - HASH_LENGTH - 1
    if len(run) > limit:
        return f"'{run}' gives a RayJob name over {MAX_RAYJOB_NAME} characters (use at most {limit})"
    return dns1035_label_error(run)


def _registry_error(value: str) -> str | None:
    if "://" in value or value.endswith("/") or ":" in value.rpartition("/")[2] or "@" in value:
        return f"'{value}' is not a registry path like registry.<region>.aliyuncs.com/team (no scheme, tag or digest)"
    return registry_error(value) or _example_domain(value.split("/")[0].split(":")[0])


def _git_url_error(value: str) -> str | None:
    return git_url_error(value) or plain_http_error(value) or _example_domain(url_host(value))


def _mirror_error(value: str) -> str | None:
    """A prefix, not a repository: rlgen appends each upstream repository's /<owner>/<repo>."""
    if not value:
        return None
    if problem := plain_http_error(value):
        return problem
    if _git_url_error(value.rstrip("/") + "/owner/repo.git") or value.startswith("git@"):
        return f"'{value}' is not a Git URL prefix like https://git.my-team.com/mirrors"
    return None


def _image_error(value: str) -> str | None:
    return (image_reference_error(value) or _example_domain(image_host(value))) if value else None


def _example_domain(host: str) -> str | None:
    if is_example_host(host):
        return f"'{host}' is a reserved example domain: nothing can be pulled from it"
    return None


def _label_value_error(value: str) -> str | None:
    # Both end up as label values on the RayJob.
    return dns1123_label_error(value) if value else None


#: Options of the generator itself, set as ``--set rlgen.NAME=VALUE``.
CORE = PluginInfo(
    name="rlgen",
    slot="",
    summary="Repository-wide settings",
    options=(
        Option("namespace", "Namespace of the training objects", "rl-training", check=dns1123_label_error),
        Option("cluster", "Cluster name (clusters/<cluster>/ holds the sync entry points)", "production",
               check=dns1123_label_error),
        # The team's own registry: images/training and images/data are built and pushed there.
        Option("registry", "Image registry and namespace the team pushes to, e.g. registry.<region>.aliyuncs.com/rl",
               required=True, check=_registry_error),
        # No default: a placeholder URL would give a repository the sync engine can never fetch.
        Option("git_url", "URL the sync engine pulls this repository from (default: the target's origin)",
               required=True, check=_git_url_error),
        # The push webhook's signature follows the host's kind, which only github.com's and
        # gitlab.com's names tell: any other host is asked, never guessed.
        Option("git_host", "How git_url's host signs push webhooks: github (GitHub, GitHub Enterprise, Gitea), "
               "gitlab (GitLab, self-managed too) or generic-hmac (X-Signature: sha256=<HMAC of the body>); "
               "default: told by github.com and gitlab.com", "", choices=GIT_HOSTS,
               required_when=("git_url", unknown_git_host), cross_check=git_host_error),
        Option("git_branch", "Branch the sync engine follows", DEFAULT_GIT_BRANCH, check=git_branch_error),
        # Clusters that cannot reach GitHub (common on ACK in mainland China) fetch upstream
        # roots from a mirror that keeps GitHub's owner/name paths.
        Option("upstream_mirror", "Git URL that replaces https://github.com in the upstream repositories the "
               "cluster fetches (e.g. https://git.my-team.com/mirrors); empty: GitHub itself", "",
               check=_mirror_error),
        Option("model", "Hugging Face model to train (default: the dataset plugin's)", "",
               check=lambda v: hub_id_error(v) if v else None),
        Option("model_source", "Hub the model Job downloads the model from", "huggingface",
               choices=("huggingface", "modelscope")),
        Option("model_revision", "Branch, tag or commit of the model (default: the hub's default branch)", "",
               check=lambda v: revision_error(v) if v else None),
        Option("dataset_source", "Hugging Face dataset the dataset Job loads (default: the dataset plugin's)", "",
               check=lambda v: hub_id_error(v) if v else None),
        Option("verl", "verl release the trainer config, tools and images target (0.7.1: the tutorial's)",
               releases.DEFAULT, choices=releases.SUPPORTED),
        Option("gpus_per_node", "GPUs of each Ray node", 8, int, check=int_range(1, 1024)),
        Option("nnodes", "Ray nodes of a run", 1, int, check=int_range(1, 100000)),
        Option("training_image", "Repository the training image is pushed to (default: <registry>/verl-training)", "",
               check=_image_error),
        Option("data_image", "Image of the dataset Job, images/data/Dockerfile (default: <registry>/rlgen-data:0.1.0); "
               "its tag is followed by a hash of images/data",
               "", check=_image_error),
        Option("environment", "Platform overlay the cluster syncs", "production",
               choices=ENVIRONMENTS),
        Option("run", "Name of the first training run", "baseline", check=_run_name_error),
        Option("install", "pip requirement of rlgen for the repository's CI and the data image, "
                          "optionally with --index-url URL (e.g. 'rlgen @ git+https://host/rlgen.git@v0.1.0'; "
                          "default: where this rlgen was installed from)",
               install.DEFAULT, check=install.install_error),
        Option("plugin_packages", "pip requirements of the plugin distributions rlgen does not ship, installed "
                                  "beside rlgen by the CI and the data image, as a list "
                                  "('[\"my-plugin==1.2.0\"]'; default: where each was installed from)",
               (), install.requirement_list, check=install.requirements_error),
        Option("network", "NCCL between GPU nodes: tcp (pod network), rdma (ACK Lingjun, "
               "ack-rdma-device-plugin) or erdma (ACK eRDMA controller)", "tcp", choices=NETWORKS),
        Option("rdma_host_network", "With network=rdma: GPU pods on the host network (false only when "
               "ack-rdma-device-plugin enables RDMA for non-hostNetwork pods)", True, bool),
        Option("gang_scheduling", "Start a run's pods all or none: off, volcano (KubeRay --batch-scheduler=volcano) "
               "or coscheduling (ACK's kube-scheduler Gang scheduling)", "off", choices=GANG_SCHEDULERS),
        Option("queue", "Volcano queue of the runs (gang_scheduling=volcano)", "", check=_label_value_error),
        Option("priority_class", "PriorityClass of the runs' pods (gang_scheduling=volcano)", "",
               check=_label_value_error),
    ),
)


@dataclass
class Selection:
    """One plugin per slot, with every option converted and checked."""

    plugins: dict[str, str]
    installed: dict[str, Installed]
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Clusters besides ``rlgen.cluster``, name -> environment (``rlgen cluster add``).
    clusters: dict[str, str] = field(default_factory=dict)
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
        return Context(spec, {slot: self.plugins[slot] for slot in SLOTS}, self.values)

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
        dataset_source=core["dataset_source"] or (fmt.source if fmt else ""),
        model=core["model"] or (fmt.default_model if fmt else ""),
        training_image=core["training_image"] or f"{core['registry']}/verl-training",
        data_image=core["data_image"] or f"{core['registry']}/rlgen-data:0.1.0",
        rlgen_install=core["install"],
        git_host=core["git_host"] or known_git_host(core["git_url"] or ""),
        plugin_packages=tuple(core["plugin_packages"]),
        plugin_distributions=distributions,
        verl_version=core["verl"],
    )
    return Spec(**values)


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
) -> Selection:
    """Validate the whole input. ``ask`` prompts for a missing required option; without it
    (``--no-input`` or no terminal) every missing required option is listed in one error.
    ``require``: "PLUGIN.OPTION" -> why it is required though it has a default; asked first."""
    plugins = choose(installed, plugin_names)
    selection = Selection(plugins, installed)
    infos = {info.name: info for info in selection.infos()}
    for name in sets:
        if name not in infos:
            where = "not selected" if name in installed else "unknown"
            raise RlgenError(f"--set names plugin '{name}', which is {where}{_did_you_mean(name, infos)}")
    missing: list[str] = []
    for info in infos.values():
        values, given = _values(info, sets.get(info.name, {}), ask, missing, require=require)
        selection.values[info.name] = values
        if given:
            selection.answers[info.name] = {k: values[k] for k in given}
    if missing:
        raise _missing(missing, infos.values())
    # Recorded even when it is the default: a repository keeps its verl release when a newer
    # rlgen defaults to another, until rlgen update --set rlgen.verl=... moves it.
    selection.answers.setdefault(CORE.name, {})["verl"] = selection.values[CORE.name]["verl"]
    return selection


def core_values(sets: dict[str, dict[str, Any]], unchecked: tuple[str, ...] = ()) -> dict[str, Any]:
    """rlgen's own answers (``sets["rlgen"]``), converted and checked as :func:`select` does,
    without a plugin loaded; the options named in ``unchecked`` are converted to their type
    but their own check is not run."""
    missing: list[str] = []
    values, _ = _values(CORE, sets.get(CORE.name, {}), None, missing, unchecked)
    if missing:
        raise _missing(missing, [CORE])
    return values


def _values(info: PluginInfo, sets: dict[str, Any], ask: Callable[[str, Option], str] | None,
            missing: list[str], unchecked: tuple[str, ...] = (),
            require: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(every option of ``info`` converted, the options answered); a required option with no
    answer is added to ``missing``. Options are asked in their order: one required only under
    a condition (``required_when``) right after the answer that makes it so. ``require``
    names options required though they have a default, with why (``rlgen.install`` where the
    default cannot be used); they are asked before every other."""
    given = dict(sets)
    known = {o.name: o for o in info.options}
    for key in given:
        if key not in known:
            raise RlgenError(f"plugin '{info.name}' has no option '{key}'{_did_you_mean(key, known)}")
    require = require or {}
    first = [o for o in info.options if f"{info.name}.{o.name}" in require]
    values: dict[str, Any] = {}
    for opt in first + [o for o in info.options if o not in first]:
        label = f"{info.name}.{opt.name}"
        condition = _condition(opt, values)
        why = f"needed when {condition}" if condition else require.get(label)
        required = opt.required and opt.default is None or why is not None
        if opt.name in given:
            values[opt.name] = convert(info.name, opt, given[opt.name], opt.name not in unchecked, values)
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


def _condition(opt: Option, values: dict[str, Any]) -> str | None:
    """"NAME=VALUE" when ``opt`` is required because an earlier answer has that value, else None."""
    if opt.required_when is None:
        return None
    name, value = opt.required_when
    if callable(value):
        return value(values.get(name))
    return f"{name}={value}" if values.get(name) == value else None


def _missing(missing: list[str], infos) -> RlgenError:
    # Every missing answer at once: one run of --no-input tells the whole list.
    helps = {f"{i.name}.{o.name}": o.help for i in infos for o in i.options}
    entries = [m.partition(" (") for m in missing]  # "PLUGIN.OPTION (why it is needed)"
    return RlgenError(f"missing required option{'s' if len(missing) > 1 else ''} "
                      + "; ".join(f"{name} ({helps[name]}{'; ' + why[:-1] if why else ''})"
                                  for name, _, why in entries) + ": "
                      + " ".join(f"--set {name}=VALUE" for name, _, _ in entries))


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


def convert(plugin: str, opt: Option, raw: Any, check: bool = True, earlier: dict[str, Any] | None = None) -> Any:
    """``raw`` (typed text from ``--set`` or a prompt, or a value of ``rlgen.yaml``) as the
    option's type: a text is parsed, a value read from YAML must already be of that type (a
    ``true`` is no count of GPUs, a ``4.9`` no integer, a list no registry). ``check``: the
    option's own check too, and its ``cross_check`` against the ``earlier`` answers of the plugin."""
    label = f"{plugin}.{opt.name}"
    if isinstance(raw, str) and (problem := control_error(raw) or credential_error(raw)):
        raise RlgenError(f"{label}: {problem}")
    if opt.type is bool and isinstance(raw, str):
        lowered = raw.strip().lower()
        if lowered not in ("true", "false", "yes", "no", "1", "0"):
            raise RlgenError(f"{label}: '{raw}' is not true or false")
        value: Any = lowered in ("true", "yes", "1")
    elif not isinstance(raw, str):
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

