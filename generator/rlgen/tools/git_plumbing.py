"""Trees and commits made with git's plumbing, never through the user's index or work tree:
the render is committed and merged in git's object store, and only the result is checked out."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import NamedTuple

from rlgen.errors import RlgenError
from rlgen.tools import children
from rlgen.tools import git

EMPTY_SHA = "0" * 40


def blob_ids(repo: Path, files: dict[str, bytes], write: bool) -> dict[str, str]:
    """The blob id of each file's bytes (stored in the repository when ``write``), in one git call."""
    if not files:
        return {}
    with tempfile.TemporaryDirectory(prefix="rlgen-blobs-") as scratch:
        paths = []
        for i, (path, data) in enumerate(sorted(files.items())):
            tmp = Path(scratch) / str(i)
            tmp.write_bytes(data)
            paths.append(str(tmp))
        # --no-filters: the bytes as rendered, whatever attributes the repository sets.
        out = git.run(repo, "hash-object", *(["-w"] if write else []), "--no-filters", "--stdin-paths",
                      input="\n".join(paths) + "\n")
    return dict(zip(sorted(files), out.split()))


def tree_blobs(repo: Path, treeish: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) of every file of ``treeish``."""
    return parse_tree(git.run(repo, *TREE_LISTING, treeish))


#: The git command :func:`parse_tree` reads the output of, but the tree.
TREE_LISTING = ("ls-tree", "-r", "-z", "--full-tree")


def parse_tree(out: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob id) of every file a ``git ls-tree`` (:data:`TREE_LISTING`) lists."""
    entries = {}
    for line in filter(None, out.split("\0")):
        meta, path = line.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob":
            entries[path] = (mode, sha)
    return entries


def read_blobs(repo: Path, shas: list[str]) -> list[bytes]:
    """The content of each blob, in order, from one ``git cat-file --batch``."""
    proc = children.run(["git", "cat-file", "--batch"], cwd=repo, input="\n".join(shas).encode() + b"\n")
    if proc.returncode != 0:
        raise RlgenError(f"git cat-file failed: {proc.stderr.decode(errors='replace').strip()}")
    out, pos, blobs = proc.stdout, 0, []
    for _ in shas:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        blobs.append(out[header_end + 1:header_end + 1 + size])
        pos = header_end + 1 + size + 1
    return blobs


def tree_files(repo: Path, treeish: str) -> dict[str, bytes]:
    entries = tree_blobs(repo, treeish)
    return dict(zip(entries, read_blobs(repo, [sha for _, sha in entries.values()])))


def make_tree(repo: Path, start: str | None, changes: dict[str, bytes | None]) -> str:
    """A tree: ``start``'s (or none) with ``changes`` applied (``None`` deletes a path)."""
    with tempfile.TemporaryDirectory(prefix="rlgen-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        if start:
            git.run(repo, "read-tree", start, extra_env=env)
        ids = blob_ids(repo, {p: d for p, d in changes.items() if d is not None}, write=True)
        lines = [f"0 {EMPTY_SHA}\t{p}" if d is None else f"100644 {ids[p]}\t{p}" for p, d in sorted(changes.items())]
        if lines:
            git.run(repo, "update-index", "--index-info", input="\n".join(lines) + "\n", extra_env=env)
        return git.run(repo, "write-tree", extra_env=env).strip()


def commit_tree(repo: Path, tree: str, parents: list[str], message: str, sign: bool = False) -> str:
    """A commit of ``tree``, with no hook (plumbing). ``sign``: signed when the repository sets
    ``commit.gpgsign``, for a commit that enters the branch's history; the merge's scratch
    commits, never reachable, are not."""
    args = [a for p in parents for a in ("-p", p)] + (git.signing_args(repo) if sign else [])
    return git.run(repo, *git.CONFIGURED_ONLY, "commit-tree", tree, *args, "-m", message).strip()


# A named tuple: diff imports this module to read commits, and a dataclass costs more to define.
class Merged(NamedTuple):
    tree: str
    #: Unmerged index entries ``(mode, blob, stage, path)``; empty when the merge is clean.
    conflicts: tuple[tuple[str, str, str, str], ...]

    @property
    def conflicted_paths(self) -> list[str]:
        return sorted({entry[3] for entry in self.conflicts})


#: Temporary names of the two sides: git labels conflict markers with the names it was given.
LABELS = ("rlgen/your-branch", "rlgen/new-render")


def merge(repo: Path, ours: str, theirs: str) -> Merged:
    """git's own three-way merge (merge-ort) of two commits, without a work tree; the tree of a
    conflicted merge holds the files with their conflict markers."""
    for label, commit in zip(LABELS, (ours, theirs)):
        git.run(repo, "update-ref", f"refs/{label}", commit)
    try:
        out = git.run(repo, "merge-tree", "--write-tree", "-z", *LABELS, ok_codes=(0, 1))
    finally:
        for label in LABELS:
            git.run(repo, "update-ref", "-d", f"refs/{label}")
    tree, _, rest = out.partition("\0")
    conflicts = []
    for entry in rest.split("\0\0", 1)[0].split("\0"):
        if not entry:
            break
        meta, path = entry.split("\t", 1)
        mode, sha, stage = meta.split()
        conflicts.append((mode, sha, stage, path))
    return Merged(tree, tuple(conflicts))


def git_path(repo: Path, name: str) -> Path:
    """A file inside the repository's git directory (``MERGE_HEAD``, rlgen's update state)."""
    return repo / git.run(repo, "rev-parse", "--git-path", name).strip()


def index_entries(repo: Path, entries) -> None:
    """Put unmerged stages in the index, as ``git merge`` leaves them."""
    paths = sorted({e[3] for e in entries})
    lines = [f"0 {EMPTY_SHA}\t{p}" for p in paths] + [f"{m} {s} {st}\t{p}" for m, s, st, p in entries]
    git.run(repo, "update-index", "--index-info", input="\n".join(lines) + "\n")


def has_git_dir(repo: Path) -> bool:
    return os.path.isdir(repo / ".git") or (repo / ".git").is_file()
