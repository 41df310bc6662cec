"""rlgen data upload: the real alibabacloud-oss-v2 SDK against an S3-compatible server on
127.0.0.1 (moto behind the OSS adapter of oss_server.py)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rlgen.errors import RlgenError
from support.datafix import invoke
from support.oss_server import OssTestServer
from support.repos import run_rlgen
from support.terminal import on_terminal

SECRET = "s3cr3t-" + uuid.uuid4().hex
KEYS = {"OSS_ACCESS_KEY_ID": "test-key-id", "OSS_ACCESS_KEY_SECRET": SECRET}
#: Variables of the developer's shell that would change what a test means.
UNSET = {name: None for name in ("ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN",
                                    "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "OSS_ENDPOINT", "OSS_REGION")}
MiB = 1 << 20


@pytest.fixture(scope="module")
def server():
    oss = OssTestServer().start()
    yield oss
    oss.stop()


@pytest.fixture
def bucket(server):
    name = f"rl-{uuid.uuid4().hex[:12]}"
    server.create_bucket(name)
    server.reset_log()
    server.slow_down(0)
    return name


def tree(root, small: int = 30, big: int = 0) -> dict[str, bytes]:
    """``small`` files of a few KiB in nested folders, one ``big`` file, and a manifest."""
    files = {f"part-{i // 10}/file-{i:03d}.bin": os.urandom(2048 + i) for i in range(small)}
    if big:
        files["big.bin"] = os.urandom(big)
    files["manifest.json"] = json.dumps({"files": sorted(files)}).encode()
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


def upload(server, folder, url, *args, env=None):
    return invoke("upload", folder, url, "--endpoint", server.endpoint, "--region", "cn-hangzhou", "-o", "table", *args,
                  env={**UNSET, **KEYS, **(env or {})})


def error(result) -> str:
    assert isinstance(result.exception, RlgenError), (result.output, result.exception)
    message = str(result.exception)
    assert message and "\n" not in message and SECRET not in message
    return message


def stored(server, bucket, prefix) -> dict[str, bytes]:
    return {k[len(prefix):]: v for k, v in server.objects(bucket).items() if k.startswith(prefix)}


def test_many_files_and_a_multipart_one_arrive_intact_and_verified(server, bucket, tmp_path):
    files = tree(tmp_path, small=40, big=int(3.5 * MiB))
    server.slow_down(0.02)

    result = upload(server, tmp_path, f"oss://{bucket}/datasets/gsm8k", "--part-size", 1, "--jobs", 8)

    assert result.exit_code == 0, result.output
    assert stored(server, bucket, "datasets/gsm8k/") == files
    for name, data in files.items():
        assert server.metadata(bucket, f"datasets/gsm8k/{name}") == {"sha256": hashlib.sha256(data).hexdigest()}
    requests = server.requests
    big = f"/{bucket}/datasets/gsm8k/big.bin"
    assert sum(1 for method, path in requests if method == "PUT" and path == big) == 4  # 4 parts of 1 MiB
    assert ("POST", big) in requests  # initiate and complete the multipart upload
    assert server.max_in_flight > 4
    puts = [path for method, path in requests if method in ("PUT", "POST")]
    assert puts[-1] == f"/{bucket}/datasets/gsm8k/manifest.json"
    assert result.stdout.startswith(f"uploaded {len(files)} files (")
    assert f"skipped 0 unchanged (0 B) to oss://{bucket}/datasets/gsm8k/ at {server.endpoint}" in result.stdout
    assert result.stderr == ""


def test_a_rerun_skips_every_unchanged_object_and_sends_only_what_changed(server, bucket, tmp_path):
    files = tree(tmp_path, small=12, big=2 * MiB)
    url = f"oss://{bucket}/data/"
    assert upload(server, tmp_path, url, "--part-size", 1).exit_code == 0

    server.reset_log()
    again = upload(server, tmp_path, url, "--part-size", 1)
    assert again.exit_code == 0, again.output
    # HEADs, and the one listing of multipart uploads a stopped run may have left.
    assert [m for m, _ in server.requests if m != "HEAD"] == ["GET"]
    assert again.stdout.startswith(f"uploaded 0 files (0 B), skipped {len(files)} unchanged (")

    (tmp_path / "part-0" / "file-003.bin").write_bytes(b"changed")
    server.reset_log()
    changed = upload(server, tmp_path, url, "--part-size", 1)
    assert changed.exit_code == 0
    assert [path for method, path in server.requests if method == "PUT"] == [f"/{bucket}/data/part-0/file-003.bin"]
    assert stored(server, bucket, "data/")["part-0/file-003.bin"] == b"changed"


def test_failing_requests_are_retried_and_nothing_is_lost(server, bucket, tmp_path):
    files = tree(tmp_path, small=25, big=3 * MiB)
    server.inject_faults(8, every=4)

    result = upload(server, tmp_path, f"oss://{bucket}/retry", "--part-size", 1)

    assert result.exit_code == 0, result.output
    assert server.faults_served == 8
    assert stored(server, bucket, "retry/") == files


def test_an_object_damaged_on_the_way_is_detected_and_sent_again(server, bucket, tmp_path):
    files = tree(tmp_path, small=1)
    server.corrupt_uploads(1)

    result = upload(server, tmp_path, f"oss://{bucket}/damaged", "--jobs", 1)

    assert result.exit_code == 0, result.output
    assert server.corruptions_served == 1
    assert stored(server, bucket, "damaged/") == files
    first = f"/{bucket}/damaged/part-0/file-000.bin"
    assert sum(1 for method, path in server.requests if (method, path) == ("PUT", first)) == 2


def test_an_object_that_never_verifies_stops_the_upload(server, bucket, tmp_path):
    tree(tmp_path, small=1)
    server.corrupt_uploads(100)
    try:
        message = error(upload(server, tmp_path, f"oss://{bucket}/bad", "--jobs", 1))
    finally:
        server.corrupt_uploads(0)
    assert message.startswith("bad/part-0/file-000.bin does not verify after 3 uploads: CRC-64 ")
    assert "bad/manifest.json" not in server.objects(bucket)


def test_a_wrong_bucket_is_one_line_and_uploads_nothing(server, bucket, tmp_path):
    tree(tmp_path, small=5)
    message = error(upload(server, tmp_path, "oss://no-such-bucket-here/x"))
    assert message == f"bucket 'no-such-bucket-here' does not exist at {server.endpoint}"
    assert {method for method, _ in server.requests} == {"HEAD"}


def test_an_unreachable_endpoint_is_one_line(tmp_path):
    tree(tmp_path, small=3)
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = invoke("upload", tmp_path, "oss://some-bucket/x", "--endpoint", f"http://127.0.0.1:{port}",
                    "--region", "cn-hangzhou", env={**UNSET, **KEYS})
    assert error(result) == f"cannot reach OSS at http://127.0.0.1:{port}: Connection refused"
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("url", ["s3://bucket/x", "oss://", "oss:///x", "oss://Upper-Case/x", "oss://ab/x",
                                 "oss://bucket//x", "oss://bucket/a/../b", "bucket/x"])
def test_a_malformed_url_is_refused_before_any_request(server, bucket, tmp_path, url):
    tree(tmp_path, small=2)
    message = error(upload(server, tmp_path, url))
    assert url in message
    assert server.requests == []


def test_the_region_comes_from_the_flag_or_oss_region(server, bucket, tmp_path):
    files = tree(tmp_path, small=2)
    env = {**UNSET, **KEYS}
    assert error(invoke("upload", tmp_path, f"oss://{bucket}/r", "--endpoint", server.endpoint, env=env)) == \
        "no OSS region: pass --region or set OSS_REGION (e.g. cn-hangzhou)"
    result = invoke("upload", tmp_path, f"oss://{bucket}/r", env={**env, "OSS_REGION": "cn-hangzhou",
                                                                 "OSS_ENDPOINT": server.endpoint})
    assert result.exit_code == 0, result.output
    assert stored(server, bucket, "r/") == files


def test_missing_credentials_name_the_variables(server, bucket, tmp_path):
    tree(tmp_path, small=1)
    message = error(invoke("upload", tmp_path, f"oss://{bucket}/x", "--endpoint", server.endpoint,
                           "--region", "cn-hangzhou", env={**UNSET, "OSS_ACCESS_KEY_ID": None,
                                                           "OSS_ACCESS_KEY_SECRET": None}))
    assert message == ("no OSS credentials: set ALIBABA_CLOUD_ROLE_ARN, ALIBABA_CLOUD_OIDC_PROVIDER_ARN, "
                       "ALIBABA_CLOUD_OIDC_TOKEN_FILE (RRSA) or OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET")
    half = error(upload(server, tmp_path, f"oss://{bucket}/x", env={"ALIBABA_CLOUD_ROLE_ARN": "acs:ram::1:role/r"}))
    assert half == ("RRSA is half configured: ALIBABA_CLOUD_ROLE_ARN set but ALIBABA_CLOUD_OIDC_PROVIDER_ARN, "
                    "ALIBABA_CLOUD_OIDC_TOKEN_FILE missing")
    assert server.requests == []


class FakeSts:
    """An STS endpoint on 127.0.0.1 answering AssumeRoleWithOIDC like Alibaba Cloud's."""

    def __init__(self, refuse: bool = False, lifetime: int = 3600, message: str = "The OIDC token is invalid."):
        self.calls: list[tuple[dict, dict]] = []
        sts = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
                sts.calls.append((query, form))
                if refuse:
                    body, status = {"Code": "AuthenticationFail.OIDCToken.Invalid",
                                    "Message": message}, 400
                else:
                    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + lifetime))
                    body, status = {"Credentials": {"AccessKeyId": "STS.granted-id", "AccessKeySecret": "granted",
                                                    "SecurityToken": "granted-token", "Expiration": expires}}, 200
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http.server_port}"

    def stop(self):
        self.http.shutdown()
        self.http.server_close()


