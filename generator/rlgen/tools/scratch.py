"""A temporary folder held for as long as its command runs, and removal of those that killed
commands left behind.

The folder holds a lock file, locked before it is named: a later command of the same kind
removes every such folder whose lock nobody holds (its command was killed, so no ``finally``
ran). Removal runs on a thread beside the command's own work. The lock file is removed last,
and a second interrupt is held meanwhile: a removal cut short (a kill in the middle of it)
leaves a folder that still says it is ours and abandoned, never one that looks foreign. A
folder a command was killed in while creating it (empty, or with the lock file not yet named)
is removed once it is older than :data:`CREATION_SECONDS`.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rlgen.tools import signals

OWNER = ".owner"
#: Far longer than creating a held folder takes (a few system calls): an older folder of the
#: prefix that is empty or holds only the unnamed lock was left by a kill during its creation.
CREATION_SECONDS = 60


@contextmanager
def held_folder(prefix: str, clean_up: Callable[[], None] | None = None) -> Iterator[Path]:
    """A new folder in the system's temporary folder, named ``prefix`` and a random part,
    removed when the block ends. Meanwhile ``clean_up`` runs (by default, the abandoned folders
    of ``prefix`` are removed); an error in it only leaves a folder for the next command."""
    cleaning = threading.Thread(target=_quietly, args=(clean_up or (lambda: remove_abandoned(prefix)),),
                                name="remove-abandoned", daemon=True)
    cleaning.start()
    try:
        tmp = Path(tempfile.mkdtemp(prefix=prefix))
        try:
            fd = os.open(tmp / (OWNER + ".new"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.rename(tmp / (OWNER + ".new"), tmp / OWNER)
                yield tmp
            finally:
                os.close(fd)
        finally:
            with signals.deferred():
                remove(tmp)
    finally:
        cleaning.join()


def remove(folder: Path) -> None:
    """Remove ``folder``, its lock file last."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name in (OWNER, OWNER + ".new"):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            _unlink(entry.path)
    for name in (OWNER + ".new", OWNER):
        _unlink(os.path.join(folder, name))
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


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
        if owner.is_file():
            if not _held(owner):
                remove(folder)
        elif _killed_while_created(folder):
            remove(folder)
        else:
            foreign.append(folder)
    return foreign


def _killed_while_created(folder: Path) -> bool:
    try:
        names = os.listdir(folder)
        old = time.time() - folder.stat().st_mtime > CREATION_SECONDS
    except OSError:
        return False
    if not old or names not in ([], [OWNER + ".new"]):
        return False
    return not names or not _held(folder / names[0])


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
