"""The data pipeline behind ``rlgen data``: the same code runs on a laptop and in the
cluster's dataset and model Jobs.

- :mod:`rlgen.data.prepare` maps a source data set to the parquet rows verl reads;
- :mod:`rlgen.data.model` downloads a model from the Hugging Face Hub or ModelScope;
- :mod:`rlgen.data.upload` copies a prepared or downloaded folder to OSS with the OSS SDK;
- :mod:`rlgen.oss.credentials` picks RRSA or an AccessKey from the environment;
- :mod:`rlgen.data.progress` is what a terminal or a Job's log shows meanwhile.

``rlgen data`` (:mod:`rlgen.commands.data`) imports these modules when a command runs: they pull
in datasets, pyarrow, the hub clients and the OSS SDK.
"""
from __future__ import annotations

from pathlib import Path

#: Written by ``prepare`` beside the parquet files; ``upload`` sends it last, so a reader
#: that finds it in the bucket also finds every file it lists.
MANIFEST = "manifest.json"
#: The default deadline of ``rlgen data upload``: under GitLab's default job timeout (60 min)
#: with a quarter hour left for the job's other steps, so that a CI job, not the endpoint,
#: says when it ends; well past what the dataset and model Jobs need over the region's
#: internal endpoint. A run that ends there resumes: the next one skips what is in place.
UPLOAD_DEADLINE_SECONDS = 45 * 60
#: The default deadline of ``rlgen data model``, for the same reasons; a rerun resumes the
#: files a stopped download left partial.
DOWNLOAD_DEADLINE_SECONDS = UPLOAD_DEADLINE_SECONDS


def visible_files(folder: Path) -> list[Path]:
    """The files of ``folder`` that are data, sorted by their relative path. Hidden paths are
    tools' state, never data: prepare's ``.<name>.partial`` files, the hubs' resume folders
    (``.cache/huggingface/``, ModelScope's ``._____temp/``)."""
    found = (p for p in folder.rglob("*")
             if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())