def rrsa_env(tmp_path, sts: FakeSts) -> dict:
    token = tmp_path.parent / f"{tmp_path.name}-token"
    token.write_text("projected-oidc-token\n")
    return {"ALIBABA_CLOUD_ROLE_ARN": "acs:ram::1234:role/dataset-pipeline",
            "ALIBABA_CLOUD_OIDC_PROVIDER_ARN": "acs:ram::1234:oidc-provider/ack-rrsa-c1",
            "ALIBABA_CLOUD_OIDC_TOKEN_FILE": str(token), "ALIBABA_CLOUD_STS_ENDPOINT": sts.endpoint,
            "OSS_ACCESS_KEY_ID": None, "OSS_ACCESS_KEY_SECRET": None}


def test_rrsa_credentials_come_from_assume_role_with_oidc(server, bucket, tmp_path):
    files = tree(tmp_path, small=6)
    sts = FakeSts()
    try:
        result = upload(server, tmp_path, f"oss://{bucket}/rrsa", env=rrsa_env(tmp_path, sts))
    finally:
        sts.stop()
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith("credentials: RRSA (AssumeRoleWithOIDC)")
    assert stored(server, bucket, "rrsa/") == files
    assert len(sts.calls) == 1  # one session serves every request
    query, form = sts.calls[0]
    assert query["Action"] == "AssumeRoleWithOIDC" and query["Version"] == "2015-04-01"
    assert form["OIDCToken"] == "projected-oidc-token" and "OIDCToken" not in query
    assert form["RoleArn"] == "acs:ram::1234:role/dataset-pipeline"
    assert form["OIDCProviderArn"] == "acs:ram::1234:oidc-provider/ack-rrsa-c1"
    assert server.signers == {("STS.granted-id", "granted-token")}


