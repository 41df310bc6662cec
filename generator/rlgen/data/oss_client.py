"""The OSS client of ``rlgen data upload``: the SDK configured with reported retries, the
error chain the SDK wraps, and the multipart uploads a stopped upload leaves behind."""
from __future__ import annotations

import alibabacloud_oss_v2 as oss

from rlgen.data.credentials import redact

REQUEST_ATTEMPTS = 5


class ReportingRetryer(oss.retry.StandardRetryer):
    """The SDK's retries with backoff, each one reported: a slow upload says why it is slow."""

    def __init__(self, progress, **kwargs):
        super().__init__(**kwargs)
        self._progress = progress

    def retry_delay(self, attempt: int, error: Exception) -> float:
        service = service_error(error)
        reason = f"{service.status_code} {service.code}" if service is not None else type(error).__name__
        self._progress.retry(f"a request (attempt {attempt + 1} of {REQUEST_ATTEMPTS}) after {redact(reason)}")
        return super().retry_delay(attempt, error)


def make_client(region: str, endpoint: str, credentials, connections: int, progress) -> oss.Client:
    """``progress.retry(what)`` hears of every retried request."""
    cfg = oss.config.load_default()
    cfg.region = region
    cfg.endpoint = endpoint
    cfg.credentials_provider = credentials
    cfg.retryer = ReportingRetryer(progress, max_attempts=REQUEST_ATTEMPTS, base_delay=0.2, max_backoff=10.0)
    cfg.http_client = oss.transport.RequestsHttpClient(max_connections=connections)
    # Each object's CRC-64 is checked against ours after upload; the SDK's own check per
    # request would hash every byte a second time.
    cfg.disable_upload_crc64_check = True
    return oss.Client(cfg)


def abort_incomplete(client: oss.Client, bucket: str, prefix: str, keys: set[str], quiet: bool = False) -> int:
    """Abort the multipart uploads of ``keys`` below ``prefix`` that were never completed:
    one upload per prefix at a time, so any such upload is a stopped one of ours."""
    aborted = 0
    try:
        pages = client.list_multipart_uploads_paginator().iter_page(
            oss.ListMultipartUploadsRequest(bucket=bucket, prefix=prefix))
        for page in pages:
            for item in page.uploads or []:
                if item.key in keys:
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
