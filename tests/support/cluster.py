"""Run ``rlgen doctor``/``rlgen status`` in a repository against a recorded-object server."""
from __future__ import annotations

import json
import socket
from pathlib import Path

from support.fake_apiserver import FakeAPIServer
from support.repos import rlgen_in


def against(repo: Path, objects, *args: str, forbidden=(), garbage=False):
    """``rlgen ARGS --kubeconfig <server's> -o json`` in ``repo``: (result, server)."""
    with FakeAPIServer(objects, forbidden=forbidden, garbage=garbage) as server:
        config = server.kubeconfig(repo.parent / f"kubeconfig-{id(server)}.json")
        result = rlgen_in(repo, *args, "--kubeconfig", str(config), "-o", "json")
    return result, server


def rows(result) -> dict[str, dict]:
    """The JSON rows by their first column (check or run)."""
    doc = json.loads(result.stdout)
    return {(r.get("check") or r.get("run")): r for r in doc["rows"]}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
