"""rlgen's verl tools (images/training/rlgen_verl_tools) as each verl release runs them: loaded
by the release's own tool registry from the repository's tool_config.yaml, then created,
executed and released the way its ``tool_agent`` loop does, against a local MCP sandbox server.

verl is loaded from ``.verl/<version>`` without its package ``__init__`` files, which import
torch and ray; the tool interface (``base_tool``, ``schemas``, ``tool_registry``) needs neither.
"""
from __future__ import annotations

import asyncio
import json
import sys
import types

import pytest
from rlgen.verl import releases
from support.mcp_sandbox import serve
from support.verl_config import verl_root

#: Where each release keeps its tool registry.
REGISTRY = {"0.7.1": "verl.tools.utils.tool_registry", "0.9.1": "verl.tools.tool_registry"}
KEY = "test-key"


@pytest.fixture(scope="module")
def sandbox():
    """The local MCP sandbox server's URL, one server for the module (it starts slowly)."""
    with serve(KEY) as url:
        yield url


@pytest.fixture(params=releases.SUPPORTED)
def verl(request, generate):
    """(verl's tool registry module, the repository's tool config path) for one release."""
    version = request.param
    repo = generate("--set", f"rlgen.verl={version}")
    root = verl_root(version)
    saved_modules, saved_path = dict(sys.modules), list(sys.path)
    for name in [n for n in sys.modules if n.split(".")[0] in ("verl", "rlgen_verl_tools")]:
        del sys.modules[name]
    for package in ("verl", "verl.utils", "verl.tools"):
        module = types.ModuleType(package)
        module.__path__ = [str(root / package.replace(".", "/"))]
        sys.modules[package] = module
    # verl.utils.ray_utils imports ray at the top for helpers a tool call never reaches; 0.9's
    # function tools import transformers' schema helper, which the native tools here never use.
    sys.modules.setdefault("ray", types.ModuleType("ray"))
    helpers = types.ModuleType("transformers.utils")
    helpers.get_json_schema = None
    sys.modules.setdefault("transformers", types.ModuleType("transformers"))
    sys.modules.setdefault("transformers.utils", helpers)
    sys.path.insert(0, str(repo / "images" / "training"))
    try:
        yield version, __import__(REGISTRY[version], fromlist=["x"]), repo
    finally:
        sys.modules.clear()
        sys.modules.update(saved_modules)
        sys.path[:] = saved_path


def _tools(registry, path) -> dict:
    return {tool.name: tool for tool in registry.initialize_tools_from_config(str(path))}


async def _call(tool, arguments: dict, create_kwargs: dict | None = None):
    """What tool_agent does for one tool call (verl/experimental/agent_loop/tool_agent_loop.py
    ``_call_tool``): a fresh instance, one execute, released at once; it never asks calc_reward."""
    instance_id, _ = await tool.create(create_kwargs=create_kwargs or {})
    try:
        response, step_reward, metrics = await tool.execute(instance_id, arguments, agent_data=None)
        return response, step_reward
    finally:
        await tool.release(instance_id)


def _servers(tmp_path, url: str, key: str = KEY):
    path = tmp_path / "mcp_server.json"
    # The file as the RayJob's mcp-credentials init container writes it.
    path.write_text(json.dumps({"mcpServers": {"sandbox": {"url": url, "transport": "http",
                                                           "headers": {"E2B-API-KEY": key}}}}))
    return path


def _sandbox_tool(registry, repo, tmp_path, url: str, key: str = KEY, **config):
    """The repository's sandbox tool entry, pointed at ``url`` (and ``config`` changes)."""
    from rlgen.tools import yamlio

    doc = yamlio.read_plain((repo / "base" / "training" / "tool_config.yaml").read_text())
    (entry,) = [t for t in doc["tools"] if "mcp_servers_config_path" in t["config"]]
    entry["config"].update(mcp_servers_config_path=str(_servers(tmp_path, url, key)), **config)
    path = tmp_path / "tool_config.yaml"
    path.write_text(yamlio.dump({"tools": [entry]}))
    return _tools(registry, path)["run_code_once"]


def test_the_release_registry_loads_every_tool_of_the_repository(verl):
    version, registry, repo = verl
    tools = _tools(registry, repo / "base" / "training" / "tool_config.yaml")
    assert set(tools) == {"run_code_once", "calc_gsm8k_reward"}
    base = sys.modules["verl.tools.base_tool"].BaseTool
    assert all(isinstance(t, base) for t in tools.values())
    assert type(tools["run_code_once"]).__module__ == "rlgen_verl_tools.sandbox"


def test_sandbox_output_reaches_the_model(verl, sandbox, tmp_path):
    _, registry, repo = verl
    tool = _sandbox_tool(registry, repo, tmp_path, sandbox)
    response, step = asyncio.run(_call(tool, {"code": "print(6 * 7)\nimport sys; print('oops', file=sys.stderr)"}))
    assert response.text == "42\noops\n" and step == 0.0


def test_long_output_is_truncated_with_a_marker(verl, sandbox, tmp_path):
    _, registry, repo = verl
    tool = _sandbox_tool(registry, repo, tmp_path, sandbox, max_output_chars=100)
    response, _ = asyncio.run(_call(tool, {"code": "print('x' * 5000)"}))
    marker = "\n[output truncated: 51 of 5001 characters shown]"
    assert response.text == "x" * 51 + marker and len(response.text) <= 100


