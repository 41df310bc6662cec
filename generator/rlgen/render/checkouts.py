"""A revision of the repository as a render reads it: its committable files, listed and read
without checking the revision out.

The working tree is read from disk. A commit is read blob by blob (one ``git ls-tree``, then
``git cat-file --batch`` for what is asked), so ``rlgen diff`` of one changed run reads that
run and what it builds from, not the whole revision; what kustomize must build is written to
a sparse folder holding only the files its roots read (:meth:`Commit.on_disk`). Compared with
the working tree (:func:`changed`), a commit reads the files git says are the same in both
from disk, and asks git only for the ones that differ. Nothing is registered with git, so a
killed command leaves nothing git remembers.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from functools import cached_property
from pathlib import Path

from rlgen.tools import git, git_plumbing
from rlgen.tools.repo_files import decode, read_bytes

_SYMLINK = "120000"
_STAGED = re.compile(r"[0-7]{6} [0-9a-f]{40,64} [0-3]")


def blob_id(data: bytes) -> str:
    """The id git gives these bytes (``git hash-object``): equal ids, equal content, whichever
    revision or working tree the bytes come from."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def visible(rel: str) -> bool:
    # Hidden folders (.github: workflows, .rlgen-cache) hold no cluster objects. A part of the
    # path starts with a dot: the path does, or a dot follows one of its slashes.
    return not rel.startswith(".") and "/." not in rel


class Checkout:
    """``files``: the committable files, as paths relative to the repository (POSIX)."""

    label: str
    repo: Path
    files: frozenset[str]

    @cached_property
    def folders(self) -> frozenset[str]:
        """Every folder holding a file, at any depth ("." for the top)."""
        out = {"."}
        for rel in self.files:
            parts = rel.split("/")[:-1]
            out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        return frozenset(out)

    @cached_property
    def beside(self) -> dict[str, list[str]]:
        """Folder -> the files directly in it."""
        out: dict[str, list[str]] = {}
        for rel in self.files:
            folder, _, _ = rel.rpartition("/")
            out.setdefault(folder or ".", []).append(rel)
        return out

    def below(self, folder: str) -> list[str]:
        if folder == ".":
            return sorted(self.files)
        return sorted(rel for rel in self.files if rel.startswith(folder + "/"))

    def read(self, rel: str) -> bytes:
        raise NotImplementedError

    def text(self, rel: str) -> str:
        """The file as UTF-8 text, as kustomize and the sync engines read it: anything else is
        refused (a character replaced here would pass a check the cluster fails)."""
        return decode(self.read(rel), rel)

    def id(self, rel: str) -> str:
        raise NotImplementedError

    def prefetch(self, rels) -> None:
        """These files will be read: a commit reads them, with any asked for before, along with
        the next file read or written, in one git call."""

    def on_disk(self, rels) -> Path:
        """A folder where at least ``rels`` are files, as in this revision."""
        raise NotImplementedError


class WorkingTree(Checkout):
    """The user's checkout, uncommitted edits and untracked (not ignored) files included."""

    def __init__(self, label: str, root: Path):
        self.label, self.repo = label, root
        # Listed in the background until first asked for. With --stage a tracked file comes
        # as "<mode> <id> <stage>\t<path>", an untracked one as its bare path; -v puts a tag
        # before each: lower case for a file marked assume-unchanged, S for skip-worktree.
        self._listing = git.start(root, "ls-files", "-z", "-v", "--stage", "--cached", "--others",
                                  "--exclude-standard")
        self._ids: dict[str, str] = {}

    @cached_property
    def files(self) -> frozenset[str]:  # type: ignore[override]
        tracked, untracked, _ = self._listed
        # A tracked file deleted from the working tree is still listed (from the index).
        top = str(self.repo)
        return frozenset(p for p in tracked | untracked if visible(p) and os.path.isfile(os.path.join(top, p)))

    @cached_property
    def _listed(self) -> tuple[set[str], set[str], set[str]]:
        """(tracked, untracked, unchecked): unchecked are the tracked files git takes to be as
        the index has them without looking at the disk (assume-unchanged, skip-worktree)."""
        tracked, untracked, unchecked = set(), set(), set()
        for entry in filter(None, self._listing().split("\0")):
            tag, entry = entry[:1], entry[2:]
            meta, tab, path = entry.partition("\t")
            if tab and _STAGED.fullmatch(meta):
                tracked.add(path)
                if tag.islower() or tag == "S":
                    unchecked.add(path)
            else:
                untracked.add(entry)
        return tracked, untracked, unchecked

    def read(self, rel: str) -> bytes:
        return read_bytes(self.repo / rel, self.repo)

    def id(self, rel: str) -> str:
        if rel not in self._ids:
            self._ids[rel] = blob_id(self.read(rel))
        return self._ids[rel]

    def on_disk(self, rels) -> Path:
        return self.repo

    def untracked(self) -> set[str]:
        return self._listed[1]

    def unchecked(self) -> set[str]:
        """Tracked files whose changes git does not report: marked assume-unchanged (the user
        said they would not change) or skip-worktree (sparse checkouts leave them off disk)."""
        return self._listed[2]


