"""Hostile timing on the network: endpoints that answer one byte at a time never hold
``rlgen data`` past its deadline (the socket timeout alone bounds each read, not the whole):
STS (the RRSA exchange) and OSS itself (``RLGEN_OSS_DEADLINE``); and the first SIGTERM ends an
upload stuck on such an endpoint with its cleanup (exit 130)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from support.hostile import record

pytest.importorskip("alibabacloud_oss_v2")

SECRET = "Hunter2DripSecret9"


class Dripping:
    """A TCP server on 127.0.0.1 that reads a request, then answers one byte every
    ``every`` seconds: the body (``headers_first``) or the status line and headers too."""

    def __init__(self, headers_first: bool, every: float = 1.0):
        self.requests: list[tuple[float, str]] = []
        self.connected = threading.Event()
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port = self._server.getsockname()[1]
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        self._first, self._drip = (head, b" " * 100000) if headers_first else (b"", head + b" " * 100000)
        self._every = every
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            conn, _ = self._server.accept()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        try:
            request = conn.recv(65536).decode(errors="replace")
            self.requests.append((time.monotonic(), request.split("\r\n", 1)[0]))
            self.connected.set()
            conn.sendall(self._first)
            for byte in self._drip:
                conn.sendall(bytes([byte]))
                time.sleep(self._every)
        except OSError:
            pass


def test_a_dripping_sts_endpoint_ends_at_the_deadline(tmp_path, monkeypatch):
    from rlgen.oss import credentials

    monkeypatch.setattr(credentials, "STS_DEADLINE_SECONDS", 3)
    token = tmp_path / "token"
    token.write_text("oidc-token")
    server = Dripping(headers_first=True)
    provider = credentials.OidcRoleCredentialsProvider("acs:ram::1:role/r", "acs:ram::1:oidc-provider/p",
                                                       str(token), f"http://127.0.0.1:{server.port}")
    started = time.monotonic()
    with pytest.raises(credentials.CredentialsError, match="did not answer within 3 s"):
        provider.get_credentials()
    assert time.monotonic() - started < 10


def _upload(tmp_path, port: int, **env) -> subprocess.Popen:
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "train.parquet").write_bytes(b"data")
    (tmp_path / "tmp").mkdir()
    return subprocess.Popen(
        [sys.executable, "-m", "rlgen", "data", "upload", "up", "oss://bucket/prefix", "--endpoint",
         f"http://127.0.0.1:{port}", "--region", "cn-hangzhou"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OSS_ACCESS_KEY_ID": "drip-id", "OSS_ACCESS_KEY_SECRET": SECRET,
             "TMPDIR": str(tmp_path / "tmp"), **env})


@pytest.mark.parametrize("headers_first", [False, True], ids=["drips-headers", "drips-body"])
def test_an_upload_to_a_dripping_endpoint_ends_at_its_deadline(headers_first, tmp_path, record_property):
    server = Dripping(headers_first=headers_first, every=2.0)
    started = time.monotonic()
    proc = _upload(tmp_path, server.port, RLGEN_OSS_DEADLINE="3")
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - started
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    leftovers = sorted(p.name for p in (tmp_path / "tmp").iterdir())
    record(record_property, expected=2, result=result, leftovers=leftovers,
           secrets=[SECRET] if SECRET in out + err else [])
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "did not finish within the deadline of 3 s" in lines[0], err
    # Start-up (imports, the SDK) plus the deadline: never the drip's 100000 x 2 s.
    assert took < 3 + 20, took
    assert leftovers == [] and SECRET not in out + err


def test_the_first_sigterm_ends_a_stuck_upload_with_its_cleanup(tmp_path, record_property):
    from rlgen.oss.client import CLEANUP_SECONDS

    server = Dripping(headers_first=False, every=2.0)
    proc = _upload(tmp_path, server.port)
    assert server.connected.wait(60), proc.communicate()
    time.sleep(0.5)
    stopped = time.monotonic()
    before = len(server.requests)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - stopped
    result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    record(record_property, expected=130, result=result,
           leftovers=sorted(p.name for p in (tmp_path / "tmp").iterdir()))
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["rlgen: interrupted"], err
    # The cleanup ran: it asked for the incomplete multipart uploads to abort, within its own budget.
    assert any("?uploads" in line or "&uploads" in line for _, line in server.requests[before:]), \
        (before, stopped, server.requests)
    assert took < CLEANUP_SECONDS + 10, took


def test_without_a_deadline_given_an_upload_ends_within_a_ci_jobs_usual_timeout(tmp_path):
    """The default once was 12 hours: a dripping endpoint held a CI job for half a day. It
    must end before GitLab's default job timeout (60 min) and say how to give more."""
    from click.testing import CliRunner
    from rlgen.commands.data import command

    help_text = " ".join(CliRunner().invoke(command, ["upload", "--help"]).output.split())
    deadline = help_text.split("--deadline SECONDS", 1)[1]
    default = float(deadline.split("[default: ")[1].split("]")[0].split(";")[0])
    assert default <= 50 * 60, help_text
    assert "rerun resumes" in help_text and "RLGEN_OSS_DEADLINE" in help_text


def test_a_model_download_from_a_dripping_hub_ends_at_its_deadline(tmp_path, record_property):
    """The hub clients' socket timeout bounds each read only: a hub that answers one byte a
    second held ``rlgen data model`` (and the model Job) for as long as it kept dripping."""
    pytest.importorskip("huggingface_hub")
    server = Dripping(headers_first=True, every=1.0)
    (tmp_path / "tmp").mkdir()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlgen", "data", "model", "--model", "team/model", "--out", "model"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Online, whatever a session fixture of the same worker set (support.datafix.hf_offline).
        env={**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{server.port}", "RLGEN_DOWNLOAD_DEADLINE": "45",
             "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf-home"), "TMPDIR": str(tmp_path / "tmp")})
    out, err = proc.communicate(timeout=120)
    took = time.monotonic() - started
    record(record_property, expected=2, result=subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    assert server.connected.is_set()
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "model 'team/model' from huggingface did not finish within the deadline of 45 s" \
        in lines[0] and "resumes" in lines[0], err
    # The deadline counts from the start (the hub client's import too, slow on a loaded machine), never the
    # drip's 100000 s.
    assert took < 45 + 30, took
    # The stopped download left no process behind.
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "multiprocessing" not in "".join(line for line in ps.splitlines() if str(tmp_path) in line)
