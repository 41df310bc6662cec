"""The generated repository in memory (path -> bytes), and its atomic move onto disk."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Iterator

from rlgen.errors import RlgenError
from rlgen.tools import git, git_recovery
from rlgen.tools.signals import terminate_as_interrupt


class FileTree:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def add(self, path: str, content: str | bytes) -> None:
        norm = str(PurePosixPath(path))
        if norm.startswith(("/", "..")) or "/../" in norm:
            raise RlgenError(f"refusing to write outside the repository: {path}")
        if norm in self.files:
            raise RlgenError(f"two contributions write {norm}")
        self.files[norm] = content.encode() if isinstance(content, str) else content

    def write(self, root: Path) -> None:
        """Write the files below ``root``."""
        made: set[Path] = set()
        for path in sorted(self.files):
            dest = root / path
            if dest.parent not in made:
                dest.parent.mkdir(parents=True, exist_ok=True)
                made.add(dest.parent)
            dest.write_bytes(self.files[path])


def empty_clone(target: Path) -> bool:
    """``target`` holds only ``.git`` of a repository without commits (``git clone`` of an
    empty repository): rlgen commits into it, keeping its remote."""
    return (target.is_dir() and [p.name for p in target.iterdir()] == [".git"]
            and (target / ".git").is_dir() and not git.has_commits(target))


def check_target(target: Path) -> None:
    """Refuse a ``target`` that holds anything (but an empty clone's ``.git`` and what a killed
    run of ours left in it), or an existing folder rlgen cannot write in (a read-only mount)."""
    if target.is_dir():
        sweep(target)
    if target.exists() and (not target.is_dir() or any(_entries(target))) and not empty_clone(target):
        raise RlgenError(f"{target} already exists and is not empty")
    if target.is_dir():
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".rlgen-probe-", dir=target))
        except OSError as exc:
            raise RlgenError(f"{target}: cannot write in this folder ({exc.strerror})") from None


def _entries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if not p.name.endswith(SUFFIX)]


SUFFIX = ".rlgen-tmp"


@contextmanager
def staged(target: Path) -> Iterator[Path]:
    """A temporary folder that becomes ``target`` if the block succeeds.

    A new ``target``: the folder is made beside it, so that one rename on one file system puts
    it in place. An existing (empty) ``target`` keeps its identity: a shell standing in it (``rlgen
    new .``) or a mount point stays where it is, so the folder is made inside it and its entries
    are moved up. Its name holds the pid, so a later run can tell a killed run's leftover from a
    running one's.
    """
    check_target(target)
    in_place, adopted = target.is_dir(), empty_clone(target)
    where = target if in_place else target.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        sweep(where)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=SUFFIX, dir=where))
    except OSError as exc:
        raise RlgenError(f"{where}: cannot create a folder there ({exc.strerror})") from None
    mode = _mode(target)
    try:
        with terminate_as_interrupt():
            if adopted:
                os.replace(target / ".git", tmp / ".git")
            yield tmp
            check_target(target)
            if in_place:
                for entry in sorted(tmp.iterdir()):
                    os.replace(entry, target / entry.name)
                tmp.rmdir()
            else:
                os.chmod(tmp, mode)
                os.replace(tmp, target)
    except BaseException:
        if adopted and (tmp / ".git").is_dir() and not (target / ".git").exists():
            os.replace(tmp / ".git", target / ".git")
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sweep(parent: Path) -> list[Path]:
    """Remove the temporary folders that runs killed before their cleanup left in ``parent``."""
    removed = []
    for path in parent.glob(f".*{SUFFIX}"):
        match = re.fullmatch(rf"\..+\.(\d+)\.[^.]+{re.escape(SUFFIX)}", path.name)
        if match and path.is_dir() and int(match[1]) != os.getpid() and not git_recovery.alive(int(match[1])):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _mode(target: Path) -> int:
    """An existing (empty) folder keeps its mode; a new one gets the user's umask, as mkdir
    would give it (mkdtemp makes 0700)."""
    if target.is_dir():
        return target.stat().st_mode & 0o7777
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask
