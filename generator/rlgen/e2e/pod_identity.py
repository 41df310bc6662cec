"""ACK's ack-pod-identity-webhook add-on on the throwaway control plane: a mutating webhook on
127.0.0.1 that gives a pod RRSA credentials as the add-on does (docs/upstream.md).

A pod created in a namespace labelled ``pod-identity.alibabacloud.com/injection: on``, whose
ServiceAccount is annotated ``pod-identity.alibabacloud.com/role-name``, gets in each container
the variables ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN and
ALIBABA_CLOUD_OIDC_TOKEN_FILE, and the ServiceAccount token for STS's audience projected at that
file. The account and cluster in the ARNs are the stand-in's: no RAM role is ever assumed here.
"""
from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from rlgen.e2e.alibaba_kms import STS_HOST, make_ca
from rlgen.e2e.controlplane import ControlPlane
from rlgen.kube.needs import RRSA_LABEL

NAME = "ack-pod-identity-webhook"
ROLE_ANNOTATION = "pod-identity.alibabacloud.com/role-name"
TOKEN_DIR = "/var/run/secrets/ack.alibabacloud.com/rrsa-tokens"
TOKEN_FILE = f"{TOKEN_DIR}/token"
VOLUME = "rrsa-oidc-token"
#: The stand-in's Alibaba Cloud account and ACK cluster (the OIDC provider ACK names ack-rrsa-<cluster id>).
ACCOUNT = "1000000000000000"
CLUSTER = "c0rlgene2e"
OIDC_PROVIDER_ARN = f"acs:ram::{ACCOUNT}:oidc-provider/ack-rrsa-{CLUSTER}"


def role_arn(role: str) -> str:
    return f"acs:ram::{ACCOUNT}:role/{role}"


def patch(pod: dict, role: str) -> list[dict]:
    """The JSON patch that gives ``pod`` the role's credentials (none when it has them)."""
    spec = pod.get("spec") or {}
    ops: list[dict] = []
    env = [{"name": "ALIBABA_CLOUD_ROLE_ARN", "value": role_arn(role)},
           {"name": "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "value": OIDC_PROVIDER_ARN},
           {"name": "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "value": TOKEN_FILE}]
    mount = {"name": VOLUME, "mountPath": TOKEN_DIR, "readOnly": True}
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or []):
            if any(e.get("name") == "ALIBABA_CLOUD_ROLE_ARN" for e in container.get("env") or []):
                continue
            where = f"/spec/{field}/{i}"
            ops += _append(container, "env", where, env)
            ops += _append(container, "volumeMounts", where, [mount])
    if not ops:
        return []
    volume = {"name": VOLUME, "projected": {"defaultMode": 0o420, "sources": [{"serviceAccountToken": {
        "audience": STS_HOST, "expirationSeconds": 3600, "path": "token"}}]}}
    return ops + _append(spec, "volumes", "/spec", [volume])


def _append(obj: dict, key: str, where: str, items: list[dict]) -> list[dict]:
    if not obj.get(key):
        return [{"op": "add", "path": f"{where}/{key}", "value": items}]
    return [{"op": "add", "path": f"{where}/{key}/-", "value": item} for item in items]


class PodIdentityWebhook:
    """The webhook's server (a thread of this process) and its MutatingWebhookConfiguration."""

    def __init__(self, cp: ControlPlane, workdir: Path):
        self.cp = cp
        self.ca, cert, key = make_ca(workdir / "pod-identity-pki", ["IP:127.0.0.1"])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert), str(key))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.mutated: list[str] = []

    def __enter__(self) -> "PodIdentityWebhook":
        self._thread.start()
        self.cp.kubectl("apply", "-f", "-", input=json.dumps(self.configuration()))
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def configuration(self) -> dict:
        # Fail, not Ignore: a pod of a labelled namespace is never created without what it asks
        # for, so a stand-in that stopped answering shows.
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": NAME}, "webhooks": [{
                    "name": "pod-identity.alibabacloud.com", "admissionReviewVersions": ["v1"],
                    "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 10,
                    "namespaceSelector": {"matchLabels": {RRSA_LABEL: "on"}},
                    "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                               "resources": ["pods"], "scope": "Namespaced"}],
                    "clientConfig": {"url": f"https://127.0.0.1:{self._server.server_address[1]}/mutate",
                                     "caBundle": base64.b64encode(self.ca.read_bytes()).decode()}}]}

    def review(self, request: dict) -> dict:
        pod, namespace = request.get("object") or {}, request.get("namespace", "")
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        try:
            found = json.loads(self.cp.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}"))
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            found = {}  # no ServiceAccount, no annotation: the API server decides on the pod
        role = ((found.get("metadata") or {}).get("annotations") or {}).get(ROLE_ANNOTATION, "")
        answer = {"uid": request.get("uid"), "allowed": True}
        if ops := (patch(pod, role) if role else []):
            answer |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(ops).encode()).decode()}
            meta = pod.get("metadata") or {}
            self.mutated.append(f"{namespace}/{meta.get('name') or meta.get('generateName', '')}")
        return answer

    def _handler(self):
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                try:
                    answer = webhook.review(review.get("request") or {})
                except Exception as exc:  # noqa: BLE001 - the API server gets the reason, not a dropped call
                    answer = {"uid": (review.get("request") or {}).get("uid"), "allowed": False,
                              "status": {"message": f"{NAME} stand-in: {exc}"}}
                data = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": answer}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
