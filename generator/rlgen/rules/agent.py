"""verl's agent loop against the tool setup. verl (0.7.1 and 0.9.x) runs each row's ``agent_name``
loop, or ``actor_rollout_ref.rollout.agent.default_agent_loop`` (``single_turn_agent``) when the rows
carry none; only the release's tool loop (``tool_agent``) calls tools. So a trainer config that lists tools for rows of
another loop trains without ever calling them, and nothing fails. The rows' loop comes from
the dataset plugin's declaration (:attr:`DatasetFormat.agent_name`), so no data is read."""
from __future__ import annotations

from functools import lru_cache
from pathlib import PurePosixPath
from typing import Iterator

from rlgen.plugin_host.discovery import dataset_format, discover
from rlgen.repo.objects import get
from rlgen.rules.base import Finding, Rendered
from rlgen.rules.rayjob import trainer_config
from rlgen.verl import releases

DEFAULT_LOOP = "single_turn_agent"


_NOT_PREPARED = object()


@lru_cache(maxsize=None)
def declared_agent(dataset: str):
    """The agent loop the rows of installed dataset plugin ``dataset`` name (``None``: they
    name none), or :data:`_NOT_PREPARED` when no dataset plugin has that name. Only that plugin
    is loaded: loading every installed one would import each plugin's module for one answer."""
    installed = discover()
    if dataset not in installed or installed[dataset].info.slot != "dataset":
        return _NOT_PREPARED
    return dataset_format(installed, dataset).agent_name


def agent_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        if item.obj.get("kind") != "ConfigMap" or (cfg := trainer_config(item.obj)) is None:
            continue
        # The dataset Job uploads each dataset to a folder of its own name, which the trainer reads.
        train_files = get(cfg, "data", "train_files")
        dataset = PurePosixPath(str(train_files)).parent.name if isinstance(train_files, str) else None
        declared = declared_agent(dataset) if dataset else _NOT_PREPARED
        if declared is _NOT_PREPARED:
            continue  # data the repository does not prepare: its rows are the user's business
        release = releases.of_object(item.obj)
        rollout = get(cfg, "actor_rollout_ref", "rollout", default={}) or {}
        loop = declared or get(rollout, "agent", "default_agent_loop") or DEFAULT_LOOP
        source = "its rows' agent_name" if declared else "agent.default_agent_loop"
        tools = get(rollout, "multi_turn", "tool_config_path")
        say = lambda message: Finding(item.source, item.label, message)
        if loop not in release.agent_loops and not get(rollout, "agent", "agent_loop_config_path"):
            yield say(f"{dataset} rows run agent loop '{loop}' ({source}), which verl registers only "
                      f"through actor_rollout_ref.rollout.agent.agent_loop_config_path")
        elif tools and loop != release.tool_agent:
            yield say(f"the trainer lists tools ({tools}) but {dataset} rows run '{loop}' ({source}), which never "
                      f"calls a tool: name {release.tool_agent} in the rows or in actor_rollout_ref.rollout.agent."
                      "default_agent_loop")
        elif not tools and loop == release.tool_agent:
            yield say(f"{dataset} rows run {release.tool_agent} ({source}) but the trainer config sets no "
                      "actor_rollout_ref.rollout.multi_turn.tool_config_path: there is no tool to call")
