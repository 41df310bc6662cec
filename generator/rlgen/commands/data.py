"""``rlgen data``: prepare a data set for verl, download a model, upload either to OSS, on a
laptop or as the cluster's dataset and model Jobs. datasets, pyarrow, the hub clients and the
OSS SDK load only when a command runs."""
from __future__ import annotations

import os
import sys
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import click

from rlgen.data import DOWNLOAD_DEADLINE_SECONDS, UPLOAD_DEADLINE_SECONDS
from rlgen.errors import require_extra
from rlgen.option_checks import dataset_source_error
from rlgen.output import out_folder_error, output_option, resolve_output, status, to_json
from rlgen.spec import MODEL_SOURCES, MODELSCOPE_PREFIX

#: Arrow counts rows in 64 bits.
MAX_ROWS = 2**63 - 1


@click.group("data")
def command():
    """Prepare and upload the training data set and model.

    Map a data set to verl's rows, download a model, upload either to OSS."""


@command.command("prepare")
@click.option("--dataset", required=True, metavar="NAME", help="Dataset plugin, e.g. gsm8k or geometry3k.")
@click.option("--source", metavar="NAME|modelscope:NAME|PATH",
              help="Hugging Face dataset, modelscope:OWNER/NAME (ModelScope, reachable from mainland China), a "
                   "save_to_disk folder, or a folder of train/test parquet or JSON lines files (default: the "
                   "plugin's dataset).")
@click.option("--config", "config_name", metavar="NAME", help="Config (subset) of a Hub dataset, e.g. main.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for <split>.parquet and manifest.json.")
@click.option("--limit", type=click.IntRange(min=1, max=MAX_ROWS), metavar="N",
              help=f"Map only the first N rows of each split (at most {MAX_ROWS}, Arrow's row count).")
@output_option()
def prepare_cmd(dataset: str, source: str | None, config_name: str | None, out: Path, limit: int | None,
                output: str | None):
    """Map a data set to the rows verl reads."""
    require_extra("data", "rlgen data prepare", "pyarrow", "datasets",
                  *(["modelscope"] if (source or "").startswith(MODELSCOPE_PREFIX) else []))
    from rlgen.data.prepare import prepare
    from rlgen.tools.signals import terminate_as_interrupt

    _check_prepare_inputs(source, out)
    # ModelScope's own tqdm bars stay off, as for rlgen data model: the spinner says it is working.
    os.environ.setdefault("TQDM_DISABLE", "1")
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
@click.option("--source", type=click.Choice(MODEL_SOURCES), default="huggingface", show_default=True,
              help="Hub to download from (ModelScope is the nearer one in mainland-China regions).")
@click.option("--model", required=True, metavar="OWNER/NAME", help="Model repository, e.g. Qwen/Qwen2.5-3B-Instruct.")
@click.option("--revision", metavar="REF", help="Branch, tag or commit (default: the hub's default branch).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the model's files; a second run resumes what is missing.")
@click.option("--deadline", envvar="RLGEN_DOWNLOAD_DEADLINE", type=click.FloatRange(min=0, min_open=True),
              default=DOWNLOAD_DEADLINE_SECONDS, show_default=True, metavar="SECONDS",
              help="End the download (exit 2) when it has not finished after this long, however slowly the hub "
                   "answers; a rerun resumes the files left partial [env RLGEN_DOWNLOAD_DEADLINE].")
