"""``rlgen data model``: a model's files from the Hugging Face Hub or ModelScope into a
folder, which ``rlgen data upload`` then copies to the bucket folder the trainer reads.

Both hubs' ``snapshot_download`` resume: a file already complete in the folder is not
fetched again, and a partial one continues. Their resume state lives in hidden folders of
the target (``.cache/huggingface/``, ModelScope's ``._____temp/``), which upload skips.
The hub clients are imported only here, when the command runs.
"""
from __future__ import annotations

from pathlib import Path

from rlgen.data import DOWNLOAD_DEADLINE_SECONDS, bounded
from rlgen.errors import RlgenError
from rlgen.spec import MODEL_SOURCES as SOURCES


def download(source: str, model: str, out: Path, revision: str | None = None,
             deadline: float = DOWNLOAD_DEADLINE_SECONDS) -> Path:
    """Download ``model`` (``owner/name``) at ``revision`` (default: the hub's default branch)
    into ``out`` within ``deadline`` seconds; returns the folder. Any hub error becomes one
    line naming the model."""
    if source not in SOURCES:
        raise RlgenError(f"unknown model source '{source}' (one of: {', '.join(SOURCES)})")
    if model.count("/") != 1 or not all(model.split("/")):
        raise RlgenError(f"model '{model}' is not an owner/name repository id")
    out.mkdir(parents=True, exist_ok=True)
    return Path(bounded.call(_fetch, (source, model, out, revision), deadline,
                             f"the download of model '{model}' from {source}", "--deadline, RLGEN_DOWNLOAD_DEADLINE"))


def _fetch(source: str, model: str, out: Path, revision: str | None) -> str:
    fetch = _huggingface if source == "huggingface" else _modelscope
    try:
        return fetch(model, out, revision)
    except Exception as exc:  # each hub raises its own dozen types; each becomes one line
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise RlgenError(f"cannot download model '{model}' from {source}: {detail[:300]}") from None


def _huggingface(model: str, out: Path, revision: str | None) -> str:
    # Lazy: the optional extra rlgen[data]; 2084 ms to import (median of 7).
    from huggingface_hub import snapshot_download

    # Token from HF_TOKEN (only gated or private models need one); endpoint from HF_ENDPOINT.
    return snapshot_download(repo_id=model, revision=revision, local_dir=str(out))


def _modelscope(model: str, out: Path, revision: str | None) -> str:
    # Lazy: the optional extra rlgen[data]; 1440 ms to import (median of 7).
    from modelscope import snapshot_download

    return snapshot_download(model_id=model, revision=revision, local_dir=str(out))
