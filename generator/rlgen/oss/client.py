"""The OSS client of ``rlgen data upload`` and ``rlgen doctor``: the SDK configured with
reported retries, connect and read timeouts and a deadline for the whole command, the error
chain the SDK wraps, and the multipart uploads a stopped upload leaves behind."""
from __future__ import annotations

import os
import socket
import threading
import time
import weakref

import alibabacloud_oss_v2 as oss
from alibabacloud_oss_v2.endpoints import from_region
import requests
from urllib3.util.retry import Retry

from rlgen.errors import RlgenError
from rlgen.option_checks import endpoint_error
from rlgen.oss.credentials import redact

REQUEST_ATTEMPTS = 5
#: Seconds to open a connection, and to wait for any byte of an answer.
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 60
#: Seconds the abort of incomplete uploads may take after an interrupt.
CLEANUP_SECONDS = 5


class DeadlineExceeded(Exception):
    """The command's time is up: no request is sent any more."""


class Deadline:
    """A time budget for every request of a command. The read timeout bounds each wait for a
    byte, not an endpoint that answers one byte at a time: when the budget ends, the sockets
    still open are shut down, which ends the reads blocked on them in every thread."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._sockets: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.expired = False
        self._end = 0.0
        self.extend(seconds)

    def extend(self, seconds: float) -> None:
        """A new budget from now (the cleanup after an interrupt gets one of its own)."""
        with self._lock:
            if self._timer:
                self._timer.cancel()
            self.expired = False
            self._end = time.monotonic() + seconds
            self._timer = threading.Timer(seconds, self.cut)
            self._timer.daemon = True
            self._timer.start()

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def check(self) -> None:
        if self.expired or self.remaining() <= 0:
            self.expired = True
            raise DeadlineExceeded(f"{self.seconds:g} s")

    def track(self, sock) -> None:
        with self._lock:
            self._sockets.add(sock)

    def cut(self) -> None:
        """End every request now."""
        with self._lock:
            self.expired = True
            if self._timer:
                self._timer.cancel()
            sockets = list(self._sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        with self._lock:
            if self._timer:
                self._timer.cancel()


class _DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter (no retries of its own: the SDK retries) whose connections register
    their sockets with the deadline and whose timeouts never pass it."""

    def __init__(self, deadline: Deadline, connections: int):
        self._deadline = deadline
        super().__init__(max_retries=Retry(total=False, redirect=False, raise_on_status=False),
                         pool_connections=connections, pool_maxsize=connections)

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            scheme: _tracked(pool, self._deadline) for scheme, pool in self.poolmanager.pool_classes_by_scheme.items()}

    def send(self, request, stream=False, timeout=None, **kwargs):
        self._deadline.check()
        left = self._deadline.remaining()
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        timeout = (min(connect or left, left), min(read or left, left))
        return super().send(request, stream=stream, timeout=timeout, **kwargs)


def _tracked(pool_class, deadline: Deadline):
    class Connection(pool_class.ConnectionCls):
        def connect(self):
            super().connect()
            deadline.track(self.sock)

    return type(pool_class.__name__, (pool_class,), {"ConnectionCls": Connection})


class ReportingRetryer(oss.retry.StandardRetryer):
    """The SDK's retries with backoff, each one reported: a slow upload says why it is slow."""

    def __init__(self, progress, deadline: Deadline, **kwargs):
        super().__init__(**kwargs)
        self._progress = progress
        self._deadline = deadline

    def is_error_retryable(self, error: Exception) -> bool:
        return not self._deadline.expired and super().is_error_retryable(error)

    def retry_delay(self, attempt: int, error: Exception) -> float:
        service = service_error(error)
        reason = f"{service.status_code} {service.code}" if service is not None else type(error).__name__
        self._progress.retry(f"a request (attempt {attempt + 1} of {self.max_attempts()}) after {redact(reason)}")
        return min(super().retry_delay(attempt, error), self._deadline.remaining())


def resolve_endpoint(endpoint: str | None, region: str) -> str:
    """``endpoint`` when given; else the region's endpoint: the internal one inside a
    Kubernetes pod (ACK pods reach it from the VPC, and its traffic is free), else the
    public one."""
    if endpoint:
        if problem := endpoint_error(endpoint):
            raise RlgenError(f"--endpoint: {problem}")
        return endpoint if "://" in endpoint else f"https://{endpoint}"

    return from_region(region, False, "internal" if os.environ.get("KUBERNETES_SERVICE_HOST") else "default")


def make_client(region: str, endpoint: str, credentials, connections: int, progress, deadline: Deadline,
                attempts: int = REQUEST_ATTEMPTS) -> oss.Client:
    """``progress.retry(what)`` hears of every retried request; no request outlives ``deadline``."""
    cfg = oss.config.load_default()
    cfg.region = region
    cfg.endpoint = endpoint
    cfg.credentials_provider = credentials
    cfg.connect_timeout, cfg.readwrite_timeout = CONNECT_TIMEOUT, READ_TIMEOUT
    cfg.retryer = ReportingRetryer(progress, deadline, max_attempts=attempts, base_delay=0.2,
                                   max_backoff=10.0)
    cfg.http_client = oss.transport.RequestsHttpClient(
        max_connections=connections, connect_timeout=CONNECT_TIMEOUT, readwrite_timeout=READ_TIMEOUT,
        adapter=_DeadlineAdapter(deadline, connections))
    # Each object's CRC-64 is checked against ours after upload; the SDK's own check per
    # request would hash every byte a second time.
    cfg.disable_upload_crc64_check = True
    return oss.Client(cfg)


def abort_incomplete(client: oss.Client, bucket: str, prefix: str, keys: set[str] | None,
                     quiet: bool = False) -> int:
    """Abort the multipart uploads below ``prefix`` that were never completed: those of
    ``keys``, or with ``keys`` None every one. One upload per prefix at a time, so any such
    upload is a stopped one of ours."""
    aborted = 0
    try:
        pages = client.list_multipart_uploads_paginator().iter_page(
            oss.ListMultipartUploadsRequest(bucket=bucket, prefix=prefix))
        for page in pages:
            for item in page.uploads or []:
                if keys is None or item.key in keys:
                    client.abort_multipart_upload(oss.AbortMultipartUploadRequest(
                        bucket=bucket, key=item.key, upload_id=item.upload_id))
                    aborted += 1
    except Exception:
        if not quiet:
            raise
    return aborted


def chain(exc: BaseException):
    """``exc`` and the errors the SDK wrapped in it, outermost first."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        unwrap = getattr(exc, "unwrap", None)
        exc = unwrap() if callable(unwrap) else exc.__cause__


def service_error(exc: BaseException):
    return next((e for e in chain(exc) if isinstance(e, oss.exceptions.ServiceError)), None)
