"""Local sources pyarrow reads on its own, as ``datasets`` would read them: importing
``datasets`` costs more than mapping a GSM8K-sized data set.

- a ``save_to_disk`` DatasetDict: ``dataset_dict.json`` lists the splits; each split folder's
  ``state.json`` lists its Arrow stream files (datasets' ``Dataset.save_to_disk`` writes them
  so, without an indices mapping);
- a folder whose only data files are ``<split>.parquet`` or ``<split>-00000-of-00001.parquet``
  shards, directly or in ``data/``, for the splits datasets infers from such names.

Anything else (a Hub name, JSON lines, a README with configs, a shuffled save) is None: the
caller loads it with ``datasets``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rlgen.errors import RlgenError

#: Split names datasets takes from file names as they are (it renames others, e.g. "training").
SPLITS = ("train", "test", "validation")
_PARQUET = re.compile(rf"(?:data/)?(?P<split>{'|'.join(SPLITS)})(?:-\d{{5}}-of-\d{{5}})?\.parquet")


def read(folder: Path) -> dict[str, pa.Table] | None:
    if (folder / "dataset_dict.json").is_file():
        return _saved(folder)
    if (folder / "state.json").is_file():
        return None
    return _parquet(folder)


def _saved(folder: Path) -> dict[str, pa.Table] | None:
    try:
        splits = json.loads((folder / "dataset_dict.json").read_text())["splits"]
        states = {split: json.loads((folder / split / "state.json").read_text()) for split in splits}
    except (OSError, ValueError, KeyError, TypeError):
        return None  # datasets reports what is wrong with it
    out = {}
    for split, state in states.items():
        if state.get("_indices_data_files") or not state.get("_data_files"):
            return None
        tables = [_stream(folder / split / f["filename"]) for f in state["_data_files"]]
        out[split] = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return out


def _stream(path: Path) -> pa.Table:
    try:
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_stream(source).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise RlgenError(f"{path}: not an Arrow stream file ({' '.join(str(exc).split())})") from None


def _read_parquet(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise RlgenError(f"{path}: not a parquet file ({' '.join(str(exc).split())})") from None


def _parquet(folder: Path) -> dict[str, pa.Table] | None:
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    matches = [_PARQUET.fullmatch(f) for f in files]
    if not files or not all(matches):
        return None
    shards: dict[str, list[str]] = {}
    for match in matches:
        shards.setdefault(match["split"], []).append(match.string)
    out = {}
    for split, names in shards.items():
        tables = [_read_parquet(folder / name) for name in names]
        out[split] = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return out
