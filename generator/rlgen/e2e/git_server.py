"""A Git server over HTTP on 127.0.0.1: git's own ``git http-backend`` behind a small CGI bridge.

Repositories are bare folders under one root, served at ``/<path>`` as a forge serves them
(``openkruise/agents``, ``team/rl-repo.git``): what Flux's source-controller fetches from, whose
GitRepository accepts http(s) and ssh URLs only. Pushes are accepted (``REMOTE_USER`` is set, which http-backend requires
before it runs receive-pack).
"""
from __future__ import annotations

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                handler.rfile.readline()
                return b"".join(chunks)
            chunks.append(handler.rfile.read(size))
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("Content-Length") or 0))


class _Backend(BaseHTTPRequestHandler):
    root: Path

    def log_message(self, format, *args):  # noqa: A002 - the name is http.server's
        pass

    def _cgi(self) -> None:
        url = urlsplit(self.path)
        body = _read_body(self) if self.command == "POST" else b""
        env = {
            "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "rlgen-test",
            "REQUEST_METHOD": self.command, "PATH_INFO": url.path, "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "PATH": "/usr/local/bin:/usr/bin:/bin",
        }
        result = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = result.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _cgi


class GitServer:
    """``with GitServer(root) as server: server.create("team/rl-repo.git")``."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        handler = type("Backend", (_Backend,), {"root": root})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> "GitServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, name: str) -> str:
        return f"{self.base}/{name}"

    def create(self, name: str) -> str:
        """An empty bare repository at ``name``; returns its URL."""
        path = self.root / name
        subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(path)], check=True)
        return self.url(name)

    def publish(self, name: str, tree: Path, tag: str | None = None, message: str = "import") -> str:
        """A repository holding the files of ``tree`` in one commit (tagged ``tag``); returns its URL."""
        url = self.create(name)
        work = self.root / f".work-{name.replace('/', '-')}"
        subprocess.run(["git", "init", "--quiet", "--initial-branch=main", str(work)], check=True)
        subprocess.run(["cp", "-a", f"{tree}/.", str(work)], check=True)
        git = ["git", "-C", str(work), "-c", "user.name=rlgen-test", "-c", "user.email=test@rlgen.invalid"]
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "--quiet", "-m", message], check=True)
        if tag:
            subprocess.run([*git, "tag", tag], check=True)
        subprocess.run([*git, "push", "--quiet", url, "main", *([tag] if tag else [])], check=True,
                       capture_output=True)
        return url
