"""Image folders edited by hand. Each image the repository builds is tagged with a hash of its
folder's files (:mod:`rlgen.repo.image_tags`), and every object that runs it names that
tag: a folder edited after rlgen tagged it would merge as it is, ``images/build.sh`` would then
refuse to build it, and the cluster would go on running the image of the old files. This names
the folder on the pull request instead, from the same list and the same hash as
``images/build.sh``: its ``images=(...)`` entries, and the files git tracks in each folder (read
from the working tree, as ``sha256sum`` reads them; untracked files such as ``__pycache__`` left
by a local run do not count).

``rlgen validate`` runs in a git checkout (its conflict scan asks git first); given no listing
(``tracked=None``), every file in the folder counts.
"""
from __future__ import annotations

from pathlib import Path

from rlgen.naming import IMAGE_HASH_LENGTH, context_hash
from rlgen.repo import image_tags
from rlgen.rules.base import Finding
from rlgen.tools import git, repo_files

#: The advice images/build.sh gives when it refuses such a folder.
FIX = "change it through rlgen (rlgen update; a plugin's packages), not by hand"


def tracked_files(repo: Path) -> list[str]:
    """The files git tracks in ``repo`` (its index), as ``images/build.sh`` lists them."""
    # A question, asked the cheaper way (nothing to tie to rlgen's life: it changes nothing).
    return [p for p in git.start(repo, "ls-files", "-z", "--cached", "--", "images")().split("\0") if p]


def image_findings(repo: Path, target: Path | None = None, tracked: list[str] | None = None) -> list[Finding]:
    """One finding per folder of ``images/build.sh``'s list whose files no longer hash to its tag;
    with ``target`` (a folder or file of the repository) only the folders it holds or lies in."""
    script = repo / image_tags.SCRIPT
    if not script.is_file():
        return []
    rel = None if target is None or target.resolve() == repo else target.resolve().relative_to(repo).as_posix()
    found = []
    for context, ref in image_tags.listed(repo_files.read_text(script, repo)):
        if rel is not None and not (f"{context}/".startswith(f"{rel}/") or rel.startswith(f"{context}/")
                                    or rel == image_tags.SCRIPT):
            continue
        inside = (sorted(p for p in tracked if p.startswith(f"{context}/")) if tracked is not None
                  else sorted(p.relative_to(repo).as_posix() for p in (repo / context).rglob("*")))
        files = {p: repo_files.read_bytes(repo / p, repo) for p in inside if (repo / p).is_file()}
        tag = image_tags.split_reference(ref)[1]
        digest = context_hash(files, context)[:IMAGE_HASH_LENGTH] if files else "nothing"
        if not image_tags.follows(tag, digest):
            found.append(Finding(
                f"{context}/", f"image {ref}",
                f"no longer matches its tag {tag} (its files hash to {digest}): merged as it is, images/build.sh "
                "refuses to build it and the cluster keeps running the image of the files rlgen tagged", FIX))
    return found
