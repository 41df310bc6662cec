"""A Hugging Face Hub on 127.0.0.1 serving one model repository through the endpoints that
``huggingface_hub.snapshot_download`` calls (found in huggingface_hub 2.4.0
``_snapshot_download.py``, ``hf_api.py`` and ``file_download.py``):

- ``GET /api/models/<repo>/revision/<rev>``: the commit the revision points at;
- ``GET /api/models/<repo>/tree/<commit>?recursive=...``: every file with size and blob id;
- ``HEAD``/``GET /<repo>/resolve/<commit>/<path>``: ``X-Repo-Commit``, ``ETag``, the bytes.

and the same repository through the endpoints of ``modelscope.snapshot_download``
(modelscope 1.40.2, which delegates to ``modelscope_hub``; found by serving it):

- ``GET /api/v1/models/<repo>/repo/files?Revision=<rev>&Recursive=True``: files with
  size and SHA-256, wrapped as ``{"Code": 200, "Data": {"Files": [...]}}``;
- ``GET /api/v1/models/<repo>/repo?Revision=<rev>&FilePath=<path>``: the bytes.

and data sets (``datasets``: repository id -> files) through the endpoints of
``modelscope.dataset_snapshot_download`` (modelscope-hub 0.5.1 ``_legacy_api.py``):

- ``GET /api/v1/datasets/<repo>/repo/tree?Revision=<rev>&Recursive=True&PageNumber=<n>&PageSize=<k>``:
  one page of files, ``{"Code": 200, "Data": {"Files": [...]}}``, a short page the last;
- ``GET /api/v1/datasets/<repo>/repo?Revision=<rev>&FilePath=<path>``: the bytes.

Clients find it through ``HF_ENDPOINT`` and ``MODELSCOPE_ENDPOINT``. It logs each request,
so a test can tell what a second download fetched again.
"""
from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


class HubServer:
    def __init__(self, repo: str, files: dict[str, bytes], datasets: dict[str, dict[str, bytes]] | None = None):
        self.repo, self.files, self.datasets = repo, files, datasets or {}
        self.log: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> "HubServer":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fetched(self) -> list[str]:
        """Paths whose bytes were sent (GET of a file), from either hub's API."""
        prefix = f"/{self.repo}/resolve/{COMMIT}/"
        found = []
        for method, path, query in self.log:
            if method == "GET" and path.startswith(prefix):
                found.append(urllib.parse.unquote(path[len(prefix):]))
            elif method == "GET" and path == f"/api/v1/models/{self.repo}/repo" and "FilePath" in query:
                found.append(query["FilePath"][0])
            elif method == "GET" and path.startswith("/api/v1/datasets/") and "FilePath" in query:
                found.append(f"{path.removeprefix('/api/v1/datasets/').removesuffix('/repo')}:{query['FilePath'][0]}")
        return found

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # the test reads hub.log instead
                pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                url = urllib.parse.urlsplit(self.path)
                path, query = url.path, urllib.parse.parse_qs(url.query)
                hub.log.append((self.command, path, query))
                if path.startswith(f"/api/v1/models/{hub.repo}/repo"):
                    return self._modelscope(path, query, body, hub.files)
                dataset = next((d for d in hub.datasets if path.startswith(f"/api/v1/datasets/{d}/repo")), None)
                if dataset is not None:
                    return self._modelscope(path, query, body, hub.datasets[dataset])
                api = f"/api/models/{hub.repo}/"
                resolve = f"/{hub.repo}/resolve/{COMMIT}/"
                if path.startswith(api + "revision/"):
                    return self._json({"id": hub.repo, "sha": COMMIT,
                                       "siblings": [{"rfilename": name} for name in hub.files]}, body)
                if path == api + f"tree/{COMMIT}":
                    return self._json([{"type": "file", "path": name, "size": len(data), "oid": _blob_id(data)}
                                       for name, data in sorted(hub.files.items())], body)
                if path.startswith("/api/"):
                    return self._send(404, b'{"error": "Repository not found"}',
                                      {"X-Error-Code": "RepositoryNotFound"}, body)
                name = urllib.parse.unquote(path[len(resolve):]) if path.startswith(resolve) else None
                if name not in hub.files:
                    return self._send(404, b'{"error": "Entry not found"}', {"X-Error-Code": "EntryNotFound"}, body)
                data = hub.files[name]
                self._send(200, data, {"X-Repo-Commit": COMMIT, "ETag": f'"{_blob_id(data)}"'}, body)

            def _modelscope(self, path: str, query: dict, body: bool, repo_files: dict[str, bytes]):
                if path.endswith(("/repo/files", "/repo/tree")):
                    files = [{"Name": name.rsplit("/", 1)[-1], "Path": name, "Type": "blob", "Size": len(data),
                              "Sha256": hashlib.sha256(data).hexdigest(), "Revision": COMMIT}
                             for name, data in sorted(repo_files.items())]
                    if path.endswith("/repo/tree"):  # paged
                        size, page = int(query.get("PageSize", ["200"])[0]), int(query.get("PageNumber", ["1"])[0])
                        files = files[(page - 1) * size:page * size]
                    return self._json({"Code": 200, "Success": True, "Data": {"Files": files}}, body)
                name = query.get("FilePath", [""])[0]
                if name not in repo_files:
                    return self._send(404, b'{"Code": 404, "Success": false}', {}, body)
                self._send(200, repo_files[name], {}, body)

            def _json(self, doc, body: bool):
                self._send(200, json.dumps(doc).encode(), {"Content-Type": "application/json"}, body)

            def _send(self, status: int, data: bytes, headers: dict, body: bool):
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

        return Handler


def _blob_id(data: bytes) -> str:
    """Git's blob id, which the Hub reports as ``oid`` and ``ETag`` of a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
