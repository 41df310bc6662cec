"""What a plugin says of itself: its slot and its options (:class:`PluginInfo`, what its
``rlgen_plugin`` hook returns), and the slots a selection fills. Apart from the other values of
:mod:`rlgen.contributions`, which re-exports these: checking rlgen's own answers needs only
these, not the types every other hook returns."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: Every slot of a selection and the plugin it gets when the user picks none, in the order
#: plugins are called and their results merged.
DEFAULT_PLUGINS = {
    "sandbox": "opensource-sandbox",
    "storage": "ak-storage",
    "dataset": "gsm8k",
    "rollout": "vllm",
    "sync": "flux",
    "tracking": "no-tracking",
    "secrets": "manual-secrets",
    "queue": "no-queue",
}
SLOTS = tuple(DEFAULT_PLUGINS)


@dataclass(frozen=True)
class Option:
    """One ``--set PLUGIN.NAME=VALUE`` option of a plugin.

    ``default=None`` with ``required=True`` makes ``rlgen new`` ask for it on a terminal
    (and list it among the missing answers off one): an answer naming something of the user's
    (a bucket, a region, a role) has no default. ``required_when=("auth", "rrsa")`` requires it
    only when the option ``auth``, listed before it, has the value ``rrsa``: then it is asked
    right after that answer; the value may be a predicate instead (``("region", in_mainland_china)``),
    which may return the reason itself (a string) in place of True, and the option one of rlgen's own
    answers, ``("rlgen.region", in_mainland_china)``. ``ask=True`` asks for it too,
    offering the default, and records the value in ``rlgen.yaml`` even when it is the default.
    ``check`` receives the converted value and returns an error message or ``None``;
    ``cross_check`` receives it and the plugin's values of the options listed before it (an
    endpoint against the region answered before it), and does the same.
    ``per_cluster=True``: an answer that differs from cluster to cluster (an RRSA OIDC provider,
    a quota): ``rlgen cluster add`` asks it for the new cluster, and only that cluster's entry
    points read its answer.
    """

    name: str
    help: str
    default: Any = None
    type: type = str
    required: bool = False
    choices: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None
    ask: bool = False
    required_when: tuple[str, Any] | None = None
    cross_check: Callable[[Any, dict[str, Any]], str | None] | None = None
    per_cluster: bool = False


@dataclass(frozen=True)
class PluginInfo:
    """What ``rlgen plugins`` shows and what selection needs: the plugin's slot and options."""

    name: str
    slot: str
    summary: str
    options: tuple[Option, ...] = ()


#: ``required_when`` naming one of rlgen's own answers rather than the plugin's.
CORE_ANSWER = "rlgen."


def condition_answer(option: Option, own: dict[str, Any], core: dict[str, Any], default: Any = None) -> Any:
    """The answer ``option.required_when`` tests: the plugin's own option, or rlgen's
    (``rlgen.NAME``); ``default`` when it is not answered."""
    name = option.required_when[0]
    if name.startswith(CORE_ANSWER):
        return core.get(name.removeprefix(CORE_ANSWER), default)
    return own.get(name, default)
