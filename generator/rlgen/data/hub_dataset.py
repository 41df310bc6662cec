"""A data set on ModelScope (``modelscope:OWNER/NAME``, the dataset Job's source in
mainland-China regions, where the Hugging Face Hub is out of reach): its repository files
downloaded with ModelScope's own ``dataset_snapshot_download`` into a hidden folder of the
prepare folder (``.source/``, which upload skips), then read as a local folder. A rerun
resumes the download: complete files are not fetched again."""
from __future__ import annotations

import logging
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.spec import MODELSCOPE_PREFIX

#: Where the repository lands, inside the prepare folder.
SOURCE_FOLDER = ".source"


def is_modelscope(source: str) -> bool:
    return source.startswith(MODELSCOPE_PREFIX)


def download(source: str, out: Path, config: str | None) -> tuple[Path, str | None]:
    """(the folder to read ``source`` from, the config still to pick there): the downloaded
    repository's ``config`` subfolder when it keeps each config in one (as Hub data sets do),
    else the repository with ``config`` for ``datasets`` to pick."""
    dataset = source.removeprefix(MODELSCOPE_PREFIX)
    target = out / SOURCE_FOLDER / dataset.replace("/", "--")
    target.mkdir(parents=True, exist_ok=True)
    # Lazy: the optional extra rlgen[data]; the client costs over a second to import.
    from modelscope import dataset_snapshot_download

    # Its INFO lines (each listed page, each file) would bury the one line an error gets.
    logging.getLogger("modelscope_hub").setLevel(logging.WARNING)

    try:
        # Endpoint from MODELSCOPE_ENDPOINT, token (private data sets) from MODELSCOPE_API_TOKEN.
        folder = Path(dataset_snapshot_download(dataset_id=dataset, local_dir=str(target)))
    except Exception as exc:  # the hub raises a dozen types; each becomes one line
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise RlgenError(f"cannot download data set '{dataset}' from modelscope: {detail[:300]}") from None
    if config and (folder / config).is_dir():
        return folder / config, None
    return folder, config
