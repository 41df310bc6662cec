"""``rlgen data``: prepare a data set for verl, download a model, upload either to OSS, on a
laptop or as the cluster's dataset and model Jobs. datasets, pyarrow, the hub clients and the
OSS SDK load only when a command runs."""
from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import click

from rlgen.errors import require_extra
from rlgen.output import console, output_option, resolve_output, status, to_json
from rlgen.tools.signals import terminate_as_interrupt


@click.group("data")
def command():
    """Prepare a data set for verl, download a model, upload either to OSS."""


@command.command("prepare")
@click.option("--dataset", required=True, metavar="NAME", help="Dataset plugin, e.g. gsm8k or geometry3k.")
@click.option("--source", metavar="NAME|PATH",
              help="Hugging Face dataset, a save_to_disk folder, or a folder of train/test parquet or JSON lines "
                   "files (default: the plugin's dataset).")
@click.option("--config", "config_name", metavar="NAME", help="Config (subset) of a Hub dataset, e.g. main.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for <split>.parquet and manifest.json.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", help="Map only the first N rows of each split.")
@output_option()
def prepare_cmd(dataset: str, source: str | None, config_name: str | None, out: Path, limit: int | None,
                output: str | None):
    """Map a data set to the rows verl reads."""
    require_extra("data", "rlgen data prepare", "pyarrow", "datasets")
    from rlgen.data.prepare import prepare

    _check_prepare_inputs(source, out)
    with terminate_as_interrupt(), status(f"Preparing {dataset}"):
        results, manifest = prepare(dataset, out, source=source, config=config_name, limit=limit)
    if resolve_output(output) == "json":
        click.echo(to_json({"manifest": str(manifest), "splits": [
            {"split": r.split, "rows_in": r.rows_in, "rows_out": r.table.num_rows, "file": str(out / r.file),
             "dropped": dict(Counter(reason for _, reason in r.dropped))} for r in results]}))
        return
    for r in results:
        counts = sorted(Counter(reason for _, reason in r.dropped).items())
        reasons = "; ".join(f"{n} x {reason}" for reason, n in counts)
        dropped = f"{len(r.dropped)} dropped" + (f" ({reasons})" if reasons else "")
        click.echo(f"{r.split}: {r.rows_in} rows in, {r.table.num_rows} out, {dropped} -> {out / r.file}")
    click.echo(f"manifest: {manifest}")


@command.command("model")
@click.option("--source", type=click.Choice(["huggingface", "modelscope"]), default="huggingface", show_default=True,
              help="Hub to download from (ModelScope is the nearer one in mainland-China regions).")
@click.option("--model", required=True, metavar="OWNER/NAME", help="Model repository, e.g. Qwen/Qwen2.5-3B-Instruct.")
@click.option("--revision", metavar="REF", help="Branch, tag or commit (default: the hub's default branch).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the model's files; a second run resumes what is missing.")
@output_option()
def model_cmd(source: str, model: str, revision: str | None, out: Path, output: str | None):
    """Download a model's files, for `rlgen data upload` to copy to the bucket."""
    require_extra("data", "rlgen data model", {"huggingface": "huggingface_hub", "modelscope": "modelscope"}[source])
    from rlgen.data import visible_files
    from rlgen.data.model import download

    # The hubs' own tqdm bars stay off (read when each hub loads): on a terminal rlgen draws one
    # display for both hubs, and a log (the model Job's) gets none.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    with _FolderProgress(out, f"{model} from {source}") if sys.stderr.isatty() else nullcontext():
        folder = download(source, model, out, revision)
    found = visible_files(folder)
    size = sum(p.stat().st_size for p in found)
    if resolve_output(output) == "json":
        click.echo(to_json({"model": model, "source": source, "revision": revision, "folder": str(folder),
                            "files": len(found), "bytes": size}))
        return
    click.echo(f"{model} from {source}: {len(found)} files ({_size(size)}) in {folder}")


@command.command("upload")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("url", metavar="oss://BUCKET/PREFIX")
@click.option("--endpoint", envvar="OSS_ENDPOINT", metavar="URL",
              help="OSS endpoint [env OSS_ENDPOINT; default: the region's internal endpoint inside a "
                   "Kubernetes pod, its public endpoint elsewhere].")
@click.option("--region", envvar="OSS_REGION", help="OSS region, e.g. cn-hangzhou [env OSS_REGION].")
@click.option("--jobs", type=click.IntRange(1, 64), default=8, show_default=True, help="Files sent at once.")
@click.option("--part-size", type=click.IntRange(1, 5 * 1024), default=16, show_default=True, metavar="MIB",
              help="Files of this size and larger go by multipart upload, in parts of this size.")
@click.option("--deadline", envvar="RLGEN_OSS_DEADLINE", type=click.FloatRange(min=0, min_open=True),
              default=12 * 3600, show_default=True, metavar="SECONDS",
              help="End the upload (exit 2) when it has not finished after this long, however slowly the "
                   "endpoint answers [env RLGEN_OSS_DEADLINE].")