def test_a_refused_oidc_token_is_one_line_without_the_token(server, bucket, tmp_path):
    tree(tmp_path, small=2)
    sts = FakeSts(refuse=True)
    try:
        message = error(upload(server, tmp_path, f"oss://{bucket}/rrsa", env=rrsa_env(tmp_path, sts)))
    finally:
        sts.stop()
    assert message == ("cannot get OSS credentials: STS refused AssumeRoleWithOIDC: "
                       "400 AuthenticationFail.OIDCToken.Invalid: The OIDC token is invalid.")
    assert "projected-oidc-token" not in message
    assert server.requests == []


def test_credentials_that_arrive_expired_are_not_fetched_per_request(server, bucket, tmp_path):
    files = tree(tmp_path, small=30)
    sts = FakeSts(lifetime=-60)  # a skewed clock: the session looks expired on arrival
    try:
        result = upload(server, tmp_path, f"oss://{bucket}/expired", env=rrsa_env(tmp_path, sts))
    finally:
        sts.stop()
    assert result.exit_code == 0, result.output
    assert stored(server, bucket, "expired/") == files
    assert len(sts.calls) == 1


def test_a_token_the_sts_error_echoes_is_not_printed(server, bucket, tmp_path):
    tree(tmp_path, small=2)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXZhbHVl"
    sts = FakeSts(refuse=True, message=f"Invalid OIDCToken={jwt}, SecurityToken: CAIS9f8eDk3LmQ2xY7zP0aBcDeFgHiJkLmNoP")
    try:
        message = error(upload(server, tmp_path, f"oss://{bucket}/rrsa", env=rrsa_env(tmp_path, sts)))
    finally:
        sts.stop()
    assert message.startswith("cannot get OSS credentials: STS refused AssumeRoleWithOIDC: 400 ")
    assert jwt not in message and "CAIS9f8eDk3" not in message and "<redacted>" in message


