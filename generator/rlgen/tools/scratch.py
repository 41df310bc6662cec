"""A temporary folder held for as long as its command runs, and removal of those that killed
commands left behind.

The folder holds a lock file, locked before it is named: a later command of the same kind
removes every such folder whose lock nobody holds (its command was killed, so no ``finally``
ran). Removal runs on a thread beside the command's own work.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

OWNER = ".owner"


@contextmanager
def held_folder(prefix: str) -> Iterator[Path]:
    """A new folder in the system's temporary folder, named ``prefix`` and a random part,
    removed when the block ends; meanwhile the abandoned folders of ``prefix`` are removed."""
    cleaning = threading.Thread(target=_remove_quietly, args=(prefix,), name="remove-abandoned", daemon=True)
    cleaning.start()
    try:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            fd = os.open(Path(tmp) / (OWNER + ".new"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.rename(Path(tmp) / (OWNER + ".new"), Path(tmp) / OWNER)
                yield Path(tmp)
            finally:
                os.close(fd)
    finally:
        cleaning.join()


def abandoned(prefix: str) -> Iterator[Path]:
    """The folders of ``prefix`` whose command is gone; a folder without a lock file is not one
    of :func:`held_folder`'s and is left to its owner."""
    for folder in Path(tempfile.gettempdir()).glob(prefix + "*"):
        owner = folder / OWNER
        if owner.is_file() and not _held(owner):
            yield folder


def _remove_quietly(prefix: str) -> None:
    # Best effort: a folder that stays costs the next command one more look.
    try:
        for folder in abandoned(prefix):
            shutil.rmtree(folder, ignore_errors=True)
    except OSError:
        pass


def _held(owner: Path) -> bool:
    try:
        fd = os.open(owner, os.O_RDWR)
    except OSError:
        return True  # gone meanwhile, or not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
