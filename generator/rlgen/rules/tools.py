"""The trainer's tool config against the tool it calls, and what the repository commits:
verl's MCP search tool keeps only a '"results": [...]' substring of the answer (Tavily
output), so with a code-execution tool the model would never see stdout or errors; verl's
MCP loader reads ``config.rate_limit`` unconditionally, and verl 0.9 loads no MCP tool at all;
a Secret with values in Git is a leak; and verl's ``tool_agent`` cuts every tool answer longer
than ``multi_turn.max_tool_response_length`` characters (default 256), so a tool that may answer
more (its ``config.max_output_chars``) loses the middle of its answer."""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator

from rlgen.tools.yamlio import read_plain
from rlgen.repo.objects import get
from rlgen.rules.base import Finding, Rendered
from rlgen.rules.rayjob import trainer_config
from rlgen.rules.secrets import PLAINTEXT, is_sealed
from rlgen.verl import releases
from rlgen.verl.trainer_config import OUTPUT_LIMIT, RESPONSE_LIMIT

SEARCH_TOOL = "verl.tools.mcp_search_tool.MCPSearchTool"
BASE_TOOL = "verl.tools.mcp_base_tool.MCPBaseTool"
#: The tools of the OpenKruise sandbox MCP server (openkruise/agents#165 use-mcp.md).
CODE_TOOLS = {"run_code", "run_code_once", "run_command"}


@lru_cache(maxsize=64)
def _tools(raw: str) -> list[dict]:
    """The tool entries; ValueError when verl could not load the file. Runs mostly share one
    file: each distinct text is read once (the entries are only read, never changed)."""
    try:
        doc = read_plain(raw) or {}
    except Exception as exc:  # noqa: BLE001 - any parser error means verl fails the same way
        raise ValueError(" ".join(str(exc).split())[:200]) from None
    tools = doc.get("tools") if isinstance(doc, dict) else None
    return [t for t in tools or [] if isinstance(t, dict)]


def tool_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        raw = (item.obj.get("data") or {}).get("tool_config.yaml") if item.obj.get("kind") == "ConfigMap" else None
        if not raw:
            continue
        try:
            tools = _tools(raw)
        except ValueError as exc:
            yield Finding(item.source, item.label, f"tool_config.yaml is not valid YAML: {exc}")
            continue
        release = releases.of_object(item.obj)
        for tool in tools:
            cls = tool.get("class_name", "")
            kind = get(tool, "config", "type")
            if kind not in release.tool_types:
                yield Finding(item.source, item.label, f"tool {cls} has config.type {kind!r}, but verl {release.version} "
                                                       f"loads only {', '.join(release.tool_types)} tools")
                continue
            if kind != "mcp":
                continue
            if get(tool, "config", "rate_limit") is None:
                yield Finding(item.source, item.label, f"MCP tool {cls} has no config.rate_limit, which verl requires")
            selected = set(get(tool, "mcp", "tool_selected_list", default=[]) or [])
            if cls == SEARCH_TOOL and (code := ", ".join(sorted(selected & CODE_TOOLS))):
                yield Finding(item.source, item.label, f"{cls} returns only a search 'results' list, so {code} "
                                                       f"output never reaches the model: use {BASE_TOOL}")


def tool_response_rules(objects: list[Rendered]) -> Iterator[Finding]:
    """A tool config and the trainer config it runs with, out of step (a hand edit of either)."""
    for item in objects:
        raw = (item.obj.get("data") or {}).get("tool_config.yaml") if item.obj.get("kind") == "ConfigMap" else None
        if not raw or (cfg := trainer_config(item.obj)) is None:
            continue
        try:
            tools = _tools(raw)
        except ValueError:
            continue  # tool_rules reports it
        release, key = releases.of_object(item.obj), f"actor_rollout_ref.rollout.multi_turn.{RESPONSE_LIMIT}"
        limit = get(cfg, *key.split("."))
        said = str(limit)
        if limit is None:
            limit = release.defaults[key]
            said = f"unset (verl {release.version}'s default: {limit})"
        if not _count(limit):
            continue  # Hydra refuses a config whose limit is no number before any tool is called
        for tool in tools:
            longest = get(tool, "config", OUTPUT_LIMIT)
            if _count(longest) and longest > limit:
                name = get(tool, "tool_schema", "function", "name") or tool.get("class_name", "")
                yield Finding(item.source, item.label,
                              f"tool {name} answers up to {longest} characters (config.{OUTPUT_LIMIT} in "
                              f"tool_config.yaml) but {key} is {said}: verl cuts every longer answer to "
                              f"{limit} characters; set it to at least {longest}")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def secret_value_rules(objects: list[Rendered]) -> Iterator[Finding]:
    for item in objects:
        if item.obj.get("kind") == "Secret" and (item.obj.get("data") or item.obj.get("stringData")) \
                and not is_sealed(item.obj):
            yield Finding(item.source, item.label, PLAINTEXT)


MCP_UNVERIFIED = ("the MCP endpoint (path, port, E2B-API-KEY header) follows the unmerged "
                  "openkruise/agents#165 and cannot be verified offline: check it against the "
                  "sandbox-manager image on the cluster")
#: The sandbox plugins' answer that the team checked it (rlgen_plugins._sandbox_common).
MCP_CHECKED_OPTION = "mcp_checked"


def mcp_warnings(objects: list[Rendered]) -> Iterator[Finding]:
    """Not a problem, but something no offline check can settle."""
    for item in objects:
        if item.obj.get("kind") == "ConfigMap" and "mcp_server.json" in (item.obj.get("data") or {}):
            yield Finding(item.source, item.label, MCP_UNVERIFIED)


def acknowledged(cautions: list[Finding], ctx) -> list[Finding]:
    """``cautions`` without the MCP warning once the team recorded in ``rlgen.yaml`` that it
    checked the endpoint (the sandbox plugin's ``mcp_checked`` answer), else with it saying
    how to record that: a warning repeated on every validate of every variant, which nobody
    can answer, teaches the team to skip warnings."""
    sandbox = ctx.plugins.get("sandbox")
    options = ctx.options(sandbox) if sandbox else {}
    if MCP_CHECKED_OPTION not in options:
        return cautions
    if options[MCP_CHECKED_OPTION] is True:
        return [w for w in cautions if w.message != MCP_UNVERIFIED]
    how = (f"; once checked, `rlgen update --set {sandbox}.{MCP_CHECKED_OPTION}=true` records it in "
           "rlgen.yaml and this warning stops")
    return [Finding(w.source, w.obj, w.message + how, w.fix) if w.message == MCP_UNVERIFIED else w
            for w in cautions]
