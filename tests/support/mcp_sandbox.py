"""A local stand-in for the sandbox manager's MCP endpoint: a FastMCP server (streamable HTTP
at /mcp) whose ``run_code_once`` runs the code in a Python subprocess and answers with what it
printed, like the code interpreter does. It refuses calls without the API key header.

Run as ``python -m support.mcp_sandbox PORT KEY``; :func:`serve` starts it for a test."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

HEADER = "e2b-api-key"


def main(port: int, key: str) -> None:
    from fastmcp import FastMCP
    from fastmcp.server.dependencies import get_http_headers

    server = FastMCP("sandbox")

    @server.tool
    def run_code_once(code: str) -> str:
        """Run Python code once and return its output."""
        if get_http_headers().get(HEADER) != key:
            raise ValueError("invalid API key")
        if "RAISE_IN_SERVER" in code:
            raise RuntimeError("sandbox pod was evicted")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        return done.stdout + done.stderr

    server.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(key: str):
    """The server's URL while it runs."""
    port = free_port()
    tests = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "support.mcp_sandbox", str(port), key], cwd=tests,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the MCP server did not start: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
