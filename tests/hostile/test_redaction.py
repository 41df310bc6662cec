"""Credentials in URLs, by every name Git hosts, clouds and object stores give them, plain and
percent-encoded (once or twice, as a service's error may echo a request): none may come out
of rlgen, neither in the line that refuses an answer nor in what an object-storage error says."""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from support.repos import POOL, INSTALL, REGISTRY, one_error_line, run_rlgen

SECRET = "Zq8sEcReT0vAlUe+9x/Y="
#: Query parameters that carry a secret, by who puts them in URLs.
PARAMETERS = {
    "private_token": "GitLab personal token",
    "job_token": "GitLab CI job token",
    "deploy_token": "GitLab deploy token",
    "access_token": "OAuth, GitLab, Bitbucket",
    "oauth_token": "OAuth 1",
    "token": "many services",
    "refresh_token": "OAuth",
    "id_token": "OpenID Connect",
    "api_key": "many services",
    "apikey": "many services",
    "key": "Google APIs",
    "client_secret": "OAuth",
    "client_assertion": "OAuth JWT client authentication",
    "session_token": "STS session tokens",
    "password": "many services",
    "passphrase": "many services",
    "Signature": "AWS SigV2 and OSS v1 presigned URLs",
    "X-Amz-Signature": "AWS SigV4 presigned URLs",
    "X-Amz-Credential": "AWS SigV4 presigned URLs (the access key id)",
    "X-Amz-Security-Token": "AWS STS session token",
    "AWSAccessKeyId": "AWS SigV2 presigned URLs",
    "OSSAccessKeyId": "Alibaba Cloud OSS v1 presigned URLs",
    "security-token": "Alibaba Cloud OSS v1 STS token",
    "SecurityToken": "Alibaba Cloud OpenAPI STS token",
    "AccessKeySecret": "Alibaba Cloud OpenAPI AccessKey secret",
    "x-oss-signature": "Alibaba Cloud OSS v4 presigned URLs",
    "x-oss-credential": "Alibaba Cloud OSS v4 presigned URLs",
    "x-oss-security-token": "Alibaba Cloud OSS v4 STS token",
    "X-Goog-Signature": "Google Cloud Storage signed URLs",
    "X-Goog-Credential": "Google Cloud Storage signed URLs",
    "q-signature": "Tencent Cloud COS",
    "sig": "Azure SAS",
}


def _url(name: str) -> str:
    return f"https://store.rl.test/bucket/object?versionId=7&{name}={quote(SECRET, safe='')}&sv=2022-11-02"


@pytest.mark.parametrize("name", PARAMETERS)
@pytest.mark.parametrize("encoding", ("plain", "encoded once", "encoded twice"))
def test_a_secret_parameter_is_masked_however_it_is_encoded(name, encoding):
    from rlgen.redaction import redact

    url = _url(name)
    if encoding != "plain":
        url = quote(url, safe="")
    if encoding == "encoded twice":
        url = quote(url, safe="")
    text = f"upload failed: 403 Forbidden for PUT {url} (request id 5F2A)"
    out = redact(text)
    for shown in (SECRET, quote(SECRET, safe=""), quote(quote(SECRET, safe=""), safe="")):
        assert shown not in out, out
    # Not even its first characters: a mask that stops at an encoded '+' would leave them.
    assert SECRET[:4] not in out, out
    # What is no secret is left as it was, encoding and all.
    assert out.startswith("upload failed: 403 Forbidden for PUT ") and out.endswith(" (request id 5F2A)")
    assert "sv" in out and "2022-11-02" in out and "versionId" in out


def test_user_info_encoded_in_an_echoed_url_is_masked():
    from rlgen.redaction import redact

    once = quote(f"https://me:{quote(SECRET, safe='')}@git.rl.test/p/r.git", safe="")
    for text in (f"https://me:{quote(SECRET, safe='')}@git.rl.test/p/r.git", once, quote(once, safe="")):
        out = redact(f"fetch of {text} failed")
        assert SECRET[:4] not in out and "git.rl.test" in out, out


