"""OSS credentials from the environment: RRSA in an ACK pod, an AccessKey elsewhere.

The storage plugin decides which variables the dataset Job gets: ``ack-pod-identity-webhook``
injects the three RRSA variables, an AccessKey Secret gives the two ``OSS_*`` ones. Errors
name variables, never their values.

The OSS SDK has no OIDC provider, so :class:`OidcRoleCredentialsProvider` calls STS
``AssumeRoleWithOIDC`` itself: one anonymous form POST, the same request Alibaba Cloud's
credentials libraries send. Pulling in ``alibabacloud-credentials`` for it would add its
Tea runtime and an async HTTP stack to the data image.
"""
from __future__ import annotations

import calendar
import json
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import alibabacloud_oss_v2 as oss

from rlgen.errors import RlgenError
from rlgen.redaction import mask_values, secret_values
from rlgen.redaction import redact as masked

RRSA_VARIABLES = ("ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE")
ACCESS_KEY_VARIABLES = ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET")

#: STS credentials last an hour; renewing a quarter-hour early keeps a long upload signed.
SESSION_SECONDS = 3600
RENEW_BEFORE_SECONDS = 900
#: Even credentials that arrive (nearly) expired, e.g. on a skewed clock, are reused this long:
#: asking STS once per request would throttle the role and slow every request.
MIN_REUSE_SECONDS = 60

# Values a remote service may echo back in an error message, never to be printed: JSON Web
# Tokens (the OIDC token), and the values of fields that name a secret.
_JWT = re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]*")
_SECRET_FIELD = re.compile(r"(?i)((?:security_?token|access_?key_?secret|oidc_?token|token|secret|signature|password)"
                           r"[\"']?\s*[=:]\s*[\"']?)([^\s\"',;&]+)")
# A long run of mixed-case letters and digits (an STS token, a key secret), not a path or name.
_LONG_OPAQUE = re.compile(r"(?<![\w+-])(?=[\w+-]*\d)(?=[\w+-]*[A-Z])(?=[\w+-]*[a-z])[\w+-]{32,}={0,2}")


def redact(text: str) -> str:
    """``text`` from a remote service with tokens and keys replaced by ``<redacted>``: the
    secrets of this environment wherever they appear, and anything shaped like one. A request
    URL it echoes (percent-encoded, perhaps) is masked by rlgen's own rules first
    (:func:`rlgen.redaction.redact`): the pattern for an opaque run below would stop at an
    encoded character and leave the first part of a signature in view."""
    # This environment's secrets first, however encoded: the rules' mask would leave the start
    # of one that no parameter name announces.
    text = masked(mask_values(text, secret_values(), "<redacted>"))
    text = _JWT.sub("<redacted>", text)
    text = _SECRET_FIELD.sub(lambda m: m[1] + "<redacted>", text)
    return _LONG_OPAQUE.sub("<redacted>", text)


#: A whole AssumeRoleWithOIDC exchange: the socket timeout bounds each read, not a server
#: that answers one byte at a time.
STS_DEADLINE_SECONDS = 30


def _within(seconds: float, call, late: str):
    """``call()``'s result, or a :class:`CredentialsError` saying ``late`` after ``seconds``.
    The call runs in a daemon thread, so the waiting thread stays interruptible (SIGTERM)."""
    result: dict = {}

    def run():
        try:
            result["value"] = call()
        except BaseException as exc:  # handed to the waiting thread
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise CredentialsError(late)
    if "error" in result:
        raise result["error"]
    return result["value"]


class CredentialsError(Exception):
    """Credentials could not be obtained; the message is safe to print."""


def from_environment() -> tuple[oss.CredentialsProvider, str]:
    """The credentials provider the environment calls for, and a line saying which it is."""
    rrsa = [name for name in RRSA_VARIABLES if os.environ.get(name)]
    if rrsa:
        missing = [name for name in RRSA_VARIABLES if name not in rrsa]
        if missing:
            raise RlgenError(f"RRSA is half configured: {', '.join(rrsa)} set but {', '.join(missing)} missing")
        return OidcRoleCredentialsProvider(
            role_arn=os.environ["ALIBABA_CLOUD_ROLE_ARN"],
            oidc_provider_arn=os.environ["ALIBABA_CLOUD_OIDC_PROVIDER_ARN"],
            token_file=os.environ["ALIBABA_CLOUD_OIDC_TOKEN_FILE"],
            sts_endpoint=sts_endpoint(),
        ), "RRSA (AssumeRoleWithOIDC)"
    if all(os.environ.get(name) for name in ACCESS_KEY_VARIABLES):
        return oss.credentials.EnvironmentVariableCredentialsProvider(), "AccessKey (OSS_ACCESS_KEY_ID)"
    raise RlgenError(
        f"no OSS credentials: set {', '.join(RRSA_VARIABLES)} (RRSA) or {' and '.join(ACCESS_KEY_VARIABLES)}")


