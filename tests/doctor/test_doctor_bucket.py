"""rlgen doctor asks the bucket rlgen.yaml records, with the real OSS SDK against the
S3-compatible server the data tests use, when the environment holds the credentials
``rlgen data upload`` reads: found, not found, access denied, unreachable, each with a fix;
without credentials the row says what it skipped and why, and doctor does not fail on it."""
from __future__ import annotations

import shutil
import uuid

import pytest
from support import cluster_objects as co
from support.cluster import against, closed_port, rows
from support.repos import BUCKET

pytest.importorskip("alibabacloud_oss_v2")
from support.oss_server import OssTestServer  # noqa: E402

NS = "rl-training"
CREDENTIALS = ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ROLE_ARN",
               "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE")


@pytest.fixture(scope="module")
def server():
    oss = OssTestServer().start()
    yield oss
    oss.stop()


@pytest.fixture
def repo(generate, tmp_path, monkeypatch):
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    return shutil.copytree(generate(), tmp_path / "repo", symlinks=True)


def _record(repo, bucket: str, endpoint: str) -> None:
    path = repo / "rlgen.yaml"
    text = path.read_text().replace(f"bucket: {BUCKET}", f"bucket: {bucket}", 1)
    path.write_text(text.replace("endpoint: ''", f"endpoint: {endpoint}", 1))


def _bucket_row(repo, bucket: str):
    result, _ = against(repo, co.healthy({"namespace": NS}), "doctor")
    return result, rows(result)[f"bucket {bucket}"]


def _credentials(monkeypatch, key_id: str = "doctor-key") -> None:
    monkeypatch.setenv("OSS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("OSS_ACCESS_KEY_SECRET", "doctor-secret-value")


def test_without_credentials_the_bucket_row_says_it_skipped(repo):
    result, row = _bucket_row(repo, BUCKET)
    assert result.returncode == 0, result.stdout + result.stderr
    assert row["state"] == "skipped"
    assert "no OSS credentials in the environment" in row["detail"] and "OSS_ACCESS_KEY_ID" in row["fix"]


def test_a_bucket_that_exists_is_found(repo, server, monkeypatch):
    name = f"rl-{uuid.uuid4().hex[:12]}"
    server.create_bucket(name)
    _record(repo, name, server.endpoint)
    _credentials(monkeypatch)
    server.reset_log()
    result, row = _bucket_row(repo, name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert row["state"] == "ok" and row["detail"].startswith(f"found at {server.endpoint}"), row
    assert ("doctor-key", "") in server.signers  # the key of the environment signed the request


def test_a_missing_bucket_is_a_problem_with_a_fix(repo, server, monkeypatch):
    name = f"rl-{uuid.uuid4().hex[:12]}"
    _record(repo, name, server.endpoint)
    _credentials(monkeypatch)
    result, row = _bucket_row(repo, name)
    assert result.returncode == 1, result.stdout + result.stderr
    assert row["state"] == "problem" and row["detail"].startswith("not found"), row
    assert f"create bucket {name}" in row["fix"] and "ak-storage.bucket" in row["fix"]


def test_a_key_the_bucket_refuses_is_access_denied(repo, server, monkeypatch):
    name = f"rl-{uuid.uuid4().hex[:12]}"
    server.create_bucket(name)
    server.deny("refused-key")
    _record(repo, name, server.endpoint)
    _credentials(monkeypatch, "refused-key")
    result, row = _bucket_row(repo, name)
    assert result.returncode == 1
    assert row["state"] == "cannot check" and row["detail"].startswith("access denied"), row
    assert "doctor-secret-value" not in result.stdout + result.stderr


def test_an_endpoint_nobody_answers_is_unreachable(repo, monkeypatch):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    _record(repo, BUCKET, endpoint)
    _credentials(monkeypatch)
    result, row = _bucket_row(repo, BUCKET)
    assert result.returncode == 1
    assert row["state"] == "cannot check" and row["detail"].startswith(f"unreachable at {endpoint}"), row
    assert "ak-storage.endpoint" in row["fix"]
