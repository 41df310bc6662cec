"""An S3-compatible server on 127.0.0.1 that the real alibabacloud-oss-v2 SDK can talk to.

No OSS emulator exists in the registries we reach, so this serves moto's S3 engine behind a
small WSGI adapter that bridges what the SDK and moto disagree on (see
shared/reference/oss-test-server.md):

1. the OSS ``Authorization`` header becomes a dummy AWS SigV4 one for us-east-1 (moto does
   not verify signatures but reads the region from the credential scope);
2. XML responses lose the S3 namespace (the SDK strips it only from the root tag) and
   ``ListPartsResponse`` is renamed ``ListPartsResult``;
3. ``x-oss-meta-*`` request headers become ``x-amz-meta-*`` and back on responses;
4. a HEAD error gets the ``x-oss-err`` header the SDK reads its error code from.

Only XML responses are buffered; object bodies stream through. ``inject_faults`` makes the
server answer some requests with 503, to test retries.
"""
from __future__ import annotations

import base64
import os
import re
import threading
from dataclasses import dataclass, field

# moto enforces S3's 5 MiB minimum part size at import time; OSS allows 100 KiB.
os.environ.setdefault("S3_UPLOAD_PART_MIN_SIZE", "102400")

from moto.backends import get_backend  # noqa: E402
from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

_S3_XMLNS = b' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
_DUMMY_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDTEST/20240101/us-east-1/s3/aws4_request, "
    "SignedHeaders=host, Signature=" + "0" * 64
)
# Query parameters of an OSS presigned URL; moto would take them for S3 sub-resources.
_PRESIGN_PARAMS = re.compile(r"(^|&)(x-oss-[a-z-]+|OSSAccessKeyId|Expires|Signature)=[^&]*", re.I)
_CODE = re.compile(rb"<Code>([^<]+)</Code>")
_MESSAGE = re.compile(rb"<Message>([^<]*)</Message>")


