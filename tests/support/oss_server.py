"""An S3-compatible server on 127.0.0.1 that the real alibabacloud-oss-v2 SDK can talk to.

No OSS emulator exists in the registries we reach, so this serves moto's S3 engine behind a
small WSGI adapter that bridges what the SDK and moto disagree on (see
shared/reference/oss-test-server.md):

1. the OSS ``Authorization`` header becomes a dummy AWS SigV4 one for us-east-1 (moto does
   not verify signatures but reads the region from the credential scope; presigned URLs
   are not supported);
2. XML responses lose the S3 namespace (the SDK strips it only from the root tag) and
   ``ListPartsResponse`` is renamed ``ListPartsResult``;
3. ``x-oss-meta-*`` request headers become ``x-amz-meta-*`` and back on responses;
4. a HEAD error gets the ``x-oss-err`` header the SDK reads its error code from;
5. as OSS does, the CRC-64 of every object written is computed while its body arrives and
   sent in the ``x-oss-hash-crc64ecma`` header of the PUT and of every HEAD (moto has none;
   a multipart object's CRC combines its parts').

Only XML responses are buffered; object bodies stream through. ``inject_faults`` makes the
server answer some requests with 503, ``corrupt_uploads`` flips a byte of some uploads.
"""
from __future__ import annotations

import base64
import os
import re
import threading
import time
from dataclasses import dataclass, field

# moto enforces S3's 5 MiB minimum part size at import time; OSS allows 100 KiB.
os.environ.setdefault("S3_UPLOAD_PART_MIN_SIZE", "102400")

from alibabacloud_oss_v2.crc import Crc64  # noqa: E402
from moto.backends import get_backend  # noqa: E402
from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

_S3_XMLNS = b' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
_DUMMY_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDTEST/20240101/us-east-1/s3/aws4_request, "
    "SignedHeaders=host, Signature=" + "0" * 64
)
_KEY_ID = re.compile(r"Credential=([^/,\s]+)")
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
class _EveryNth:
    """Picks every ``every``-th request until it has picked ``remaining`` of them (``served``)."""

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


class _CrcTee:
    """A request body that computes the CRC-64 of what the server reads from it."""

    def __init__(self, stream):
        self._stream = stream
        self._crc = Crc64(0)
        self.size = 0

    @property
    def crc(self) -> int:
        return self._crc.sum64()

    def read(self, *args):
        return self._seen(self._stream.read(*args))

    def readline(self, *args):
        return self._seen(self._stream.readline(*args))

    def _seen(self, data: bytes) -> bytes:
        self._crc.update(data)
        self.size += len(data)
        return data


class _FlipFirstByte:
    """A request body whose first byte arrives inverted: data damaged on the way."""

    def __init__(self, stream):
        self._stream = stream
        self._flipped = False

    def read(self, *args):
        data = self._stream.read(*args)
        if data and not self._flipped:
            self._flipped = True
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    def readline(self, *args):
        return self._stream.readline(*args)