def test_verl_passes_the_longest_sandbox_answer_whole(verl, sandbox, tmp_path):
    """tool_agent cuts a tool answer longer than multi_turn.max_tool_response_length characters in
    its middle (verl's default: 256): the run's config, composed in the release's own config
    tree, lets the sandbox tool's longest answer through, its own marker at the end."""
    from support.verl_config import compose_run, mounted_configs

    version, registry, repo = verl
    (configs := tmp_path / "configs").mkdir()
    cfg = compose_run(*mounted_configs(repo, "baseline", configs), version)
    tool = _sandbox_tool(registry, repo, tmp_path, sandbox)
    response, _ = asyncio.run(_call(tool, {"code": "print('x' * 100000)"}))
    assert response.text.endswith(" of 100001 characters shown]")
    assert len(response.text) <= cfg.actor_rollout_ref.rollout.multi_turn.max_tool_response_length


def test_a_timeout_is_a_tool_error_for_the_model(verl, sandbox, tmp_path):
    _, registry, repo = verl
    tool = _sandbox_tool(registry, repo, tmp_path, sandbox, timeout=2)
    response, _ = asyncio.run(_call(tool, {"code": "import time; time.sleep(20)"}))
    assert response.text == "Error: the sandbox gave no answer within 2 seconds."


def test_a_server_error_is_a_tool_error_for_the_model(verl, sandbox, tmp_path):
    _, registry, repo = verl
    tool = _sandbox_tool(registry, repo, tmp_path, sandbox)
    failed, _ = asyncio.run(_call(tool, {"code": "RAISE_IN_SERVER = 1"}))
    refused = asyncio.run(_call(_sandbox_tool(registry, repo, tmp_path, sandbox, key="wrong"), {"code": "print(1)"}))[0]
    assert failed.text.startswith("Error: the sandbox reported a failure:") and "evicted" in failed.text
    assert refused.text.startswith("Error: the sandbox reported a failure:") and "invalid API key" in refused.text


def test_an_unreachable_sandbox_is_a_tool_error_for_the_model(verl, tmp_path):
    from support.mcp_sandbox import free_port

    _, registry, repo = verl
    tool = _sandbox_tool(registry, repo, tmp_path, f"http://127.0.0.1:{free_port()}/mcp", timeout=20)
    response, _ = asyncio.run(_call(tool, {"code": "print(1)"}))
    assert response.text.startswith("Error: the sandbox could not run the code:")
    missing, _ = asyncio.run(_call(tool, {}))
    assert missing.text == "Error: pass the Python code to run as the string argument 'code'."


def test_gsm8k_reward_tool_grades_against_the_rows_ground_truth(verl):
    _, registry, repo = verl
    tool = _tools(registry, repo / "base" / "training" / "tool_config.yaml")["calc_gsm8k_reward"]
    truth = {"ground_truth": "1234"}  # as gsm8k rows carry it (tools_kwargs.create_kwargs)
    right, step = asyncio.run(_call(tool, {"answer": "so #### 1,234"}, truth))
    assert step == 0.0 and "is correct" in right.text
    wrong, step = asyncio.run(_call(tool, {"answer": "#### 1233"}, truth))
    assert step == 0.0 and "not correct" in wrong.text


def test_a_reward_tool_answer_depends_on_that_call_alone(verl):
    """tool_agent creates and releases the tool around every call, and its step rewards reach no
    score: a verdict and a step reward that depended on the trajectory's earlier calls would be
    a promise the tool cannot keep. The same answer gets the same reply, first or again."""
    _, registry, repo = verl
    tool = _tools(registry, repo / "base" / "training" / "tool_config.yaml")["calc_gsm8k_reward"]
    truth = {"ground_truth": "1234"}
    calls = [asyncio.run(_call(tool, {"answer": answer}, truth)) for answer in ("#### 7", "#### 1234", "#### 7")]
    (first, step_first), (_, step_right), (again, step_again) = calls
    assert first.text == again.text and "'#### 7' is not correct" in first.text
    assert step_first == step_right == step_again == 0.0


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_no_reward_manager_reads_tool_step_rewards(version):
    """Why the reward tools give no step reward: tool_agent collects them as ``tool_rewards`` in
    the batch, and nothing of the release outside the agent loop reads that key (the reward
    managers score the final response). A release that starts to read it fails here."""
    root = verl_root(version) / "verl"
    readers = sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                     if "tool_rewards" in path.read_text(encoding="utf-8")
                     and path.parent.relative_to(root).as_posix() != "experimental/agent_loop")
    assert readers == []


def test_geo3k_reward_tool_grades_boxed_answers(verl, generate):
    version, registry, _ = verl
    repo = generate("--set", f"rlgen.verl={version}", "--plugin", "geometry3k",
                    "--set", "rlgen.model=Qwen/Qwen2.5-VL-3B-Instruct")
    tool = _tools(registry, repo / "base" / "training" / "tool_config.yaml")["calc_geo3k_reward"]
    right, _ = asyncio.run(_call(tool, {"answer": r"the area is \boxed{12}"}, {"ground_truth": "12"}))
    assert "is correct" in right.text
    wrong, _ = asyncio.run(_call(tool, {"answer": r"\boxed{13}"}, {"ground_truth": "12"}))
    assert "not correct" in wrong.text
