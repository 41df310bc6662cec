"""The commit of a prepared folder: its parquet files and its manifest replaced together, so that
a kill at any moment leaves a manifest that describes the files beside it, the old one or the
new one, never none (a killed ``rlgen data prepare`` used to leave the folder without a
manifest until the next run).

1. each new file is written beside its place as ``.<name>.partial`` and synced;
2. the new manifest is written as ``.manifest.json.partial`` and synced: from here on the
   commit is decided, as every file it lists is whole;
3. each partial file replaces its file, then the manifest replaces the old one.

A kill before step 2 leaves the old files and manifest, and partial files that :func:`recover`
removes; a kill after it leaves a commit that :func:`recover` finishes. ``prepare`` and
``upload`` call it first, so neither ever reads a folder in between.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from rlgen.data import MANIFEST


def partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial")


def write(path: Path, data: bytes) -> None:
    """``data`` into ``path`` whole and synced (a partial file renamed over it)."""
    staged = partial(path)
    with open(staged, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(staged, path)


def sync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def commit(folder: Path, manifest: bytes) -> None:
    """Step 2 and 3: every file the manifest lists is already staged as its partial file."""
    record = partial(folder / MANIFEST)
    with open(record, "wb") as f:
        f.write(manifest)
        f.flush()
        os.fsync(f.fileno())
    _sync_folder(folder)
    _finish(folder, record)


def recover(folder: Path, remove_undecided: bool = True) -> None:
    """Finish the commit a killed run decided, or (``remove_undecided``) remove the partial
    files of one it had not; ``upload`` only finishes: hidden files of a folder it did not
    prepare are not its to remove, and it sends none."""
    record = partial(folder / MANIFEST)
    if record.is_file():
        try:
            json.loads(record.read_bytes())
        except ValueError:  # cut while written, before it was synced: not decided
            record.unlink()
        else:
            _finish(folder, record)
            return
    if remove_undecided and folder.is_dir():
        for stale in folder.glob(".*.partial"):
            stale.unlink(missing_ok=True)


def _finish(folder: Path, record: Path) -> None:
    splits = json.loads(record.read_bytes()).get("splits", {})
    for entry in splits.values():
        staged = partial(folder / entry["file"])
        if staged.exists():
            os.replace(staged, folder / entry["file"])
    os.replace(record, folder / MANIFEST)
    _sync_folder(folder)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