def test_the_last_error_says_what_was_sent_and_that_a_rerun_resumes(server, bucket, tmp_path):
    tree(tmp_path, small=4)
    (tmp_path / "zz-last.bin").write_bytes(b"x" * 100)  # sent last with --jobs 1 (smallest)
    server.corrupt_uploads(100)
    try:
        message = error(upload(server, tmp_path, f"oss://{bucket}/partial", "--jobs", 1))
    finally:
        server.corrupt_uploads(0)
    assert "does not verify after 3 uploads" in message
    assert message.endswith("0 of 6 files are in place (0 sent now): the same command again resumes, skipping them")


def test_json_is_the_default_off_a_terminal(server, bucket, tmp_path):
    files = tree(tmp_path, small=2)
    result = invoke("upload", tmp_path, f"oss://{bucket}/json", "--endpoint", server.endpoint, "--region", "cn-hangzhou",
                    env={**UNSET, **KEYS})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["uploaded"] == len(files)


def test_retries_are_reported_off_a_terminal(server, bucket, tmp_path):
    tree(tmp_path, small=3)
    server.corrupt_uploads(1)
    result = upload(server, tmp_path, f"oss://{bucket}/again", "--jobs", 1)
    assert result.exit_code == 0, result.output
    assert "rlgen: retrying " in result.stderr and "(upload 2 of 3)" in result.stderr


def test_the_rlgen_command_uploads_and_never_prints_a_secret(server, bucket, tmp_path):
    files = tree(tmp_path, small=4)
    env = {**{k: v for k, v in os.environ.items() if k not in UNSET}, **KEYS}
    ok = run_rlgen("data", "upload", str(tmp_path), f"oss://{bucket}/cli", "--endpoint", server.endpoint,
                   "--region", "cn-hangzhou", env=env)
    assert ok.returncode == 0, ok.stderr
    assert stored(server, bucket, "cli/") == files
    bad = run_rlgen("data", "upload", str(tmp_path), "oss://no-such-bucket-here/cli", "--endpoint", server.endpoint,
                    "--region", "cn-hangzhou", env=env)
    assert bad.returncode == 2
    assert bad.stderr == f"rlgen: error: bucket 'no-such-bucket-here' does not exist at {server.endpoint}\n"
    malformed = run_rlgen("data", "upload", str(tmp_path), "oss:/bucket/x", env=env)
    assert malformed.returncode == 2 and malformed.stderr.count("\n") == 1
    assert all(SECRET not in out for out in (ok.stdout, ok.stderr, bad.stdout, bad.stderr))


