"""Where a team's cookiecutter template (``--template``) comes from: checked at the door, copied
into a private temporary folder, and pinned to what ``rlgen.yaml`` records so a render can be
repeated: the commit of a Git URL or of a local folder that git tracks, else a digest of a
plain folder's files.

The temporary folder is removed however the block ends (an error, Ctrl-C, SIGTERM); a template
is never rendered from the team's own folder, whose later edits would change what was pinned.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError, require_extra
from rlgen.option_checks import control_error, credential_error, git_url_error, revision_error
from rlgen.redaction import redact
from rlgen.tools import git
from rlgen.tools.signals import terminate_as_interrupt

#: What makes a folder a cookiecutter template: its variables and their defaults.
CONTEXT_FILE = "cookiecutter.json"
#: ``user@host:path``, git's scp-like syntax (no scheme).
_SCP = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:")
#: Never a credential prompt, which no-input and CI cannot answer: a refused fetch is an error.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"}


@dataclass(frozen=True)
class Pin:
    """What ``rlgen.yaml`` records under ``template``: the source as given (a local folder
    relative to the repository, :func:`recorded_from`) and either the commit rendered or, for a
    folder git does not track, ``digest``."""

    source: str
    commit: str = ""
    digest: str = ""

    def record(self) -> dict[str, str]:
        return {"source": self.source, **({"commit": self.commit} if self.commit else {"digest": self.digest})}


@dataclass(frozen=True)
class Fetched:
    pin: Pin
    #: The template to render, inside ``scratch``.
    folder: Path
    #: The private temporary folder: cookiecutter's own folders and the rendered output go here too.
    scratch: Path
    #: How messages name the template: its source as fetched, when the pin records it otherwise.
    shown: str = ""

    @property
    def label(self) -> str:
        return self.shown or self.pin.source


def is_url(source: str) -> bool:
    return "://" in source or bool(_SCP.match(source))


def recorded_from(template: Fetched, repository: Path) -> Fetched:
    """``template`` as ``rlgen.yaml`` records it: a local folder relative to the repository, so
    the repository names it wherever the two are checked out side by side."""
    if is_url(template.pin.source):
        return template
    relative = os.path.relpath(template.pin.source, repository)
    return replace(template, pin=replace(template.pin, source=Path(relative).as_posix()), shown=template.label)


def check(source: str, ref: str | None, where: str = "--template") -> None:
    """The door: a URL passes the checks of every Git URL answer (no user info or token; the
    schemes Flux and Argo CD fetch) or is a ``file://`` URL; a folder must exist and hold
    ``cookiecutter.json``; a ref is a plain branch, tag or commit."""
    if ref is not None and (problem := revision_error(ref)):
        raise RlgenError(f"--template-ref: {problem}")
    if problem := control_error(source) or credential_error(source):
        raise RlgenError(f"{where}: {problem}")
    if is_url(source) and not source.startswith("file://"):
        if problem := git_url_error(source):
            raise RlgenError(f"{where}: {problem}")
    elif not source.startswith("file://"):
        _require_template(Path(source), where, source)
    require_extra("template", "a team template", "cookiecutter")


def _require_template(folder: Path, where: str, shown: str) -> None:
    if not folder.is_dir():
        raise RlgenError(f"{where}: {shown}: no such folder")
    if not (folder / CONTEXT_FILE).is_file():
        raise RlgenError(f"{where}: {shown} is not a cookiecutter template (it has no {CONTEXT_FILE})")


@contextmanager
def fetched(source: str, ref: str | None = None, commit: str | None = None,
            where: str = "--template") -> Iterator[Fetched]:
    """The template of ``source`` in a private temporary folder: at ``commit`` (a render
    repeated), else at ``ref``, else at the newest commit of its default branch (a Git URL) or
    its checked-out branch (a local repository); a plain folder as it is now."""
    check(source, ref, where)
    scratch = Path(tempfile.mkdtemp(prefix="rlgen-template-"))
    try:
        with terminate_as_interrupt():
            yield _fetch(source, ref, commit, scratch, where)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(source: str, ref: str | None, commit: str | None, scratch: Path, where: str) -> Fetched:
    clone = scratch / "template"
    if is_url(source):
        return _checkout(source, source, "", ref, commit, clone, where)
    folder = Path(source).resolve()
    top = _git_top(folder)
    if top is None:
        if ref or commit:
            asked = f"--template-ref {ref}" if ref else f"commit {commit}"
            raise RlgenError(f"{where}: {folder} is not in a git repository: {asked} needs one")
        shutil.copytree(folder, clone, symlinks=True)
        return Fetched(Pin(str(folder), digest=digest(clone)), clone, scratch)
    sub = folder.relative_to(top).as_posix()
    if git.run(top, "status", "--porcelain", "--", sub or ".").strip():
        raise RlgenError(f"{where}: {folder} has uncommitted changes: commit them (rlgen records and renders "
                         "the template's commit)")
    return _checkout(str(top), str(folder), "" if sub == "." else sub, ref, commit, clone, where)


def _git_top(folder: Path) -> Path | None:
    """The work tree that tracks ``folder``'s template, or None for a plain folder (also one
    inside a repository that does not track it)."""
    top = git.run(folder, "rev-parse", "--show-toplevel", check=False).strip()
    if not top or not git.run(folder, "ls-files", "--", CONTEXT_FILE, check=False).strip():
        return None
    return Path(top)


def _checkout(remote: str, shown: str, sub: str, ref: str | None, commit: str | None, clone: Path,
              where: str) -> Fetched:
    try:
        git.run(clone.parent, "clone", "--quiet", "--no-checkout", "--", remote, clone.name, extra_env=_NO_PROMPT)
    except RlgenError as exc:
        raise RlgenError(f"{where}: cannot fetch {redact(shown)} ({exc})") from None
    if commit:
        wanted, named = [commit], f"commit {commit}"
    elif ref:
        wanted, named = [f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", ref], f"--template-ref {ref}"
    else:
        wanted, named = ["HEAD"], "a default branch"
    sha = next((s for w in wanted if (s := git.run(clone, "rev-parse", "--verify", "--quiet", f"{w}^{{commit}}",
                                                     check=False).strip())), "")
    if not sha:
        raise RlgenError(f"{where}: {redact(shown)} has no {named}")
    git.run(clone, "checkout", "--quiet", "--detach", sha)
    folder = clone / sub if sub else clone
    _require_template(folder, where, redact(shown) + (f" at {sha[:12]}" if is_url(shown) else ""))
    return Fetched(Pin(shown, commit=sha), folder, clone.parent)


def digest(folder: Path) -> str:
    """``sha256:`` of every file's path and content below ``folder``, in path order."""
    whole = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
        content = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        whole.update(f"{path.relative_to(folder).as_posix()}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return f"sha256:{whole.hexdigest()}"

