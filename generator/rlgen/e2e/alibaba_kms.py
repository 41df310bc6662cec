"""Alibaba Cloud KMS Secrets Manager (``GetSecretValue``) and STS (``AssumeRoleWithOIDC``) on
127.0.0.1, for the real External Secrets controller and the Alibaba SDKs it is built with.

Neither SDK lets External Secrets' ``alibaba`` provider name an endpoint: the KMS client always
calls ``https://kms.<regionID>.aliyuncs.com/`` and the RRSA credential provider
``https://sts.aliyuncs.com/`` (docs/upstream.md). Both use Go's default transport, which honours
``HTTPS_PROXY`` and ``SSL_CERT_FILE``; so the controller runs with this module's CONNECT proxy,
which tunnels exactly those two host names to one local TLS server, and with a CA made here
that signed that server's certificate. Any other host gets 403 from the proxy.

The server checks what the real services check: STS that the role and OIDC provider are the
ones granted and that the token is a service-account token for the ``sts.aliyuncs.com``
audience of the allowed ServiceAccount; KMS the RPC signature (HMAC-SHA1 of the canonical query,
keyed with the STS AccessKeySecret) and that the security token is one STS issued; or, for a
store authenticated by an AccessKey pair (``access_keys``), the signature keyed with its secret.
``rlgen e2e`` and rlgen's tests share this one implementation.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import select
import socket
import socketserver
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

STS_HOST = "sts.aliyuncs.com"


def kms_host(region: str) -> str:
    return f"kms.{region}.aliyuncs.com"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_ca(folder: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for ``hosts`` (DNS names, or ``IP:`` an
    address), in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca),
             "-days", "2", "-subj", "/CN=rlgen e2e CA")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={hosts[0]}")
    ext = folder / "san.ext"
    ext.write_text("subjectAltName=" + ",".join(h if h.startswith("IP:") else f"DNS:{h}" for h in hosts) + "\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-out", str(cert), "-days", "2", "-extfile", str(ext))
    return ca, cert, key


def _encode(value: str) -> str:
    """Alibaba Cloud's RPC percent-encoding (RFC 3986, ``~`` unreserved)."""
    return quote(value, safe="~")


def rpc_signature(method: str, query: dict[str, str], secret: str) -> str:
    canonical = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()) if k != "Signature")
    to_sign = f"{method}&{_encode('/')}&{_encode(canonical)}"
    return base64.b64encode(hmac.new(f"{secret}&".encode(), to_sign.encode(), hashlib.sha1).digest()).decode()


def _claims(token: str) -> dict:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


