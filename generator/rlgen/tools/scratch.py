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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

OWNER = ".owner"


@contextmanager
def held_folder(prefix: str, clean_up: Callable[[], None] | None = None) -> Iterator[Path]:
    """A new folder in the system's temporary folder, named ``prefix`` and a random part,
    removed when the block ends. Meanwhile ``clean_up`` runs (by default, the abandoned folders
    of ``prefix`` are removed); an error in it only leaves a folder for the next command."""
    cleaning = threading.Thread(target=_quietly, args=(clean_up or (lambda: remove_abandoned(prefix)),),
                                name="remove-abandoned", daemon=True)
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


def remove_abandoned(prefix: str) -> list[Path]:
    """Remove the folders of ``prefix`` whose command is gone; the folders without a lock file,
    which are not :func:`held_folder`'s, are left and returned."""
    # Listed by name: a shared temporary folder holds thousands of entries, and matching each
    # against a pattern (glob) costs more than the rest of this clean-up.
    with os.scandir(tempfile.gettempdir()) as entries:
        found = [Path(entry.path) for entry in entries if entry.name.startswith(prefix)]
    foreign = []
    for folder in found:
        owner = folder / OWNER
        if not owner.is_file():
            foreign.append(folder)
        elif not _held(owner):
            shutil.rmtree(folder, ignore_errors=True)
    return foreign


def _quietly(clean_up: Callable[[], None]) -> None:
    # Best effort: a folder that stays costs the next command one more look.
    try:
        clean_up()
    except Exception:  # noqa: BLE001 - nothing of the command's own depends on it
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