class OssAdapter:
    """WSGI middleware between the OSS SDK and moto's S3 app."""

    def __init__(self, app, bucket_exists):
        self.app = app
        self.bucket_exists = bucket_exists
        self.faults = _EveryNth()
        self.corruptions = _EveryNth()
        self.latency = 0.0
        self.requests: list[tuple[str, str]] = []
        self.signers: set[tuple[str, str]] = set()
        self.max_in_flight = 0
        self.denied: set[str] = set()  # key ids answered 403 AccessDenied
        self._in_flight = 0
        self._crc: dict[tuple[str, str], int] = {}  # (bucket, key) -> CRC-64 of the last write
        self._part_crc: dict[tuple[str, int], tuple[int, int]] = {}  # (upload id, part) -> (CRC, size)
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            time.sleep(self.latency)
            return self._handle(environ, start_response)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _handle(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        key_id = _KEY_ID.search(environ.get("HTTP_AUTHORIZATION", ""))
        with self._lock:
            self.requests.append((method, environ.get("PATH_INFO", "")))
            self.signers.add((key_id.group(1) if key_id else "", environ.get("HTTP_X_OSS_SECURITY_TOKEN", "")))
        if key_id and key_id.group(1) in self.denied:
            return self._deny(environ, start_response)
        if self.faults.take():
            return self._fault(environ, start_response)
        if method == "PUT" and int(environ.get("CONTENT_LENGTH") or 0) and self.corruptions.take():
            environ["wsgi.input"] = _FlipFirstByte(environ["wsgi.input"])
        tee = environ["wsgi.input"] = _CrcTee(environ["wsgi.input"])
        self._translate_request(environ)

        captured = {}

        def capture(status, headers, exc_info=None):
            captured["status"], captured["headers"] = status, headers
            return lambda data: None  # moto returns its body; it never calls write()

        body = self.app(environ, capture)
        status, headers = captured["status"], self._translate_headers(captured["headers"])
        content_type = next((v for k, v in headers if k.lower() == "content-type"), "")
        is_error = int(status.split()[0]) >= 400
        if not is_error:
            crc = self._track_crc(method, environ, tee)
            if crc is not None:
                headers.append(("x-oss-hash-crc64ecma", str(crc)))
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

    def _track_crc(self, method: str, environ, tee: _CrcTee) -> int | None:
        """Record the CRC-64 of what a successful request wrote; the CRC to answer with."""
        bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
        query = dict(pair.partition("=")[::2] for pair in environ.get("QUERY_STRING", "").split("&"))
        with self._lock:
            if method == "PUT" and "uploadId" in query:
                self._part_crc[(query["uploadId"], int(query["partNumber"]))] = (tee.crc, tee.size)
                return tee.crc
            if method == "PUT" and key:
                self._crc[(bucket, key)] = tee.crc
                return tee.crc
            if method == "POST" and "uploadId" in query:
                crc = 0
                for upload_id, number in sorted(p for p in self._part_crc if p[0] == query["uploadId"]):
                    part_crc, size = self._part_crc.pop((upload_id, number))
                    crc = Crc64.combine(crc, part_crc, size)
                self._crc[(bucket, key)] = crc
                return crc
            if method == "HEAD" and key:
                return self._crc.get((bucket, key))
        return None

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
    def _deny(environ, start_response):
        data = _error_xml("AccessDenied", "the key may not use this bucket")
        headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(data)))]
        start_response("403 Forbidden", headers)
        return [data]

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
    """moto's S3 engine behind :class:`OssAdapter`, served on 127.0.0.1 on a free port.

    moto keeps its state per process: give each test its own bucket.
    """

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

    def deny(self, key_id: str) -> None:
        """Answer every request signed with ``key_id`` 403 AccessDenied."""
        self.adapter.denied.add(key_id)

    def inject_faults(self, count: int, every: int = 1) -> None:
        """Answer every ``every``-th request from now on with 503, ``count`` times in all."""
        self.adapter.faults = _EveryNth(remaining=count, every=every)

    @property
    def faults_served(self) -> int:
        return self.adapter.faults.served

    def corrupt_uploads(self, count: int) -> None:
        """Flip the first byte of the next ``count`` uploaded bodies (PUT object or part)."""
        self.adapter.corruptions = _EveryNth(remaining=count)

    @property
    def corruptions_served(self) -> int:
        return self.adapter.corruptions.served

    def reset_log(self) -> None:
        with self.adapter._lock:
            self.adapter.requests.clear()
            self.adapter.signers.clear()
            self.adapter.max_in_flight = 0

    def slow_down(self, seconds: float) -> None:
        """Answer every request ``seconds`` late, as a distant endpoint would."""
        self.adapter.latency = seconds

    @property
    def requests(self) -> list[tuple[str, str]]:
        """(method, path) of every request since the last :meth:`reset_log`, in arrival order."""
        with self.adapter._lock:
            return list(self.adapter.requests)

    @property
    def signers(self) -> set[tuple[str, str]]:
        """(AccessKey id, security token) pairs the requests were signed with."""
        with self.adapter._lock:
            return set(self.adapter.signers)

    @property
    def max_in_flight(self) -> int:
        return self.adapter.max_in_flight

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
        """An object's user metadata (``x-oss-meta-NAME``) as NAME -> value."""
        stored = self._backend.get_object(bucket, key).metadata
        return {k[len("x-amz-meta-"):]: v for k, v in stored.items() if k.startswith("x-amz-meta-")}

    def incomplete_uploads(self, bucket: str) -> list[str]:
        """Keys of the multipart uploads of ``bucket`` started but neither completed nor aborted."""
        return sorted(m.key_name for m in self._backend.get_bucket(bucket).multiparts.values())
