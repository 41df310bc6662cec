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
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not empty_clone(target):
        raise RlgenError(f"{target} already exists and is not empty")


SUFFIX = ".rlgen-tmp"


@contextmanager
def staged(target: Path) -> Iterator[Path]:
    """A temporary folder beside ``target`` that becomes ``target`` if the block succeeds.

    Beside, not in /tmp, so the final rename stays on one file system and is atomic. Its name
    holds the pid, so a later run can tell a killed run's leftover from a running one's.
    """
    check_target(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep(target.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=SUFFIX, dir=target.parent))
    except OSError as exc:
        raise RlgenError(f"{target.parent}: cannot create a folder there ({exc.strerror})") from None
    mode = _mode(target)
    adopted = empty_clone(target)
    try:
        with terminate_as_interrupt():
            if adopted:
                os.replace(target / ".git", tmp / ".git")
            yield tmp
            check_target(target)
            os.chmod(tmp, mode)
            if target.exists():
                target.rmdir()
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
