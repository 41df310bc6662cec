"""The one reader of a repository's files: a regular file inside the repository, of a size no
manifest or config comes near, or a refusal naming the file (exit 2).

A repository is hostile input: a committed symbolic link to ``/dev/zero`` or to a file outside
the repository, a FIFO (whose reader waits for a writer that never comes), a file that grows
without end would otherwise keep a command reading until the kernel stops it, or read what is
not the repository's. Each is refused before a byte is read, and a read stops past the limit.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from rlgen.errors import RlgenError

#: Far above any manifest, config or script a repository holds (the largest, a CRD schema, is
#: a few hundred kilobytes); a file past it is refused, not read.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: What marks the top of a repository, for a caller that does not say where it is.
_TOP_MARKS = ("rlgen.yaml", ".git")
_CHUNK = 1024 * 1024


def read_bytes(path: Path, repo: Path | None = None) -> bytes:
    """The bytes of ``path``, a file of the repository ``repo`` (the nearest folder upwards
    holding rlgen.yaml or .git when not given). A missing file raises FileNotFoundError, as
    ``Path.read_bytes`` does; anything else this module refuses is an :class:`RlgenError`."""
    path = Path(os.path.abspath(path))
    shown = _shown(path, repo)
    _inside(path, repo, shown)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise  # as Path.read_bytes: callers ask whether an optional file is there
    except IsADirectoryError:
        raise RlgenError(f"{shown}: a folder, not a file") from None
    except OSError as exc:
        raise RlgenError(f"{shown}: cannot read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise RlgenError(f"{shown}: a folder, not a file")
        _refuse(info, shown)
        chunks, size = [], 0
        # A file that says it is small may not be (/proc, a file being written): read to the limit only.
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise RlgenError(f"{shown}: more than the {MAX_FILE_BYTES} bytes rlgen reads of a file")
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: Path, repo: Path | None = None) -> str:
    """:func:`read_bytes` as UTF-8 text, as kustomize, Flux and Argo CD read it: any other
    encoding is refused with the place of the first byte that is not UTF-8."""
    return decode(read_bytes(path, repo), _shown(Path(os.path.abspath(path)), repo))


def decode(data: bytes, shown: str) -> str:
    """``data`` as UTF-8, or an :class:`RlgenError` naming ``shown`` and the line and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RlgenError(f"{shown}: line {line}: not UTF-8 text (byte {exc.start}, 0x{data[exc.start]:02x}); "
                         "kustomize and the sync engines read only UTF-8") from None


def check(path: Path, repo: Path | None = None) -> None:
    """Refuse ``path`` as :func:`read_bytes` would, without reading it: for files another
    program (kustomize) is about to read. A missing path is left to that program."""
    path = Path(os.path.abspath(path))
    shown = _shown(path, repo)
    _inside(path, repo, shown)
    try:
        info = os.stat(path)
    except OSError:
        return
    if not stat.S_ISDIR(info.st_mode):
        _refuse(info, shown)


def _refuse(info: os.stat_result, shown: str) -> None:
    """Refuse what is not a regular file, or is one past the limit by its size."""
    if not stat.S_ISREG(info.st_mode):
        raise RlgenError(f"{shown}: {_kind(info.st_mode)}, not a regular file: rlgen reads only files")
    if info.st_size > MAX_FILE_BYTES:
        raise RlgenError(f"{shown}: {info.st_size} bytes, more than the {MAX_FILE_BYTES} rlgen reads of a file")


def _inside(path: Path, repo: Path | None, shown: str) -> None:
    top = repo if repo is not None else _top(path)
    if top is None:
        return
    real, real_top = os.path.realpath(path), os.path.realpath(top)
    if real != real_top and not real.startswith(real_top.rstrip(os.sep) + os.sep):
        raise RlgenError(f"{shown}: a symbolic link to {real}, outside the repository: rlgen reads only the "
                         "repository's own files")


def _top(path: Path) -> Path | None:
    for folder in path.parents:
        if any(os.path.lexists(folder / mark) for mark in _TOP_MARKS):
            return folder
    return None


def shown(path: Path, repo: Path | None = None) -> str:
    """How an error names ``path``: relative to its repository when it is inside one."""
    return _shown(Path(os.path.abspath(path)), repo)


def _shown(path: Path, repo: Path | None) -> str:
    top = repo if repo is not None else _top(path)
    if top is not None:
        try:
            return path.relative_to(os.path.abspath(top)).as_posix()
        except ValueError:
            pass
    return str(path)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
