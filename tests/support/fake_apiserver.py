"""A Kubernetes API server that serves recorded objects over HTTP on 127.0.0.1.

No API server binary can run here, so the cluster commands are tested against this one: the
discovery documents recorded from a real server (``k8s/discovery/``, copied from
kubernetes/kubernetes ``api/discovery/``), CRD objects made from the upstream CRD files
(``k8s/crds/``, schemas removed), and the objects a test records, answered with the paths,
list envelopes, selectors and ``Status`` errors (404, 403) a real server uses. The real
``kubernetes`` client reaches it through the kubeconfig :meth:`kubeconfig` writes.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HERE = Path(__file__).parent / "k8s"
USER = "rlgen-test"

#: Built-in kinds the commands read: kind -> (group/version, plural, namespaced).
BUILT_IN = {
    "Namespace": ("v1", "namespaces", False),
    "Node": ("v1", "nodes", False),
    "Pod": ("v1", "pods", True),
    "Event": ("v1", "events", True),
    "Service": ("v1", "services", True),
    "Secret": ("v1", "secrets", True),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("v1", "persistentvolumes", False),
    "Deployment": ("apps/v1", "deployments", True),
    "StatefulSet": ("apps/v1", "statefulsets", True),
    "CSIDriver": ("storage.k8s.io/v1", "csidrivers", False),
    "MutatingWebhookConfiguration": ("admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
}


def crd(name: str) -> dict:
    """A recorded CRD object, e.g. ``crd("rayjobs.ray.io")``."""
    return json.loads((HERE / "crds" / f"{name}.json").read_text())


class FakeAPIServer:
    """``objects``: what the cluster holds (CRD objects make their kinds served);
    ``forbidden``: plurals every request for which answers 403 as RBAC does;
    ``garbage``: answer every request with an HTML page instead of the API."""

    def __init__(self, objects=(), forbidden=(), garbage: bool = False, version: str = "v1.33.3"):
        self.objects = list(objects)
        self.forbidden = set(forbidden)
        self.garbage = garbage
        self.version = version
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def kubeconfig(self, path: Path, server: str | None = None) -> Path:
        """A kubeconfig with one context, ``test``, pointing at this server (or ``server``)."""
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": server or self.url}}],
            "users": [{"name": USER, "user": {"token": "recorded-objects"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": USER}}],
        }))
        return path

    # -- what is served ------------------------------------------------------------------

    def _kinds(self) -> dict[tuple[str, str], tuple[str, str, bool]]:
        """(group/version, plural) -> (kind, group/version, namespaced)."""
        table = {(gv, plural): (kind, gv, ns) for kind, (gv, plural, ns) in BUILT_IN.items()}
        for c in self._crds():
            for v in c["spec"]["versions"]:
                if v.get("served"):
                    gv = f"{c['spec']['group']}/{v['name']}"
                    names = c["spec"]["names"]
                    table[(gv, names["plural"])] = (names["kind"], gv, c["spec"]["scope"] == "Namespaced")
        return table

    def _crds(self) -> list[dict]:
        return [o for o in self.objects if o.get("kind") == "CustomResourceDefinition"]

    def _groups(self) -> dict:
        doc = json.loads((HERE / "discovery" / "apis.json").read_text())
        for c in self._crds():
            versions = [{"groupVersion": f"{c['spec']['group']}/{v['name']}", "version": v["name"]}
                        for v in c["spec"]["versions"] if v.get("served")]
            existing = next((g for g in doc["groups"] if g["name"] == c["spec"]["group"]), None)
            if existing:
                existing["versions"] += [v for v in versions if v not in existing["versions"]]
            else:
                doc["groups"].append({"name": c["spec"]["group"], "versions": versions,
                                      "preferredVersion": versions[0]})
        return doc

    def _resources(self, gv: str) -> dict | None:
        # Shaped as the API server's APIResourceList for a CRD group version.
        found = []
        for c in self._crds():
            names = c["spec"]["names"]
            for v in c["spec"]["versions"]:
                if v.get("served") and f"{c['spec']['group']}/{v['name']}" == gv:
                    found.append({"name": names["plural"], "singularName": names.get("singular", ""),
                                  "namespaced": c["spec"]["scope"] == "Namespaced", "kind": names["kind"],
                                  "verbs": ["delete", "deletecollection", "get", "list", "patch", "create",
                                            "update", "watch"],
                                  "shortNames": names.get("shortNames", []),
                                  "categories": names.get("categories", []),
                                  "storageVersionHash": "recorded"})
                    if (v.get("subresources") or {}).get("status") is not None:
                        found.append({"name": f"{names['plural']}/status", "singularName": "",
                                      "namespaced": c["spec"]["scope"] == "Namespaced", "kind": names["kind"],
                                      "verbs": ["get", "patch", "update"]})
        if not found:
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": found}

    # -- answering -----------------------------------------------------------------------

    def answer(self, path: str, query: dict) -> tuple[int, dict | str]:
        if self.garbage:
            return 200, "<html><body>Welcome to nginx!</body></html>"
        parts = [p for p in path.split("/") if p]
        if parts == ["version"]:
            major, minor = self.version.lstrip("v").split(".")[:2]
            return 200, {"major": major, "minor": minor, "gitVersion": self.version,
                         "platform": "linux/amd64", "goVersion": "go1.24.4", "compiler": "gc"}
        if parts == ["api"]:
            return 200, json.loads((HERE / "discovery" / "api.json").read_text())
        if parts == ["apis"]:
            return 200, self._groups()
        if parts[:1] == ["apis"] and len(parts) == 3:
            doc = self._resources("/".join(parts[1:]))
            return (200, doc) if doc else self._status(404, "NotFound", "the server could not find the requested resource")
        return self._object_request(parts, query)

    def _object_request(self, parts: list[str], query: dict):
        if parts[:1] == ["api"]:
            gv, rest = "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) > 3:
            gv, rest = "/".join(parts[1:3]), parts[3:]
        else:
            return self._status(404, "NotFound", "the server could not find the requested resource")
        namespace = None
        if rest[:1] == ["namespaces"] and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        kind = self._kinds().get((gv, plural))
        if kind is None:
            return self._status(404, "NotFound", "the server could not find the requested resource")
        group = gv.rpartition("/")[0]
        if plural in self.forbidden:
            verb = "get" if name else "list"
            where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
            resource = f"{plural}.{group}" if group else plural
            named = f' "{name}"' if name else ""
            return self._status(403, "Forbidden",
                                f'{resource}{named} is forbidden: User "{USER}" cannot {verb} resource "{plural}" '
                                f'in API group "{group}" {where}', name=name, group=group, kind=plural)
        matching = [o for o in self.objects if o.get("kind") == kind[0] and o.get("apiVersion") == gv
                    and (namespace is None or o["metadata"].get("namespace") == namespace)]
        if name:
            for o in matching:
                if o["metadata"]["name"] == name:
                    return 200, o
            resource = f"{plural}.{group}" if group else plural
            return self._status(404, "NotFound", f'{resource} "{name}" not found', name=name, group=group, kind=plural)
        items = [o for o in matching if _selected(o, query)]
        return 200, {"apiVersion": gv, "kind": f"{kind[0]}List", "metadata": {"resourceVersion": "1"}, "items": items}

    @staticmethod
    def _status(code: int, reason: str, message: str, **details) -> tuple[int, dict]:
        return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": reason,
                      "details": {k: v for k, v in details.items() if v}, "code": code}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlsplit(self.path)
                server.requests.append(self.path)
                code, body = server.answer(url.path, parse_qs(url.query))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/html" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


def _selected(obj: dict, query: dict) -> bool:
    """Equality label and field selectors (``a=b,c=d``), the forms the commands send."""
    for selector in query.get("labelSelector", []):
        labels = obj["metadata"].get("labels") or {}
        for term in filter(None, selector.split(",")):
            key, _, value = term.partition("=")
            if labels.get(key) != value:
                return False
    for selector in query.get("fieldSelector", []):
        for term in filter(None, selector.split(",")):
            path, _, value = term.partition("=")
            node = obj
            for part in path.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if str(node if node is not None else "") != value:
                return False
    return True