@output_option()
def model_cmd(source: str, model: str, revision: str | None, out: Path, deadline: float, output: str | None):
    """Download a model's files, for `rlgen data upload` to copy to the bucket."""
    if problem := out_folder_error(out):
        raise click.BadParameter(problem, param_hint="--out")
    require_extra("data", "rlgen data model", {"huggingface": "huggingface_hub", "modelscope": "modelscope"}[source])
    from rlgen.data import progress, visible_files
    from rlgen.data.model import download

    # The hubs' own tqdm bars stay off (read when each hub loads): on a terminal rlgen draws one
    # display for both hubs, and a log (the model Job's) gets none.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    with progress.FolderProgress(out, f"{model} from {source}") if sys.stderr.isatty() else nullcontext():
        folder = download(source, model, out, revision, deadline)
    found = visible_files(folder)
    size = sum(p.stat().st_size for p in found)
    if resolve_output(output) == "json":
        click.echo(to_json({"model": model, "source": source, "revision": revision, "folder": str(folder),
                            "files": len(found), "bytes": size}))
        return
    click.echo(f"{model} from {source}: {len(found)} files ({progress.human_size(size)}) in {folder}")


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
              default=UPLOAD_DEADLINE_SECONDS, show_default=True, metavar="SECONDS",
              help="End the upload (exit 2) when it has not finished after this long, however slowly the "
                   "endpoint answers; a rerun resumes, skipping what is in place. The default fits in a "
                   "CI job's usual timeout (GitLab's: 60 min) [env RLGEN_OSS_DEADLINE].")
@output_option()
def upload_cmd(directory: Path, url: str, endpoint: str | None, region: str | None, jobs: int, part_size: int,
               deadline: float, output: str | None):
    """Upload DIRECTORY below oss://BUCKET/PREFIX; unchanged objects are skipped.

    Credentials come from the environment: the RRSA variables ALIBABA_CLOUD_ROLE_ARN,
    ALIBABA_CLOUD_OIDC_PROVIDER_ARN and ALIBABA_CLOUD_OIDC_TOKEN_FILE when set, else
    OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET.
    """
    require_extra("data", "rlgen data upload", "alibabacloud_oss_v2")
    from rlgen.data import progress
    from rlgen.data.upload import MiB, Progress, upload
    from rlgen.tools.signals import terminate_as_interrupt

    def run(reporter):
        with terminate_as_interrupt():
            return upload(directory, url, region=region, endpoint=endpoint, jobs=jobs,
                          part_size=part_size * MiB, progress=reporter, deadline=deadline)

    if sys.stderr.isatty():
        with progress.TerminalProgress() as bar:
            summary = run(bar)
    else:
        summary = run(progress.log_progress(Progress))
    if resolve_output(output) == "json":
        click.echo(to_json({"target": str(summary.target), "endpoint": summary.endpoint,
                            "credentials": summary.credentials, "uploaded": summary.uploaded,
                            "uploaded_bytes": summary.uploaded_bytes, "skipped": summary.skipped,
                            "skipped_bytes": summary.skipped_bytes, "seconds": round(summary.seconds, 3)}))
        return
    click.echo(
        f"uploaded {summary.uploaded} files ({progress.human_size(summary.uploaded_bytes)}), skipped {summary.skipped} "
        f"unchanged ({progress.human_size(summary.skipped_bytes)}) to {summary.target} at {summary.endpoint} "
        f"in {summary.seconds:.1f} s, credentials: {summary.credentials}")


def _check_prepare_inputs(source: str | None, out: Path) -> None:
    """Refuse at the door what would fail deep inside datasets or pyarrow: a local path that
    does not exist (datasets would look it up on the Hub), an --out that cannot be written."""

    if source and source.startswith(MODELSCOPE_PREFIX):
        if problem := dataset_source_error(source):
            raise click.BadParameter(problem, param_hint="--source")
        return
    if source and source.startswith((".", "/", "~")) and not Path(source).expanduser().exists():
        raise click.BadParameter(f"no such folder: {source}", param_hint="--source")
    if source and Path(source).expanduser().exists():
        # Writing into the data set being read would replace or mix it with its own output.
        src, dest = Path(source).expanduser().resolve(), out.resolve()
        if dest == src or dest.is_relative_to(src) or src.is_relative_to(dest):
            raise click.BadParameter(f"{out} is, holds or is inside the source {source}: "
                                     "write the prepared files to a folder of their own", param_hint="--out")
    if problem := out_folder_error(out):
        raise click.BadParameter(problem, param_hint="--out")