def test_a_terminal_gets_a_progress_bar_and_a_log_none(server, bucket, tmp_path):
    tree(tmp_path, small=6)
    env = {**{k: v for k, v in os.environ.items() if k not in UNSET}, **KEYS}
    code, stdout, screen = on_terminal("data", "upload", str(tmp_path), f"oss://{bucket}/tty", "--endpoint",
                                       server.endpoint, "--region", "cn-hangzhou", "-o", "table", env=env)
    assert code == 0
    assert b"7/7 files" in screen
    assert stdout.startswith("uploaded 7 files")
    logged = run_rlgen("data", "upload", str(tmp_path), f"oss://{bucket}/log", "--endpoint", server.endpoint,
                       "--region", "cn-hangzhou", "-o", "table", env=env)
    assert logged.returncode == 0 and logged.stdout.startswith("uploaded 7 files")
    assert logged.stderr == ""  # no bar, no escape codes in a log


def test_memory_stays_bounded_for_a_file_far_larger_than_a_part(server, bucket, tmp_path):
    """The child's peak RSS for a 192 MiB file, against a run with a tiny file: not the file's size.

    VmHWM, not ru_maxrss: Linux carries the parent's peak at fork into ru_maxrss, and the
    parent here holds the server's objects."""
    env = {**{k: v for k, v in os.environ.items() if k not in UNSET}, **KEYS}
    probe = ("import sys; from rlgen.cli import main\n"
             "try:\n    main(sys.argv[1:])\n"
             "finally:\n    status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
             "    print(int(status) // 1024, file=sys.stderr)\n")

    def peak_mib(folder, prefix):
        out = subprocess.run([sys.executable, "-c", probe, "data", "upload", str(folder), f"oss://{bucket}/{prefix}",
                              "--endpoint", server.endpoint, "--region", "cn-hangzhou", "--part-size", "8"],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return int(out.stderr.split()[-1])

    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "a.bin").write_bytes(b"x" * 1024)
    (tmp_path / "large").mkdir()
    with open(tmp_path / "large" / "big.bin", "wb") as f:
        for _ in range(192):
            f.write(os.urandom(MiB))
    baseline, large = peak_mib(tmp_path / "small", "small"), peak_mib(tmp_path / "large", "large")
    assert large - baseline < 64, (baseline, large)


def test_the_endpoint_defaults_to_the_regions_internal_one_inside_a_pod(monkeypatch):
    from rlgen.data.upload import resolve_endpoint

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert resolve_endpoint(None, "cn-hangzhou") == "https://oss-cn-hangzhou.aliyuncs.com"
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert resolve_endpoint(None, "cn-hangzhou") == "https://oss-cn-hangzhou-internal.aliyuncs.com"
    assert resolve_endpoint("oss-ap-southeast-1-internal.aliyuncs.com", "ap-southeast-1") == \
        "https://oss-ap-southeast-1-internal.aliyuncs.com"
    assert resolve_endpoint("http://127.0.0.1:9000", "cn-hangzhou") == "http://127.0.0.1:9000"


@pytest.mark.parametrize("env, url", [
    ({}, "https://sts.aliyuncs.com"),
    ({"ALIBABA_CLOUD_STS_REGION": "cn-beijing"}, "https://sts.cn-beijing.aliyuncs.com"),
    ({"ALIBABA_CLOUD_STS_REGION": "cn-beijing", "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED": "true"},
     "https://sts-vpc.cn-beijing.aliyuncs.com"),
    ({"ALIBABA_CLOUD_STS_ENDPOINT": "sts-vpc.cn-shanghai.aliyuncs.com", "ALIBABA_CLOUD_STS_REGION": "cn-beijing"},
     "https://sts-vpc.cn-shanghai.aliyuncs.com"),
])
def test_sts_is_reached_where_the_pod_identity_webhook_says(monkeypatch, env, url):
    from rlgen.oss.credentials import sts_endpoint

    for name in ("ALIBABA_CLOUD_STS_ENDPOINT", "ALIBABA_CLOUD_STS_REGION", "ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert sts_endpoint() == url
