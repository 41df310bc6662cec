"""``rlgen data upload``: a prepared folder to ``oss://BUCKET/PREFIX`` with the OSS SDK.

For each file, in a bounded pool of threads:

1. hash it once, streaming (SHA-256 for identity, CRC-64/ECMA for the server's check);
2. HEAD the object: when it already verifies (below), skip it;
3. send it through the SDK's uploader, which reads the file part by part as it sends
   (multipart from ``part_size`` on, parts in parallel), never the whole file at once;
   the SHA-256 travels as ``x-oss-meta-sha256``;
4. HEAD it again: the size, the stored SHA-256 and the CRC-64 that OSS computed over
   the bytes it stored must all match ours.

Retries: the SDK retries every request (5xx, throttling, broken connections) with
exponential backoff and full jitter; a file that still fails with a retryable error, or
does not verify, is sent again up to ``FILE_ATTEMPTS`` times. Any other failure stops the
upload with one line that names the bucket, key or endpoint, never a credential.

Time: each connection has ``CONNECT_TIMEOUT``, each wait for a byte ``READ_TIMEOUT``, and the
whole command a deadline (``--deadline``, ``RLGEN_OSS_DEADLINE``) that also ends an endpoint
answering a byte at a time. An interrupt (Ctrl-C, SIGTERM) ends the requests in flight at
once, then aborts the incomplete multipart uploads within ``CLEANUP_SECONDS``.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import alibabacloud_oss_v2 as oss
from alibabacloud_oss_v2.crc import Crc64

from rlgen.option_checks import oss_bucket_error
from rlgen.data import MANIFEST, UPLOAD_DEADLINE_SECONDS, staged, visible_files
from rlgen.oss.credentials import CredentialsError, from_environment, redact
from rlgen.oss.client import (CLEANUP_SECONDS, Deadline, DeadlineExceeded, abort_incomplete, chain,
                              make_client, resolve_endpoint, service_error)
from rlgen.errors import RlgenError

MiB = 1 << 20
READ_CHUNK = MiB
FILE_ATTEMPTS = 3
#: User metadata key: sent as ``x-oss-meta-sha256``.
SHA256_KEY = "sha256"

_URL = re.compile(r"oss://(?P<bucket>[^/]*)(?:/(?P<prefix>.*))?")
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\].]+)")


@dataclass(frozen=True)
class Target:
    bucket: str
    prefix: str  #: empty, or ending in "/"

    def __str__(self) -> str:
        return f"oss://{self.bucket}/{self.prefix}"


def parse_target(url: str) -> Target:
    match = _URL.fullmatch(url)
    if not match:
        raise RlgenError(f"'{url}' is not an oss://BUCKET/PREFIX URL")
    bucket, prefix = match["bucket"], match["prefix"] or ""
    if problem := oss_bucket_error(bucket):
        raise RlgenError(f"{url}: {problem}")
    parts = prefix.rstrip("/").split("/")
    if prefix and any(part in ("", ".", "..") for part in parts):
        raise RlgenError(f"the prefix of '{url}' has an empty, '.' or '..' part")
    return Target(bucket, prefix.rstrip("/") + "/" if prefix else "")


@dataclass(frozen=True)
class LocalFile:
    path: Path
    key: str
    size: int


def local_files(directory: Path, target: Target) -> list[LocalFile]:
    paths = visible_files(directory)
    inside = directory.resolve()
    for path in paths:
        # A link out of the folder would upload whatever it points at (a key, /etc/passwd).
        if not path.resolve().is_relative_to(inside):
            raise RlgenError(f"{path} is a link out of {directory}: copy the file in, or remove the link")
    return [LocalFile(p, target.prefix + p.relative_to(directory).as_posix(), p.stat().st_size) for p in paths]


@dataclass(frozen=True)
class Digest:
    size: int
    sha256: str
    crc64: int


def digest_file(path: Path) -> Digest:
    sha256, crc64, size = hashlib.sha256(), Crc64(0), 0
    buffer = bytearray(READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buffer):
            sha256.update(view[:n])
            crc64.update(view[:n])
            size += n
    return Digest(size, sha256.hexdigest(), crc64.sum64())


def mismatch(head, digest: Digest) -> str | None:
    """Why the object HEAD describes is not the file ``digest`` describes, or None."""
    if head.content_length != digest.size:
        return f"size {head.content_length}, expected {digest.size}"
    if (head.metadata or {}).get(SHA256_KEY) != digest.sha256:
        return "its x-oss-meta-sha256 differs"
    if head.hash_crc64 is None or int(head.hash_crc64) != digest.crc64:
        return f"CRC-64 {head.hash_crc64}, expected {digest.crc64}"
    return None


class Progress:
    """What an upload reports while it runs; the CLI draws it on a terminal."""

    def start(self, files: int, total_bytes: int) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        pass

    def file_done(self) -> None:
        pass

    def retry(self, what: str) -> None:
        """A request or a file is sent again: ``what`` says which and why."""


@dataclass
class Summary:
    target: Target
    endpoint: str
    credentials: str
    uploaded: int = 0
    uploaded_bytes: int = 0
    skipped: int = 0
    skipped_bytes: int = 0
    seconds: float = 0.0


class VerificationError(Exception):
    """An uploaded object does not match its file, or cannot be checked."""


class _FileError(Exception):
    """Carries the key whose upload failed, for the error line."""

    def __init__(self, key: str, error: Exception):
        super().__init__(key)
        self.key = key
        self._error = error

    def unwrap(self) -> Exception:
        return self._error


DEADLINE_SECONDS = UPLOAD_DEADLINE_SECONDS


def _what_to_send(directory: Path, url: str, region: str | None) -> tuple:
    """The upload's target and its files, once the folder is whole: checked before any request."""
    target = parse_target(url)
    if not region:
        raise RlgenError("no OSS region: pass --region or set OSS_REGION (e.g. cn-hangzhou)")
    # A prepared folder whose commit a kill cut short is finished first: never sent half-replaced.
    staged.recover(directory, remove_undecided=False)
    files = local_files(directory, target)
    if not files:
        raise RlgenError(f"nothing to upload: {directory} holds no files")
    return target, files


