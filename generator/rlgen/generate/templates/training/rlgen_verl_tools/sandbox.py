"""The code-execution tool: runs the model's code in the sandbox through the sandbox manager's
MCP endpoint and answers with what the code printed.

Tool config ``config`` keys: ``mcp_servers_config_path`` (an ``mcpServers`` JSON file, headers
included), ``remote_tool`` (the endpoint's tool, default ``run_code_once``), ``timeout``
(seconds per call) and ``max_output_chars`` (the longest answer: longer output is cut, and a
marker saying so fits within it). rlgen sets verl's ``max_tool_response_length`` to the same
number, so verl never cuts the answer again.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Optional
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT = 4000
TRUNCATED = "\n[output truncated: {shown} of {total} characters shown]"


def truncate(text: str, limit: int) -> str:
    """``text`` cut, with a marker the model can read, to ``limit`` characters in all."""
    if len(text) <= limit:
        return text
    # The marker naming ``limit`` is at least as long as the one naming what is shown.
    shown = max(0, limit - len(TRUNCATED.format(shown=limit, total=len(text))))
    return text[:shown] + TRUNCATED.format(shown=shown, total=len(text))


def result_text(result: Any) -> tuple[str, bool]:
    """(every text part of an MCP tool result, whether the server marked it an error)."""
    parts = [getattr(item, "text", None) for item in (getattr(result, "content", None) or [])]
    text = "\n".join(p for p in parts if p)
    structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
    if not text and structured:
        text = json.dumps(structured, sort_keys=True)
    return text, bool(getattr(result, "isError", False) or getattr(result, "is_error", False))


class SandboxCodeTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self.servers_path = config["mcp_servers_config_path"]
        self.remote_tool = config.get("remote_tool", "run_code_once")
        self.timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
        self.max_output = int(config.get("max_output_chars", DEFAULT_MAX_OUTPUT))

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        return instance_id or str(uuid4()), ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        code = parameters.get("code")
        if not isinstance(code, str) or not code.strip():
            return ToolResponse(text="Error: pass the Python code to run as the string argument 'code'."), 0.0, {}
        try:
            text, failed = await asyncio.wait_for(self._run(code), self.timeout)
        except asyncio.TimeoutError:
            return ToolResponse(text=f"Error: the sandbox gave no answer within {self.timeout:g} seconds."), 0.0, \
                {"sandbox_error": "timeout"}
        except Exception as exc:  # noqa: BLE001 - any failure is the model's answer, never the rollout's end
            message = " ".join(str(exc).split()) or type(exc).__name__
            return ToolResponse(text=f"Error: the sandbox could not run the code: {message}"), 0.0, \
                {"sandbox_error": type(exc).__name__}
        if failed:
            text = f"Error: the sandbox reported a failure: {text or 'no details'}"
        return ToolResponse(text=truncate(text, self.max_output)), 0.0, {"output_chars": len(text)}

    async def _run(self, code: str) -> tuple[str, bool]:
        # fastmcp ships in the training image; imported here so loading the tool config needs none.
        from fastmcp import Client

        with open(self.servers_path, encoding="utf-8") as f:
            servers = json.load(f)
        # One session per call: a sandbox-manager replica restart costs one call, not the run.
        async with Client(servers, timeout=self.timeout) as client:
            result = await client.call_tool_mcp(self.remote_tool, {"code": code})
        return result_text(result)
