"""GitHub as a generated workflow reaches it, on 127.0.0.1: the REST API a job calls (pull
request comments, pull requests) and the release downloads it makes (kustomize, kubeconform).

The REST stand-in is a plain HTTP server the job finds through ``GITHUB_API_URL``, as a runner
sets it (GitHub Enterprise Server's is ``https://<host>/api/v3``). It checks the token on every
call, keeps issues' comments and pull requests as GitHub does (ids, numbers, the bot that wrote a
comment, 422 for a second open pull request from one branch) and records each call.

Release downloads name ``https://github.com/...`` in the workflow: ``curl`` reaches them through
``HTTPS_PROXY``, a CONNECT proxy that tunnels github.com to a local TLS server whose certificate a
CA made here signs (``CURL_CA_BUNDLE``: that CA beside the host's), and every other host to the
host itself (pip's index). The server serves each release file the test registered.
"""
from __future__ import annotations

import io
import json
import re
import select
import socket
import socketserver
import ssl
import tarfile
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from rlgen.e2e.alibaba_kms import make_ca

BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}


@dataclass
class Repository:
    comments: dict[int, list[dict]] = field(default_factory=dict)
    pulls: list[dict] = field(default_factory=list)


class RestApi:
    """The REST endpoints the generated workflows call, for one token."""

    ROUTES = [
        ("GET", r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", "list_comments"),
        ("POST", r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", "create_comment"),
        ("PATCH", r"/repos/([^/]+)/([^/]+)/issues/comments/(\d+)", "update_comment"),
        ("GET", r"/repos/([^/]+)/([^/]+)/pulls", "list_pulls"),
        ("POST", r"/repos/([^/]+)/([^/]+)/pulls", "create_pull"),
        ("PATCH", r"/repos/([^/]+)/([^/]+)/pulls/(\d+)", "update_pull"),
    ]

    def __init__(self, token: str):
        self.token = token
        self.repos: dict[str, Repository] = {}
        self.calls: list[tuple[str, str]] = []
        self._ids = iter(range(1000, 10**9))
        self._lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self):
                url = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = api.answer(self.command, url.path, parse_qs(url.query),
                                            json.loads(body) if body else {}, self.headers.get("Authorization", ""))
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "RestApi":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, method: str, path: str, query: dict, body: dict, auth: str) -> tuple[int, object]:
        with self._lock:
            self.calls.append((method, path))
            if auth.split(" ", 1)[-1] != self.token or not auth.lower().startswith(("token ", "bearer ")):
                return 401, {"message": "Bad credentials"}
            for verb, pattern, name in self.ROUTES:
                if verb == method and (found := re.fullmatch(pattern, path)):
                    owner, repo, *rest = found.groups()
                    return getattr(self, name)(self.repos.setdefault(f"{owner}/{repo}", Repository()),
                                               *rest, query=query, body=body)
            return 404, {"message": "Not Found"}

    def list_comments(self, repo: Repository, number: str, query: dict, body: dict):
        per_page, page = int(query.get("per_page", ["30"])[0]), int(query.get("page", ["1"])[0])
        found = repo.comments.get(int(number), [])
        return 200, found[(page - 1) * per_page:page * per_page]

    def create_comment(self, repo: Repository, number: str, query: dict, body: dict):
        comment = {"id": next(self._ids), "body": body["body"], "user": BOT}
        repo.comments.setdefault(int(number), []).append(comment)
        return 201, comment

    def update_comment(self, repo: Repository, comment_id: str, query: dict, body: dict):
        for comment in (c for comments in repo.comments.values() for c in comments):
            if comment["id"] == int(comment_id):
                comment["body"] = body["body"]
                return 200, comment
        return 404, {"message": "Not Found"}

    def list_pulls(self, repo: Repository, query: dict, body: dict):
        state, head = query.get("state", ["open"])[0], query.get("head", [""])[0]
        return 200, [p for p in repo.pulls if state in ("all", p["state"])
                     and (not head or head.split(":")[-1] == p["head"]["ref"])]

    def create_pull(self, repo: Repository, query: dict, body: dict):
        if any(p["state"] == "open" and p["head"]["ref"] == body["head"] for p in repo.pulls):
            return 422, {"message": "Validation Failed",
                         "errors": [{"message": f"A pull request already exists for {body['head']}."}]}
        pull = {"number": len(repo.pulls) + 1, "state": "open", "title": body["title"], "body": body.get("body", ""),
                "head": {"ref": body["head"]}, "base": {"ref": body["base"]}, "user": BOT}
        repo.pulls.append(pull)
        return 201, pull

    def update_pull(self, repo: Repository, number: str, query: dict, body: dict):
        for pull in repo.pulls:
            if pull["number"] == int(number):
                pull.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
                return 200, pull
        return 404, {"message": "Not Found"}


def release_tarball(members: dict[str, Path]) -> bytes:
    """A .tar.gz of ``members`` (name in the archive -> file), as upstream's releases pack them."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, path in members.items():
            tar.add(path, arcname=name)
    return out.getvalue()


class Releases:
    """github.com's release downloads through a CONNECT proxy (module docstring)."""

    HOST = "github.com"

    def __init__(self, workdir: Path, files: dict[str, bytes]):
        self.files = files
        self.served: list[str] = []
        self.ca, cert, key = make_ca(workdir, [self.HOST])
        self.bundle = workdir / "ca-bundle.pem"
        default = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
        self.bundle.write_text((default.read_text() if default.is_file() else "") + self.ca.read_text())
        releases = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                data = releases.files.get(urlsplit(self.path).path)
                releases.served.append(self.path)
                self.send_response(200 if data is not None else 404)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                self.wfile.write(data or b"")

        self._tls = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._tls.socket = context.wrap_socket(self._tls.socket, server_side=True)
        self._proxy = _Proxy(("127.0.0.1", 0), {self.HOST: self._tls.server_address[1]})
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (self._tls, self._proxy)]

    def __enter__(self) -> "Releases":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        for server in (self._tls, self._proxy):
            server.shutdown()
            server.server_close()

    def env(self) -> dict[str, str]:
        proxy = f"http://127.0.0.1:{self._proxy.server_address[1]}"
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost", "CURL_CA_BUNDLE": str(self.bundle)}


class _Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, local: dict[str, int]):
        self.local = local
        super().__init__(address, _Tunnel)


class _Tunnel(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        method, target = (head.split(b"\r\n", 1)[0].decode(errors="replace").split(" ") + ["", ""])[:2]
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or not port.isdigit():
            self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        try:
            local = self.server.local.get(host)
            upstream = socket.create_connection(("127.0.0.1", local) if local else (host, int(port)), timeout=30)
        except OSError:
            self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.request.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        sockets = [self.request, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 120)
                if not readable:
                    return
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (upstream if s is self.request else self.request).sendall(data)
        finally:
            upstream.close()
