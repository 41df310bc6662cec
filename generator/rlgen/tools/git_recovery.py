"""rlgen's lock on a repository, and what a killed rlgen leaves, found and undone by the next one.

A command that changes the repository first writes a journal (``.git/rlgen-change.json``):
its process, the branch and commit it started from, the branch it creates and the paths it
writes. The journal goes when the change is committed or put back. The next command that
takes rlgen's lock (so no rlgen runs here) and finds a journal knows the process that wrote it
was killed (SIGKILL, a power cut: no cleanup ran), and either keeps what it finished (its
commit exists) or puts the repository back as it was: the branch it created deleted, HEAD,
index and files as before, the lock files of its killed git removed. rlgen's git children die
with it (:func:`rlgen.tools.git._die_with_parent`), so no git of the killed rlgen still runs.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
import fcntl
from pathlib import Path
from typing import Iterator

from rlgen.errors import RlgenError
from rlgen.tools import git

FILE = "rlgen-change.json"
#: What a conflicted ``rlgen update`` keeps for ``--abort`` (:mod:`rlgen.update.state`).
UPDATE_STATE = "rlgen-update.json"
#: Refs rlgen holds only while it merges (:data:`rlgen.tools.git_plumbing.LABELS`).
SCRATCH_REFS = "refs/rlgen/"


@dataclass
class Journal:
    command: str
    branch: str | None
    head: str
    paths: list[str] = field(default_factory=list)  #: relative to the repository; empty: the whole tree
    new_branch: str | None = None
    start: str | None = None  #: the commit the new branch starts from
    pid: int = field(default_factory=os.getpid)


@contextmanager
def lock(repo: Path) -> Iterator[None]:
    """Hold ``.git/rlgen.lock`` while a command changes the repository: two commands at once
    would commit each other's files or branch from each other's half-written state."""
    path = Path(repo, git.run(repo, "rev-parse", "--git-common-dir").strip()) / "rlgen.lock"
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as exc:
        raise RlgenError(f"cannot open {path} to lock the repository: {exc.strerror} (a read-only .git?): "
                         "make the repository writable and run this again") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RlgenError(f"another rlgen command is changing this repository (it holds {path}): "
                             "wait for it to finish, then run this one again") from None
        # The lock is ours, so no rlgen runs here: what a killed one left can be undone now.
        recover(repo)
        yield
    finally:
        os.close(fd)


def _path(repo: Path) -> Path:
    return Path(repo, git.run(repo, "rev-parse", "--git-dir").strip()) / FILE


def begin(repo: Path, journal: Journal) -> None:
    """Written (whole, then renamed into place) before the change writes anything."""
    path = _path(repo)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(journal)))
    os.replace(tmp, path)


def end(repo: Path) -> None:
    _path(repo).unlink(missing_ok=True)


def recover(repo: Path) -> None:
    """Called with rlgen's lock held, before anything is read."""
    for ref in git.run(repo, "for-each-ref", "--format=%(refname)", SCRATCH_REFS).split():
        git.run(repo, "update-ref", "-d", ref)
    path = _path(repo)
    path.with_suffix(".tmp").unlink(missing_ok=True)
    if not path.is_file():
        return
    try:
        journal = Journal(**json.loads(path.read_text()))
    except (ValueError, TypeError):
        raise RlgenError(f"{path} is not the journal rlgen writes: delete it and run this again") from None
    if journal.pid != os.getpid() and alive(journal.pid):
        raise RlgenError(f"{path} names rlgen process {journal.pid}, which still runs: wait for it, or stop it "
                         "and run this again")
    git_dir = path.parent
    since = path.stat().st_mtime
    # Lock files its killed git left (git removes its own on any other exit).
    common = Path(repo, git.run(repo, "rev-parse", "--git-common-dir").strip())
    # next-index-<pid>.lock: the temporary index of a commit of named files (git commit -- PATHS).
    for lock in [git_dir / "index.lock", git_dir / "HEAD.lock", *git_dir.glob("next-index-*.lock"),
                 *_ref_locks(common, journal)]:
        if lock.exists() and lock.stat().st_mtime >= since - 1:
            lock.unlink()
    conflicted = (git_dir / "MERGE_HEAD").is_file() and (git_dir / UPDATE_STATE).is_file()
    finished = conflicted or _finished(repo, journal)
    if finished and not conflicted:
        git.run(repo, "reset", "-q")  # the index as the commit has it, had git no time to write it
        _drop_merge_state(git_dir)  # git commit removes it after the commit: killed in between
    elif not finished:
        _put_back(repo, git_dir, journal)
    end(repo)
    what = f"rlgen {journal.command}" + (f" (branch {journal.new_branch})" if journal.new_branch else "")
    outcome = "kept its commit" if finished else "put the repository back as it was before it"
    # On standard output: a note, not an error (stderr keeps its one line for those).
    print(f"rlgen: {what} was killed before it finished: {outcome}")


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ref_locks(git_dir: Path, journal: Journal) -> list[Path]:
    return [git_dir / "refs" / "heads" / f"{b}.lock" for b in (journal.branch, journal.new_branch) if b]


def _tip(repo: Path, branch: str) -> str | None:
    return git.run(repo, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False).strip() or None


def _finished(repo: Path, journal: Journal) -> bool:
    """Its commit exists: the branch moved past where the change started. (An update that
    left its conflicts for the user also finished: ``rlgen update --abort`` undoes those.)"""
    if journal.new_branch:
        tip = _tip(repo, journal.new_branch)
        return tip is not None and tip != (journal.start or journal.head)
    return (_tip(repo, journal.branch) if journal.branch else git.head(repo)[1]) != journal.head


def _put_back(repo: Path, git_dir: Path, journal: Journal) -> None:
    back = [journal.branch] if journal.branch else ["--detach", journal.head]
    # Killed between writing MERGE_HEAD and its git commit: git switch refuses a merge in progress.
    _drop_merge_state(git_dir)
    git.run(repo, "switch", "-q", "--force", *back)
    git.run(repo, "reset", "-q", "--hard", journal.head)
    if journal.new_branch and _tip(repo, journal.new_branch):
        git.run(repo, "branch", "-q", "-D", journal.new_branch)
    # The tree was clean when the change began (every committing command requires it), so the
    # untracked files among the paths it writes are its own.
    git.run(repo, "clean", "-q", "-f", "-d", "--", *(journal.paths or ["."]))


def _drop_merge_state(git_dir: Path) -> None:
    for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE"):
        (git_dir / name).unlink(missing_ok=True)
