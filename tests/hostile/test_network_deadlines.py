"""Hostile timing on the network: an STS endpoint that answers one byte at a time never holds
``rlgen data`` past its deadline (the socket timeout alone bounds each read, not the whole)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

pytest.importorskip("alibabacloud_oss_v2")


def _dripping_server() -> int:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def drip(conn):
        try:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while True:
                conn.sendall(b" ")
                time.sleep(1)
        except OSError:
            pass

    def serve():
        while True:
            conn, _ = server.accept()
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_a_dripping_sts_endpoint_ends_at_the_deadline(tmp_path, monkeypatch):
    from rlgen.oss import credentials

    monkeypatch.setattr(credentials, "STS_DEADLINE_SECONDS", 3)
    token = tmp_path / "token"
    token.write_text("oidc-token")
    port = _dripping_server()
    provider = credentials.OidcRoleCredentialsProvider("acs:ram::1:role/r", "acs:ram::1:oidc-provider/p",
                                                       str(token), f"http://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(credentials.CredentialsError, match="did not answer within 3 s"):
        provider.get_credentials()
    assert time.monotonic() - started < 10