@output_option()
def upload_cmd(directory: Path, url: str, endpoint: str | None, region: str | None, jobs: int, part_size: int,
               deadline: float, output: str | None):
    """Upload DIRECTORY below oss://BUCKET/PREFIX; unchanged objects are skipped.

    Credentials come from the environment: the RRSA variables ALIBABA_CLOUD_ROLE_ARN,
    ALIBABA_CLOUD_OIDC_PROVIDER_ARN and ALIBABA_CLOUD_OIDC_TOKEN_FILE when set, else
    OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET.
    """
    require_extra("data", "rlgen data upload", "alibabacloud_oss_v2")
    from rlgen.data.upload import MiB, Progress, upload

    def run(progress):
        with terminate_as_interrupt():
            return upload(directory, url, region=region, endpoint=endpoint, jobs=jobs,
                          part_size=part_size * MiB, progress=progress, deadline=deadline)

    if sys.stderr.isatty():
        with _TerminalProgress() as progress:
            summary = run(progress)
    else:
        summary = run(_LogProgress(Progress))
    if resolve_output(output) == "json":
        click.echo(to_json({"target": str(summary.target), "endpoint": summary.endpoint,
                            "credentials": summary.credentials, "uploaded": summary.uploaded,
                            "uploaded_bytes": summary.uploaded_bytes, "skipped": summary.skipped,
                            "skipped_bytes": summary.skipped_bytes, "seconds": round(summary.seconds, 3)}))
        return
    click.echo(
        f"uploaded {summary.uploaded} files ({_size(summary.uploaded_bytes)}), skipped {summary.skipped} "
        f"unchanged ({_size(summary.skipped_bytes)}) to {summary.target} at {summary.endpoint} "
        f"in {summary.seconds:.1f} s, credentials: {summary.credentials}")


def _check_prepare_inputs(source: str | None, out: Path) -> None:
    """Refuse at the door what would fail deep inside datasets or pyarrow: a local path that
    does not exist (datasets would look it up on the Hub), an --out that cannot be written."""
    import os

    if source and source.startswith((".", "/", "~")) and not Path(source).expanduser().exists():
        raise click.BadParameter(f"no such folder: {source}", param_hint="--source")
    if source and Path(source).expanduser().exists():
        # Writing into the data set being read would replace or mix it with its own output.
        src, dest = Path(source).expanduser().resolve(), out.resolve()
        if dest == src or dest.is_relative_to(src) or src.is_relative_to(dest):
            raise click.BadParameter(f"{out} is, holds or is inside the source {source}: "
                                     "write the prepared files to a folder of their own", param_hint="--out")
    existing = next((p for p in [out, *out.absolute().parents] if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)):
        raise click.BadParameter(f"{existing} is not a folder rlgen can write in", param_hint="--out")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _LogProgress(base):
    """Off a terminal (the dataset Job's log): no bar, but each retry on its own line."""
    class LogProgress(base):
        def retry(self, what: str) -> None:
            click.echo(f"rlgen: retrying {what}", err=True)

    return LogProgress()


class _FolderProgress:
    """A line on stderr while a hub fills ``folder``: its files and the bytes written so far
    (partial files included), and the speed. Read from the folder itself, so it is the same
    for every hub; the hubs give no total before they start."""

    INTERVAL = 0.2

    def __init__(self, folder: Path, what: str):
        from rich.progress import DownloadColumn, Progress, SpinnerColumn, TextColumn, TransferSpeedColumn

        self._folder = folder
        self._bar = Progress(SpinnerColumn(), TextColumn(f"{what}: {{task.description}}"),
                             DownloadColumn(binary_units=True), TransferSpeedColumn(),
                             console=console(stderr=True), transient=True)
        self._task = self._bar.add_task("0 files", total=None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self):
        self._bar.start()
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        self._bar.stop()

    def _poll(self) -> None:
        from rlgen.data import visible_files

        while True:
            try:
                written = sum(p.stat().st_size for p in self._folder.rglob("*") if p.is_file())
                files = len(visible_files(self._folder))
            except OSError:  # a hub renames its partial files as it goes
                written, files = None, None
            if written is not None:
                self._bar.update(self._task, completed=written, description=f"{files} files")
            if self._stop.wait(self.INTERVAL):
                return


class _TerminalProgress:
    """A bar on stderr: bytes sent (or found unchanged) and files done."""

    def __init__(self):
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(binary_units=True),
                             TransferSpeedColumn(), TimeRemainingColumn(), console=console(stderr=True),
                             transient=True)
        self._lock = threading.Lock()
        self._task = None
        self._files = self._done = 0

    def __enter__(self):
        self._bar.start()
        return self

    def __exit__(self, *exc_info):
        self._bar.stop()

    def start(self, files: int, total_bytes: int) -> None:
        self._files = files
        self._task = self._bar.add_task(f"0/{files} files", total=total_bytes)

    def advance(self, nbytes: int) -> None:
        self._bar.advance(self._task, nbytes)

    def retry(self, what: str) -> None:
        self._bar.console.print(f"retrying {what}", style="yellow", highlight=False)

    def file_done(self) -> None:
        with self._lock:
            self._done += 1
            self._bar.update(self._task, description=f"{self._done}/{self._files} files")