class Commit(Checkout):
    """A commit of ``repo``, read through git's object store; files kustomize must read are
    written below ``scratch``, a folder of the caller's that it removes. Safe to read from two
    threads (``rlgen diff`` checks a commit's files while its builds read them)."""

    def __init__(self, label: str, repo: Path, sha: str, scratch: Path):
        self.label, self.repo, self.sha, self.scratch = label, repo, sha, scratch
        # Listed in the background until first asked for.
        self._listing = git.start(repo, *git_plumbing.TREE_LISTING, sha)
        self._data: dict[str, bytes] = {}
        self._wanted: set[str] = set()
        self._written: set[str] = set()
        self._lock = threading.RLock()
        #: A working tree whose files are this commit's but for ``_differ`` (see :func:`changed`).
        self._same: WorkingTree | None = None
        self._differ: set[str] = set()

    @cached_property
    def _entries(self) -> dict[str, tuple[str, str]]:
        return {rel: entry for rel, entry in git_plumbing.parse_tree(self._listing()).items() if visible(rel)}

    @cached_property
    def files(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(self._entries)

    def id(self, rel: str) -> str:
        return self._entries[rel][1]

    def prefetch(self, rels) -> None:
        with self._lock:
            self._wanted.update(r for r in rels if r in self._entries)

    def same_as(self, tree: WorkingTree, differ: set[str]) -> None:
        """``tree`` holds this commit's files but for ``differ``, as git compared them: those
        are read from disk. The ones that differ are read with the next file asked for."""
        with self._lock:
            self._same, self._differ = tree, differ
            self._wanted.update(rel for rel in differ if rel in self._entries)

    def _on_disk_alike(self, rel: str) -> bytes | None:
        tree = self._same
        # A symbolic link's blob is its target's name, not what reading the link gives; a file
        # git does not compare with the disk may differ there.
        if tree is None or rel in self._differ or rel not in tree.files or self._entries[rel][0] == _SYMLINK \
                or rel in tree.unchecked():
            return None
        try:
            return tree.read(rel)
        except OSError:  # gone since git looked: git's copy, then
            return None

    def _fetch(self, rels) -> None:
        """``rels`` and every file asked for: from disk where the working tree holds them
        alike, the others from one ``git cat-file --batch``."""
        missing = []
        for rel in sorted((self._wanted | set(rels)) - self._data.keys()):
            if (data := self._on_disk_alike(rel)) is None:
                missing.append(rel)
            else:
                self._data[rel] = data
        self._wanted.clear()
        if missing:
            blobs = git_plumbing.read_blobs(self.repo, [self._entries[r][1] for r in missing])
            self._data.update(zip(missing, blobs))

    def read(self, rel: str) -> bytes:
        if rel not in self._entries:
            raise FileNotFoundError(rel)
        with self._lock:
            if rel not in self._data:
                self._fetch([rel])
            return self._data[rel]

    def on_disk(self, rels) -> Path:
        scratch = self.scratch
        with self._lock:
            wanted = sorted({r for r in rels if r in self._entries} - self._written)
            self._fetch(wanted)
            for rel in wanted:
                path = scratch / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                if self._entries[rel][0] == _SYMLINK:
                    os.symlink(self._data[rel].decode(), path)
                else:
                    path.write_bytes(self._data[rel])
                    if self._entries[rel][0] == "100755":
                        path.chmod(0o755)
            self._written.update(wanted)
        return scratch


def changed(base: Checkout, head: Checkout) -> set[str]:
    """The committable paths whose content differs between two checkouts of one repository
    (added or removed on one side included), without reading unchanged files: git compares
    two commits by their trees, and a commit with the working tree by its index. A commit
    compared with the working tree then reads the files alike from disk (:meth:`Commit.same_as`)."""
    if isinstance(base, Commit) and isinstance(head, Commit):
        return {p for p in base.files | head.files
                if base._entries.get(p, (None, None))[1] != head._entries.get(p, (None, None))[1]}
    commit, tree = (base, head) if isinstance(base, Commit) else (head, base)
    assert isinstance(commit, Commit) and isinstance(tree, WorkingTree)
    # Started before the listings of the two sides are awaited: the three run at once.
    listing = git.start(tree.repo, "diff", "--name-only", "--no-renames", "-z", commit.sha, "--")
    untracked = tree.untracked()
    # An edit of a file marked assume-unchanged is no less a change: git's diff does not see it.
    assumed = {p for p in tree.unchecked() if os.path.isfile(os.path.join(tree.repo, p))}
    found = {p for p in listing().split("\0") if p} | untracked | assumed
    differ = {p for p in found if visible(p)}
    commit.same_as(tree, differ)
    return differ
