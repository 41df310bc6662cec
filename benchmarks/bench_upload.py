"""``rlgen data upload`` against the tutorial's upload loop, on the same files in the same run
(``rlgen data prepare`` is in bench_data.py).

- upload: 200 files of 1 MiB plus one of 256 MiB to an S3-compatible server on 127.0.0.1
  (moto behind tests/oss_server.py, driven by the real OSS SDK): ``rlgen data upload``
  against the tutorial's loop that reads each whole file and PUTs the files one by one;
  once on bare loopback and once with every request answered 50 ms late, about what a
  request to OSS costs over the internet (from a laptop, say).

Each approach runs in its own child process, which reports its time (imports excluded) and
its peak resident memory. The server runs in this process, so its memory is not counted.
On bare loopback the server is the bottleneck: moto handles every request in one Python
process, so rlgen's three requests per file (HEAD to skip unchanged objects, PUT, HEAD to
verify) and its hashing of every byte cost it what its concurrency gains.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
MiB = 1 << 20
SMALL_FILES, BIG_FILE_MIB = 200, 256
LATENCY_S = 0.05
REGION = "cn-hangzhou"
KEYS = {"OSS_ACCESS_KEY_ID": "bench-key-id", "OSS_ACCESS_KEY_SECRET": "bench-key-secret"}


# --- the children: one approach each, reporting {"seconds", "peak_mib"} on the last line ---

def upload_rlgen(folder: str, url: str, endpoint: str) -> None:
    from rlgen.data.upload import upload

    started = time.perf_counter()
    upload(Path(folder), url, region=REGION, endpoint=endpoint)
    _report(started)


def upload_tutorial(folder: str, url: str, endpoint: str) -> None:
    """The tutorial's upload step: every file read whole, PUT one after the other."""
    import alibabacloud_oss_v2 as oss

    bucket, _, prefix = url[len("oss://"):].partition("/")
    started = time.perf_counter()
    cfg = oss.config.load_default()
    cfg.credentials_provider = oss.credentials.EnvironmentVariableCredentialsProvider()
    cfg.region = REGION
    cfg.endpoint = endpoint
    client = oss.Client(cfg)
    for file_path in Path(folder).rglob("*"):
        if file_path.is_file():
            with open(file_path, "rb") as f:
                data = f.read()
            client.put_object(oss.PutObjectRequest(bucket=bucket, key=f"{prefix}{file_path.relative_to(folder)}",
                                                   body=data))
    _report(started)


def _report(started: float) -> None:
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mib": peak_rss_mib()}))


def peak_rss_mib() -> float:
    """This process's peak resident memory. Not getrusage's ru_maxrss: Linux carries the
    parent's peak at fork into it, and the parent here holds the server's objects."""
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


CHILDREN = {f.__name__: f for f in (upload_rlgen, upload_tutorial)}


# --- the parent: data, server, children, table ---

def child(name: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, name, *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_upload(work: Path) -> dict[str, dict]:
    from oss_server import (
        OssTestServer,  # sets S3_UPLOAD_PART_MIN_SIZE before it imports moto
    )

    folder = work / "upload"
    (folder / "shards").mkdir(parents=True)
    block = os.urandom(MiB)
    for i in range(SMALL_FILES):
        (folder / "shards" / f"shard-{i:03d}.bin").write_bytes(block[i:] + block[:i])
    with open(folder / "big.bin", "wb") as f:
        for i in range(BIG_FILE_MIB):
            f.write(block[i:] + block[:i])
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())

    server = OssTestServer().start()
    results = {"total_mib": total / MiB}
    try:
        for latency in (0, LATENCY_S):
            server.slow_down(latency)
            for name in ("upload_tutorial", "upload_rlgen"):
                url = f"oss://bench-{name.replace('_', '-')}-{int(latency * 1000)}ms/data/"
                server.create_bucket(url.split("/")[2])
                results[name, latency] = child(name, str(folder), url, server.endpoint, env=KEYS)
                assert len(server.objects(url.split("/")[2])) == SMALL_FILES + 1
                if latency == 0:
                    results[name, "again"] = child(name, str(folder), url, server.endpoint, env=KEYS)
    finally:
        server.stop()
    return results


def main() -> None:
    sys.path.insert(0, str(TESTS))
    work = Path(tempfile.mkdtemp(prefix="bench-data-"))
    os.environ["HF_HOME"] = str(work / "hf")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    try:
        started = time.perf_counter()
        up = bench_upload(work)
        elapsed = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    files = f"{SMALL_FILES} x 1 MiB + 1 x {BIG_FILE_MIB} MiB = {up['total_mib']:.0f} MiB"
    rows = []
    for latency, where in ((0, "loopback"), (LATENCY_S, f"{LATENCY_S * 1000:.0f} ms per request")):
        theirs, mine = up["upload_tutorial", latency], up["upload_rlgen", latency]
        rows += [(f"upload {files}, {where} (s)", theirs["seconds"], mine["seconds"]),
                 ("  peak memory of the uploading process (MiB)", theirs["peak_mib"], mine["peak_mib"])]
    rows.append(("upload again, nothing changed (rlgen skips every object), loopback (s)",
                 up["upload_tutorial", "again"]["seconds"], up["upload_rlgen", "again"]["seconds"]))
    print(f"rlgen data against the tutorial: same data, same run, {os.cpu_count()} cores, {elapsed:.0f} s in all")
    print(f"{'measure':<66} {'tutorial':>9} {'rlgen':>9} {'ratio':>7}")
    for name, theirs, mine in rows:
        print(f"{name:<66} {theirs:>9.1f} {mine:>9.1f} {theirs / mine:>6.1f}x")
    print("ratio > 1: rlgen is faster or smaller. On bare loopback the one-process server is the bottleneck and\n"
          "rlgen sends three requests per file (skip check, PUT, verify) to the tutorial's one.")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        CHILDREN[sys.argv[1]](*sys.argv[2:])
    else:
        main()