def upload(directory: Path, url: str, *, region: str | None, endpoint: str | None, jobs: int = 8,
           part_size: int = 16 * MiB, part_jobs: int = 4, progress: Progress | None = None,
           deadline: float = DEADLINE_SECONDS) -> Summary:
    """Upload every file under ``directory`` below ``url``; the whole command."""
    target, files = _what_to_send(directory, url, region)
    credentials, kind = from_environment()
    address = resolve_endpoint(endpoint, region)
    progress = progress or Progress()
    budget = Deadline(deadline)
    client = make_client(region, address, credentials, jobs * part_jobs, progress, budget)
    run = _Upload(client, target, address, part_size, part_jobs, progress, budget)
    summary = Summary(target, address, kind)
    started = time.monotonic()
    keys = {f.key for f in files}
    sending = False
    try:
        # RRSA's STS exchange happens here, so that its failure is reported as such and
        # not as the first request's.
        credentials.get_credentials()
        run.check_access(files[0].key)
        # Parts an earlier, killed upload left behind cost storage and are never completed,
        # also those of a file renamed or removed since: every one below the prefix, which is
        # this upload's own. Below a bucket's root, only this folder's keys: the rest of the
        # bucket may be other tools' (an OSS lifecycle rule that aborts old multipart uploads
        # covers those).
        run.abort_incomplete(None if target.prefix else keys)
        sending = True
        run.all(files, jobs, summary)
    except BaseException as exc:
        if _clean_up(exc, run, keys, budget, sending):
            raise
        resume = f"; {_sent(summary, len(files))}" if sending else ""
        raise RlgenError(redact(run.explain(exc)) + resume) from None
    budget.stop()
    summary.seconds = time.monotonic() - started
    return summary


def _clean_up(exc: BaseException, run: _Upload, keys: set[str], budget: Deadline, sending: bool) -> bool:
    """Abort the parts left after ``exc``; whether it was an interrupt (raised again as it is).
    An interrupt aborts whatever this or a killed run left; a setup error (a wrong bucket) has
    nothing to abort, and past the deadline nothing is sent any more."""
    interrupted = not isinstance(exc, Exception)
    if interrupted:
        budget.cut()
        budget.extend(CLEANUP_SECONDS)
    if sending or interrupted:
        run.abort_incomplete(keys, quiet=True)
    budget.stop()
    return interrupted


def _sent(summary: Summary, total: int) -> str:
    done = summary.uploaded + summary.skipped
    return (f"{done} of {total} files are in place ({summary.uploaded} sent now): "
            "the same command again resumes, skipping them")