def _error_xml(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>test</RequestId></Error>").encode()


class _QuietHandler(MotoRequestHandler):
    # Keep-alive spares a TCP connection per request; no access log on the test output.
    protocol_version = "HTTP/1.1"

    def log_request(self, code="-", size="-"):
        pass


@dataclass
class _Faults:
    """Every ``every``-th request answers 503 until ``remaining`` faults have been served."""

    remaining: int = 0
    every: int = 1
    seen: int = 0
    served: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> bool:
        with self.lock:
            if self.remaining <= 0:
                return False
            self.seen += 1
            if self.seen % self.every:
                return False
            self.remaining -= 1
            self.served += 1
            return True


class OssAdapter:
    """WSGI middleware between the OSS SDK and moto's S3 app."""

    def __init__(self, app, bucket_exists):
        self.app = app
        self.bucket_exists = bucket_exists
        self.faults = _Faults()
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        with self._lock:
            self.requests.append((method, environ.get("PATH_INFO", "")))
        if self.faults.take():
            return self._fault(environ, start_response)
        self._translate_request(environ)

        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers
            return lambda data: None  # moto returns its body; it never calls write()

        body = self.app(environ, capture)
        status, headers = captured["status"], self._translate_headers(captured["headers"])
        content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
        is_error = int(status.split()[0]) >= 400
        if "xml" not in content_type and not (method == "HEAD" and is_error):
            start_response(status, headers)
            return body

        data = b"".join(body)
        if hasattr(body, "close"):
            body.close()
        data = data.replace(_S3_XMLNS, b"")
        data = data.replace(b"ListPartsResponse", b"ListPartsResult")
        if method == "HEAD" and is_error:
            error = self._head_error(status, data, environ.get("PATH_INFO", ""))
            headers.append(("x-oss-err", base64.b64encode(error).decode()))
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(data))))
        start_response(status, headers)
        return [data]

    @staticmethod
    def _translate_request(environ) -> None:
        if environ.get("HTTP_AUTHORIZATION"):
            environ["HTTP_AUTHORIZATION"] = _DUMMY_AUTH
        query = environ.get("QUERY_STRING", "")
        if "x-oss-signature" in query.lower() or "OSSAccessKeyId" in query:
            environ["QUERY_STRING"] = _PRESIGN_PARAMS.sub("", query).lstrip("&")
            environ["HTTP_AUTHORIZATION"] = _DUMMY_AUTH
        for key in [k for k in environ if k.startswith("HTTP_X_OSS_META_")]:
            environ["HTTP_X_AMZ_META_" + key[len("HTTP_X_OSS_META_"):]] = environ.pop(key)

    @staticmethod
    def _translate_headers(headers):
        out = []
        for name, value in headers:
            if name.lower().startswith("x-amz-meta-"):
                name = "x-oss-meta-" + name[len("x-amz-meta-"):]
            out.append((name, value))
        return out

    def _head_error(self, status: str, data: bytes, path: str) -> bytes:
        code, message = _CODE.search(data), _MESSAGE.search(data)
        if code:
            return _error_xml(code.group(1).decode(), message.group(1).decode() if message else "")
        # moto answers a HEAD with an empty body, so a missing bucket and a missing key
        # look alike; the SDK's callers need to tell them apart.
        status_code = status.split()[0]
        if status_code == "404":
            bucket = path.lstrip("/").split("/", 1)[0]
            return _error_xml("NoSuchKey" if self.bucket_exists(bucket) else "NoSuchBucket", status)
        return _error_xml("AccessDenied" if status_code == "403" else "ServiceError", status)

    @staticmethod
    def _fault(environ, start_response):
        # Drain the request body so the client sees the 503, not a reset connection.
        stream, remaining = environ["wsgi.input"], int(environ.get("CONTENT_LENGTH") or 0)
        while remaining > 0:
            chunk = stream.read(min(remaining, 1 << 16))
            if not chunk:
                break
            remaining -= len(chunk)
        data = _error_xml("ServiceUnavailable", "injected fault")
        headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(data)))]
        if environ["REQUEST_METHOD"] == "HEAD":
            headers.append(("x-oss-err", base64.b64encode(data).decode()))
        start_response("503 Service Unavailable", headers)
        return [data]


class OssTestServer:
    """moto's S3 engine behind :class:`OssAdapter`, served on 127.0.0.1 on a free port."""

    region = "cn-hangzhou"
    access_key_id = "test-access-key-id"
    access_key_secret = "test-access-key-secret"

    def __init__(self):
        self.adapter = OssAdapter(create_backend_app("s3"), lambda name: name in self._backend.buckets)
        self._server = make_server("127.0.0.1", 0, self.adapter, threaded=True,
                                   request_handler=_QuietHandler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> "OssTestServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def inject_faults(self, count: int, every: int = 1) -> None:
        """Answer every ``every``-th request from now on with 503, ``count`` times in all."""
        self.adapter.faults = _Faults(remaining=count, every=every)

    @property
    def faults_served(self) -> int:
        return self.adapter.faults.served

    def reset_log(self) -> None:
        with self.adapter._lock:
            self.adapter.requests.clear()

    @property
    def requests(self) -> list[tuple[str, str]]:
        with self.adapter._lock:
            return list(self.adapter.requests)

    @property
    def _backend(self):
        return get_backend("s3")[DEFAULT_ACCOUNT_ID]["aws"]

    def create_bucket(self, name: str) -> None:
        self._backend.create_bucket(name, "us-east-1")

    def objects(self, bucket: str) -> dict[str, bytes]:
        """Every object of ``bucket`` as key -> content, read from moto's store directly."""
        bucket_obj = self._backend.get_bucket(bucket)
        return {key: obj.value for key, obj in bucket_obj.keys.items()}

    def metadata(self, bucket: str, key: str) -> dict[str, str]:
        return dict(self._backend.get_object(bucket, key).metadata)