def sts_endpoint() -> str:
    """The STS URL, from the variables ack-pod-identity-webhook injects (0.4.0 and later)."""
    endpoint = os.environ.get("ALIBABA_CLOUD_STS_ENDPOINT", "")
    if not endpoint:
        region = os.environ.get("ALIBABA_CLOUD_STS_REGION", "")
        vpc = os.environ.get("ALIBABA_CLOUD_VPC_ENDPOINT_ENABLED", "").lower() == "true"
        endpoint = f"{'sts-vpc' if vpc else 'sts'}.{region}.aliyuncs.com" if region else "sts.aliyuncs.com"
    return endpoint if "://" in endpoint else f"https://{endpoint}"


class OidcRoleCredentialsProvider(oss.CredentialsProvider):
    """STS credentials for a RAM role, exchanged for the pod's projected OIDC token.

    The SDK asks for credentials before every request, from many threads: the same
    credentials are handed out until they are close to expiry, then renewed once.
    """

    def __init__(self, role_arn: str, oidc_provider_arn: str, token_file: str, sts_endpoint: str):
        self._role_arn = role_arn
        self._provider_arn = oidc_provider_arn
        self._token_file = token_file
        self._url = sts_endpoint.rstrip("/") + "/"
        self._lock = threading.Lock()
        self._credentials: oss.Credentials | None = None
        self._renew_at = 0.0

    def get_credentials(self) -> oss.Credentials:
        with self._lock:
            if self._credentials is None or time.time() >= self._renew_at:
                self._credentials, expires = self._assume_role()
                # Sessions shorter than half an hour are renewed at half-time instead.
                now = time.time()
                self._renew_at = max(now + MIN_REUSE_SECONDS,
                                     expires - min(RENEW_BEFORE_SECONDS, (expires - now) / 2))
            return self._credentials

    def _assume_role(self):
        try:
            # The kubelet rotates the projected token: read it at every renewal.
            with open(self._token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as exc:
            raise CredentialsError(f"cannot read ALIBABA_CLOUD_OIDC_TOKEN_FILE: {exc.strerror}") from None
        query = urllib.parse.urlencode({
            "Action": "AssumeRoleWithOIDC", "Format": "JSON", "Version": "2015-04-01",
            "Timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "SignatureNonce": uuid.uuid4().hex,
        })
        # The token goes in the body, not the URL, so that no proxy or access log keeps it.
        form = urllib.parse.urlencode({
            "RoleArn": self._role_arn, "OIDCProviderArn": self._provider_arn, "OIDCToken": token,
            "RoleSessionName": f"rlgen-data-{int(time.time())}", "DurationSeconds": str(SESSION_SECONDS),
        }).encode()
        request = urllib.request.Request(f"{self._url}?{query}", data=form, method="POST",
                                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        def ask():
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.load(response)

        try:
            answer = _within(STS_DEADLINE_SECONDS, ask, f"STS at {self._url} did not answer within "
                                                       f"{STS_DEADLINE_SECONDS} s")
        except urllib.error.HTTPError as exc:
            raise CredentialsError(f"STS refused AssumeRoleWithOIDC: {redact(_sts_error(exc, token))}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CredentialsError(f"cannot reach STS at {self._url}: {reason}") from None
        except ValueError:
            raise CredentialsError("STS answered AssumeRoleWithOIDC with something that is not JSON") from None
        granted = answer.get("Credentials") or {}
        if not all(granted.get(k) for k in ("AccessKeyId", "AccessKeySecret", "SecurityToken", "Expiration")):
            raise CredentialsError("STS answered AssumeRoleWithOIDC without credentials")
        expires = calendar.timegm(time.strptime(granted["Expiration"], "%Y-%m-%dT%H:%M:%SZ"))
        return oss.Credentials(granted["AccessKeyId"], granted["AccessKeySecret"], granted["SecurityToken"]), expires


def _sts_error(exc: urllib.error.HTTPError, token: str) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    code, message = body.get("Code"), body.get("Message")
    text = f"{exc.code} {code}: {message}" if code else f"HTTP {exc.code}"
    return text.replace(token, "<redacted>") if token else text