def test_text_without_a_secret_is_left_byte_for_byte():
    from rlgen.redaction import redact

    for text in ("a 100% sure name%20with%20spaces?sv=2022&tokenizer=bpe&keyring=x",
                 "ssh://git@git.rl.test/p/r.git", "https://h/p?x=%2541%41"):
        assert redact(text) == text


@pytest.mark.parametrize("name", ["private_token", "Signature", "X-Amz-Security-Token", "sig", "OSSAccessKeyId"])
def test_a_git_url_with_a_secret_parameter_is_refused_without_repeating_it(name, tmp_path):
    result = run_rlgen("new", str(tmp_path / "repo"), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                       "--set", f"rlgen.git_url=https://git.rl.test/o/r.git?{name}=abc123secret",
                       "--set", f"rlgen.install={INSTALL}")
    line = one_error_line(result)
    assert "secret query parameter" in line and "abc123secret" not in line, line
    assert not (tmp_path / "repo").exists()


@pytest.mark.parametrize("encoding", ("plain", "encoded once", "encoded twice"))
def test_an_object_storage_error_echoing_a_presigned_request_shows_no_part_of_its_signature(encoding):
    """What the upload's retry line and its last error say of a refused request: the OSS
    client's own masking stops at an encoded character, rlgen's rules read through it."""
    from rlgen.oss.credentials import redact

    query = f"partNumber=3&OSSAccessKeyId=STS.NUm7ZkXqA1&Expires=1767225600&Signature={quote(SECRET, safe='')}" \
            f"&security-token={quote('CAIS' + SECRET, safe='')}"
    url = f"https://bucket.oss-cn-hangzhou.aliyuncs.com/data/train.parquet?{query}"
    for _ in range(("plain", "encoded once", "encoded twice").index(encoding)):
        url = quote(url, safe="")
    out = redact(f"403 SignatureDoesNotMatch for PUT {url}")
    assert SECRET[:4] not in out and "CAIS" not in out and "NUm7" not in out, out
    assert "bucket.oss-cn-hangzhou.aliyuncs.com" in out and "1767225600" in out, out


#: Where a service may echo the environment's own secret without a parameter name before it.
ECHOES = {
    "in a path": "GET /bucket/{v}/object",
    "as a header it quotes": "x-oss-meta-note: {v}",
    "in the string it signed": "<StringToSign>PUT\n\n{v}</StringToSign>",
    "after an unknown parameter": "https://h.rl.test/o?note={v}&x=1",
}


@pytest.mark.parametrize("where", ECHOES)
@pytest.mark.parametrize("encoding", ("plain", "encoded once", "encoded once, lower-case hex", "encoded twice"))
@pytest.mark.parametrize("variable", ["OSS_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN"])
def test_the_environments_secret_echoed_anywhere_in_any_encoding_shows_no_part_of_it(where, encoding, variable,
                                                                                   monkeypatch):
    """An object-storage error that echoes the request URL-encoded once showed the first
    characters of the AccessKey secret: a literal search for it found nothing, and the mask of
    an opaque run stopped at its first encoded character."""
    from rlgen.cli import _redact
    from rlgen.oss.credentials import redact

    value = "abc123/" + SECRET
    monkeypatch.setenv(variable, value)
    shown = value
    if encoding != "plain":
        shown = quote(value, safe="")
    if encoding == "encoded once, lower-case hex":
        shown = re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), shown)
    if encoding == "encoded twice":
        shown = quote(shown, safe="")
    text = f"OSS answered 403 SignatureDoesNotMatch: {ECHOES[where].format(v=shown)} (request id 5F2A)"
    for out in (redact(text), _redact(text)):
        assert "abc12" not in out and SECRET[:4] not in out, out
        assert out.startswith("OSS answered 403 SignatureDoesNotMatch: ") and out.endswith("(request id 5F2A)")