class AlibabaCloud:
    """``secrets``: KMS secret name -> its value (a JSON object's text); ``role_arn``,
    ``oidc_provider_arn`` and ``service_account`` (namespace/name): what STS grants."""

    def __init__(self, workdir: Path, region: str, role_arn: str, oidc_provider_arn: str, service_account: str):
        self.region, self.role_arn, self.oidc_provider_arn = region, role_arn, oidc_provider_arn
        self.subject = f"system:serviceaccount:{service_account.replace('/', ':')}"
        self.secrets: dict[str, str] = {}
        self.sessions: dict[str, str] = {}  # AccessKeyId -> AccessKeySecret, with their security tokens
        #: AccessKeyId -> AccessKeySecret of a RAM user's long-term pair, signed without a token.
        self.access_keys: dict[str, str] = {}
        self.tokens: set[str] = set()
        self.calls: list[str] = []
        self.refused: list[str] = []
        self.ca, cert, key = make_ca(workdir / "alibaba-pki", [kms_host(region), STS_HOST])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(cert), str(key))
        self._tls = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._tls.socket = context.wrap_socket(self._tls.socket, server_side=True)
        self._proxy = _ConnectProxy(("127.0.0.1", 0), self)
        self._threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (self._tls, self._proxy)]

    def __enter__(self) -> "AlibabaCloud":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        for s in (self._tls, self._proxy):
            s.shutdown()
            s.server_close()

    def env(self) -> dict[str, str]:
        """What the controller's process needs to reach this server for the two cloud hosts."""
        proxy = f"http://127.0.0.1:{self._proxy.server_address[1]}"
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost", "SSL_CERT_FILE": str(self.ca)}

    @property
    def tls_port(self) -> int:
        return self._tls.server_address[1]

    # -- the two APIs -------------------------------------------------------------------------

    def assume_role_with_oidc(self, form: dict[str, str]) -> tuple[int, dict]:
        if form.get("RoleArn") != self.role_arn or form.get("OIDCProviderArn") != self.oidc_provider_arn:
            return 403, _error("AuthorizationFailed", "the role is not granted to this OIDC provider")
        try:
            claims = _claims(form.get("OIDCToken", ""))
        except (IndexError, ValueError):
            return 400, _error("InvalidParameter.OIDCToken", "the OIDC token is not a JWT")
        audience = claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
        if STS_HOST not in audience or claims.get("sub") != self.subject or claims.get("exp", 0) < time.time():
            return 400, _error("InvalidParameter.OIDCToken", "audience, subject or expiry refused")
        key_id, key_secret, token = ("STS." + secrets.token_hex(8), secrets.token_hex(16), secrets.token_hex(24))
        self.sessions[key_id] = key_secret
        self.tokens.add(token)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        return 200, {"RequestId": secrets.token_hex(8),
                     "AssumedRoleUser": {"Arn": f"{self.role_arn}/{form.get('RoleSessionName', '')}",
                                         "AssumedRoleId": "300000000000000000:" + form.get("RoleSessionName", "")},
                     "Credentials": {"AccessKeyId": key_id, "AccessKeySecret": key_secret,
                                     "SecurityToken": token, "Expiration": expires}}

    def get_secret_value(self, query: dict[str, str]) -> tuple[int, dict]:
        key_id = query.get("AccessKeyId", "")
        key_secret = self.access_keys.get(key_id)
        if key_secret is None:
            key_secret = self.sessions.get(key_id)
            if key_secret is None or query.get("SecurityToken") not in self.tokens:
                return 403, _error("InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        if not hmac.compare_digest(query.get("Signature", ""), rpc_signature("GET", query, key_secret)):
            return 400, _error("IncompleteSignature", "The request signature does not conform to Aliyun standards.")
        name = query.get("SecretName", "")
        if name not in self.secrets:
            return 404, _error("Forbidden.ResourceNotFound", "The resource not found.")
        return 200, {"RequestId": secrets.token_hex(8), "SecretName": name, "SecretType": "Generic",
                     "SecretDataType": "text", "SecretData": self.secrets[name], "VersionId": "v1",
                     "VersionStages": {"VersionStage": ["ACSCurrent"]}}

    def _handler(self):
        cloud = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json;charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                query = dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode())) if length else {}
                host = (self.headers.get("Host") or "").split(":")[0]
                action = query.get("Action", "")
                cloud.calls.append(f"{host} {method} {action} {query.get('SecretName', '')}".rstrip())
                if host == STS_HOST and method == "POST" and action == "AssumeRoleWithOIDC":
                    self._answer(*cloud.assume_role_with_oidc(form))
                elif host == kms_host(cloud.region) and method == "GET" and action == "GetSecretValue":
                    self._answer(*cloud.get_secret_value(query))
                else:
                    self._answer(400, _error("InvalidAction.NotFound", f"{action} is not served on {host}"))

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

        return Handler


def _error(code: str, message: str) -> dict:
    return {"Code": code, "Message": message, "RequestId": secrets.token_hex(8)}


class _ConnectProxy(socketserver.ThreadingTCPServer):
    """An HTTP CONNECT proxy that tunnels the two cloud hosts to the local TLS server."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, cloud: AlibabaCloud):
        self.cloud = cloud
        super().__init__(address, _Tunnel)


class _Tunnel(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        cloud: AlibabaCloud = self.server.cloud
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        method, target = (line.split(" ") + ["", ""])[:2]
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or port != "443" or host not in (STS_HOST, kms_host(cloud.region)):
            cloud.refused.append(line)
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        upstream = socket.create_connection(("127.0.0.1", cloud.tls_port))
        self.request.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        sockets = [self.request, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 60)
                if not readable:
                    return
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        return
                    (upstream if s is self.request else self.request).sendall(data)
        finally:
            upstream.close()
