"""One commit's worth of file changes that is all or nothing.

``with GitChange(repo, paths) as change:`` remembers ``paths`` (files or folders) and the
current branch; if the block fails, the files, the index and the branch are put back, so an
error after writing leaves the repository exactly as it was. With ``dry_run`` the change is
made, shown (:attr:`GitChange.preview`) and put back instead of committed. A read-only file or
folder is refused before anything is written; a journal (:mod:`rlgen.tools.git_recovery`) lets
the next command undo a change whose process was killed.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import click

from rlgen.errors import RlgenError
from rlgen.tools import git, git_recovery


class GitChange:
    """``own_edits``: the user's uncommitted edits of ``paths`` are part of the change (else they
    refuse it, named); changes elsewhere are never touched, nor committed."""

    def __init__(self, repo: Path, paths: list[Path], dry_run: bool = False, own_edits: bool = False):
        self.repo = repo
        self.paths = paths
        self.dry_run = dry_run
        if not own_edits:
            git.require_clean(repo, paths)
        #: What a dry run would have committed: where, the message and the files changed.
        self.preview: str | None = None
        #: What the commit holds (or would hold): ``{"added": [...], "changed": [...], "removed": [...]}``.
        self.files: dict[str, list[str]] = {"added": [], "changed": [], "removed": []}
        self.commit_sha: str | None = None
        self.saved = {path: _snapshot(path) for path in paths}
        self.head = git.head(repo)
        self.new_branch: str | None = None

    def __enter__(self) -> GitChange:
        if not self.dry_run:
            git.require_identity(self.repo)
        git.require_writable(self.repo, self.paths)
        self.journal = git_recovery.Journal(_command(), self.head[0], self.head[1], self._pathspecs())
        git_recovery.begin(self.repo, self.journal)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._rollback()
        git_recovery.end(self.repo)

    def _pathspecs(self) -> list[str]:
        return [p.relative_to(self.repo).as_posix() for p in self.paths]

    def branch(self, name: str, start: str | None = None) -> None:
        """Switch to a new branch from ``start`` (default HEAD), carrying files written so far.
        Its upstream is its own name on origin, where its pull request is opened: a plain
        ``git push`` goes there (a start of origin's would make it the synced branch's)."""
        self.journal.new_branch = name
        self.journal.start = git.run(self.repo, "rev-parse", f"{start or 'HEAD'}^{{commit}}").strip()
        git_recovery.begin(self.repo, self.journal)
        git.run(self.repo, "switch", "-q", "--no-track", "-c", name, *([start] if start else []))
        self.new_branch = name
        if git.origin_url(self.repo) is not None:
            git.run(self.repo, "config", f"branch.{name}.remote", "origin")
            git.run(self.repo, "config", f"branch.{name}.merge", f"refs/heads/{name}")

    def as_json(self) -> dict:
        """The common fields of a change's JSON: where it is (or would be) committed and what it holds."""
        return {"dry_run": self.dry_run, "branch": self.new_branch or self.head[0], "new_branch": bool(self.new_branch),
                "commit": self.commit_sha, "files": self.files}

    def discard(self) -> None:
        """Put everything back, as on a failure: a change that turned out to change nothing
        leaves no branch behind."""
        self._rollback()
        self.new_branch = None

    def changed(self) -> bool:
        return bool(git.run(self.repo, "status", "--porcelain", "--", *self._pathspecs()).strip())

    def commit(self, message: str) -> None:
        git.run(self.repo, "add", "-A", "--", *self._pathspecs())
        self.files = git.name_status(self.repo, "--cached", "--", *self._pathspecs())
        if self.dry_run:
            stat = git.run(self.repo, "diff", "--cached", "--stat", "--", *self._pathspecs())
            where = f"on a new branch {self.new_branch}" if self.new_branch else "on the current branch"
            body = "\n".join(f"    {line}" if line else "" for line in message.rstrip("\n").splitlines())
            self.preview = f"Dry run: nothing written. Would commit {where}:\n\n{body}\n\n{stat.rstrip()}"
            self._rollback()
            return
        git.commit(self.repo, message, [f":(literal){path}" for files in self.files.values() for path in files])
        self.commit_sha = git.head(self.repo)[1]

    def _rollback(self) -> None:
        # Best effort on every step: the original error is the one to report. Only this change's
        # own files are put back; the user's changes elsewhere go back to their branch with them.
        _quiet(self.repo, "reset", "-q", "--", *self._pathspecs())
        if self.new_branch:
            for spec in self._pathspecs():
                _quiet(self.repo, "checkout", "-q", "HEAD", "--", spec)
            _quiet(self.repo, "clean", "-fdq", "--", *self._pathspecs())
            _quiet(self.repo, "switch", "-q", *(["--detach", self.head[1]] if self.head[0] is None else [self.head[0]]))
            _quiet(self.repo, "branch", "-q", "-D", self.new_branch)
        for path, snapshot in self.saved.items():
            _restore(path, snapshot)


def _command() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path.removeprefix("rlgen ") if ctx else "change"


def _quiet(repo: Path, *args: str) -> None:
    try:
        git.run(repo, *args)
    except RlgenError:
        pass


def _snapshot(path: Path) -> bytes | dict[str, bytes] | None:
    if path.is_file():
        return path.read_bytes()
    if path.is_dir():
        return {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()}
    return None


def _restore(path: Path, snapshot: bytes | dict[str, bytes] | None) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    if isinstance(snapshot, bytes):
        path.write_bytes(snapshot)
    elif isinstance(snapshot, dict):
        for rel, data in snapshot.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_bytes(data)
