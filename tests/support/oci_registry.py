"""A local OCI registry: the pinned CNCF distribution (``registry`` of the toolchain) serving a
folder on 127.0.0.1, with its users in an htpasswd file, so that, like a team's registry, it
refuses anonymous reads and pushes. ``crane`` (the toolchain's, go-containerregistry) reads it."""
from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from support.controlplane import free_port, wait_until
from support.toolchain import tool


def _answers(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


@contextmanager
def serve(folder: Path, users: dict[str, str]) -> Iterator[str]:
    """``host:port`` of a registry storing its blobs under ``folder`` while it runs."""
    import bcrypt

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "htpasswd").write_text("".join(
        f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}\n"
        for user, password in users.items()))
    port = free_port()
    # JSON is YAML: the registry reads this as its config file.
    (folder / "config.yml").write_text(json.dumps({
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"},
        "auth": {"htpasswd": {"realm": "rlgen-tests", "path": str(folder / "htpasswd")}},
    }))
    log = (folder / "registry.log").open("wb")
    # No OpenTelemetry exporter: by default it would send traces to an OTLP collector on localhost.
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "none"}
    process = subprocess.Popen([tool("registry"), "serve", str(folder / "config.yml")], stdout=log,
                               stderr=subprocess.STDOUT, env=env)
    try:
        # Up when /v2/ asks for credentials.
        wait_until("the registry on 127.0.0.1", lambda: process.poll() is None and _answers(
            f"http://127.0.0.1:{port}/v2/") == 401, timeout=30, interval=0.1,
            on_timeout=lambda: (folder / "registry.log").read_text())
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def crane(*args: str, env: dict, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([tool("crane"), *args], env=env, input=input, capture_output=True)