class _Upload:
    def __init__(self, client: oss.Client, target: Target, endpoint: str, part_size: int, part_jobs: int,
                 progress: Progress, deadline: Deadline):
        self.client = client
        self.deadline = deadline
        self.target = target
        self.endpoint = endpoint
        self.uploader = oss.Uploader(client, part_size=part_size, parallel_num=part_jobs)
        self.progress = progress
        self.retryer = oss.retry.StandardRetryer()
        self._lock = threading.Lock()

    def abort_incomplete(self, keys: set[str] | None, quiet: bool = False) -> int:
        return abort_incomplete(self.client, self.target.bucket, self.target.prefix, keys, quiet)

    def check_access(self, key: str) -> None:
        """One HEAD before the pool starts, so a wrong bucket, endpoint or key pair fails once."""
        _for_key(key, self.head, key)

    def all(self, files: list[LocalFile], jobs: int, summary: Summary) -> None:
        self.progress.start(len(files), sum(f.size for f in files))
        manifest = [f for f in files if f.key == self.target.prefix + MANIFEST]
        # Largest first: a big file started last would run alone at the end.
        body = sorted((f for f in files if f not in manifest), key=lambda f: (-f.size, f.key))
        with concurrent.futures.ThreadPoolExecutor(jobs, thread_name_prefix="upload") as pool:
            futures = [pool.submit(_for_key, f.key, self.one, f, summary) for f in body]
            try:
                for future in concurrent.futures.as_completed(futures):
                    future.result()
            except BaseException as exc:
                for future in futures:
                    future.cancel()
                if not isinstance(exc, Exception):
                    self.deadline.cut()  # an interrupt: the files in flight stop now, not when sent
                raise
        for f in manifest:
            _for_key(f.key, self.one, f, summary)

    def one(self, f: LocalFile, summary: Summary) -> None:
        digest = digest_file(f.path)
        head = self.head(f.key)
        if head is not None and mismatch(head, digest) is None:
            self._done(summary, digest.size, unreported=digest.size, skipped=True)
            return
        sent = 0

        def on_progress(_increment: int, transferred: int, _total: int) -> None:
            # Retried requests report their bytes again: count each byte once.
            nonlocal sent
            if transferred > sent:
                self.progress.advance(transferred - sent)
                sent = transferred

        for attempt in range(1, FILE_ATTEMPTS + 1):
            try:
                self.send(f, digest, on_progress)
                head = self.head(f.key)
                if head is not None and head.hash_crc64 is None:
                    raise VerificationError(f"cannot verify {f.key}: {self.endpoint} reports no CRC-64 of objects")
                problem = "it is missing after upload" if head is None else mismatch(head, digest)
            except Exception as exc:
                if attempt == FILE_ATTEMPTS or not self.retryable(exc):
                    raise
                problem = f"transfer failed: {redact(self.explain(exc))}"
            if problem is None:
                break
            if attempt == FILE_ATTEMPTS:
                raise VerificationError(f"{f.key} does not verify after {attempt} uploads: {problem}")
            self.progress.retry(f"{f.key} (upload {attempt + 1} of {FILE_ATTEMPTS}): {problem}")
            _backoff(attempt)
        self._done(summary, digest.size, unreported=max(0, digest.size - sent), skipped=False)

    def _done(self, summary: Summary, size: int, unreported: int, skipped: bool) -> None:
        self.progress.advance(unreported)
        with self._lock:
            if skipped:
                summary.skipped += 1
                summary.skipped_bytes += size
            else:
                summary.uploaded += 1
                summary.uploaded_bytes += size
        self.progress.file_done()

    def send(self, f: LocalFile, digest: Digest, on_progress) -> None:
        request = oss.PutObjectRequest(bucket=self.target.bucket, key=f.key,
                                       metadata={SHA256_KEY: digest.sha256}, progress_fn=on_progress)
        self.uploader.upload_file(request, str(f.path))

    def head(self, key: str):
        """The object's HEAD, or None when there is no such object."""
        try:
            return self.client.head_object(oss.HeadObjectRequest(bucket=self.target.bucket, key=key))
        except Exception as exc:
            error = service_error(exc)
            if error is not None and error.code == "NoSuchKey":
                return None
            raise

    def retryable(self, exc: Exception) -> bool:
        return any(self.retryer.is_error_retryable(e) for e in chain(exc))

    def explain(self, exc: Exception) -> str:
        """One line for the error that stopped the upload."""
        errors = list(chain(exc))
        key = next((e.key for e in errors if isinstance(e, _FileError)), str(self.target))
        if self.deadline.expired or any(isinstance(e, DeadlineExceeded) for e in errors):
            return (f"OSS at {self.endpoint} did not finish within the deadline of {self.deadline.seconds:g} s "
                    "(--deadline, RLGEN_OSS_DEADLINE)")
        for error in errors:
            if isinstance(error, CredentialsError):
                return f"cannot get OSS credentials: {error}"
            if isinstance(error, oss.exceptions.CredentialsEmptyError):
                return "cannot get OSS credentials: the provider returned none"
            if isinstance(error, VerificationError):
                return str(error)
        service = service_error(exc)
        if service is not None:
            if service.code == "NoSuchBucket":
                return f"bucket '{self.target.bucket}' does not exist at {self.endpoint}"
            if service.status_code == 403:
                return f"access to {self.target} denied: {service.code}: {_one_line(service.message)}"
            return f"OSS answered {service.status_code} {service.code} for {key}: {_one_line(service.message)}"
        if any(isinstance(error, oss.exceptions.RequestError) for error in errors):
            found = _ERRNO.search(" ".join(str(e) for e in errors))
            reason = found.group(1).strip() if found else type(errors[-1]).__name__
            return f"cannot reach OSS at {self.endpoint}: {reason}"
        return f"upload of {key} failed: {_one_line(str(errors[-1]))}"


def _for_key(key: str, action, *args):
    """``action(*args)``, its errors tagged with ``key``."""
    try:
        return action(*args)
    except Exception as exc:
        raise _FileError(key, exc) from None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _backoff(attempt: int) -> None:
    time.sleep(min(8.0, 0.5 * 2 ** attempt) * random.uniform(0.5, 1.0))
