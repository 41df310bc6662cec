"""What ``rlgen diff`` does (see :mod:`rlgen.commands.diff`): read the two revisions, render
what differs, compare and print.

The builds are started as soon as git has said what differs; the checks of rlgen's answers
and of the changed hand-edited files, and the imports of what compares and prints, happen
while kustomize runs: what is imported here is only what starts the builds."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import click

from rlgen.diff.scratch import scratch
from rlgen.errors import RlgenError
from rlgen.output import resolve_output, to_json
from rlgen.render.changes import ChangesRendering
from rlgen.render.checkouts import Checkout, Commit, WorkingTree, changed
from rlgen.repo.layout import TRAINING_BASE
from rlgen.repo import answers
from rlgen.repo.workspace import Workspace, answered_spec, find_root, load_spec
from rlgen.tools import git, kustomize, yamlio
from rlgen.tools.signals import terminate_as_interrupt

if TYPE_CHECKING:
    from rlgen.diff.compare import Comparison
    from rlgen.spec import Spec


def diff(base: str | None, head: str | None, output: str | None, fmt: str | None, exit_code: bool) -> None:
    root = find_root(Path.cwd())
    # Listed (by git, in the background) while the answers are read and the revisions looked up.
    working = None if head else WorkingTree("working tree", root)
    comparison, labels = _compare(root, base, head, working)
    # Lazy: at the top it would load compare (92 ms, median of 9) before the builds start.
    from rlgen.diff import report

    output = {"text": "table", "markdown": "markdown"}[fmt] if fmt and not output else resolve_output(output)
    if output == "json":
        click.echo(to_json(report.as_data(comparison, *labels)))
    else:
        click.echo((report.markdown if output == "markdown" else report.text)(comparison, *labels), nl=False)
    if exit_code and comparison.objects:
        sys.exit(1)


class _OtherBranch(Exception):
    """The checked answers name another synced branch than their plain reading did."""

    def __init__(self, branch: str):
        super().__init__(branch)
        self.branch = branch


def _compare(root: Path, base: str | None, head: str | None,
             working: WorkingTree | None) -> tuple[Comparison, tuple[str, str]]:
    """Two passes at most: the builds start from the branch rlgen.yaml names when read plainly,
    and when its checked answers name another (a hand edit the plain reading took otherwise),
    the comparison starts again from that one."""
    try:
        return _compare_from(root, base, head, working, _Answers(root, base))
    except _OtherBranch as other:
        return _compare_from(root, base, head, working, _Answers(root, base, other.branch))


class _Answers:
    """rlgen's answers: read plainly for the branch the builds need, checked while kustomize
    builds (the plugins matter only when rlgen.yaml is part of the change). A defect of theirs
    is still what the command says first."""

    def __init__(self, root: Path, base: str | None, branch: str | None = None):
        self._base = base
        self.checked = lru_cache(maxsize=1)(partial(answered_spec, root))
        self.branch = branch or (None if base else answers.branch_hint(root))

    def first(self) -> Spec:
        """The checked answers, or their defect; :class:`_OtherBranch` when they name another
        branch than the builds used."""
        spec = self.checked()
        if not self._base and spec.git_branch != self.branch:
            raise _OtherBranch(spec.git_branch)
        return spec

    @contextmanager
    def said_first(self) -> Iterator[None]:
        """Whatever fails inside, a defect of the answers is said instead."""
        try:
            yield
        except Exception:
            self.first()
            raise


def _compare_from(root: Path, base: str | None, head: str | None, working: WorkingTree | None,
                  given: _Answers) -> tuple[Comparison, tuple[str, str]]:
    with given.said_first():
        if not base and given.branch is None:
            given.branch = given.checked().git_branch
        kustomize.command()
        base_name, base_sha, head_sha = _revisions(root, base, head, given.branch)
    labels = (f"{base_name}@{base_sha[:7]}", f"{head}@{head_sha[:7]}" if head_sha else "working tree")
    with terminate_as_interrupt(), scratch(root) as tmp:
        sides = (Commit(labels[0], root, base_sha, tmp / "base"),
                 Commit(labels[1], root, head_sha, tmp / "head") if head_sha else working)
        with given.said_first():
            differ = changed(*sides)
            # Only what differs is built; unchanged roots would only cancel out in the comparison.
            rendering = ChangesRendering(*sides, differ, cache_repo=root)
        with rendering:
            ws = Workspace(root, given.first())
            if answers.FILENAME in differ:
                # The answers changed: checked as every other command checks them, plugins included.
                ws = Workspace(ws.root, load_spec(ws.root))
            _check_hand_edited(sides[1], differ, ws)
            from rlgen.diff.compare import compare  # lazy: 92 ms (median of 9), while kustomize runs

            rendered = rendering.result()
        rendered = {co.label: synced(rendered[co.label], co) for co in sides}
    return compare(rendered[labels[0]], rendered[labels[1]], ws.spec), labels


def _revisions(root: Path, base: str | None, head: str | None, branch: str | None) -> tuple[str, str, str | None]:
    """(the base's name, its commit, the head's commit or None for the working tree)."""
    defaults = () if base else (f"origin/{branch}", branch)
    # From HEAD, where it forks from each candidate base is asked at once with the lookup.
    forks = {} if head else {ref: git.start(root, "merge-base", "HEAD", ref) for ref in defaults}
    commits = _commits(root, [r for r in (head, base, *defaults) if r])
    head_sha = _named(commits, head) if head else None
    if base:
        return base, _named(commits, base), head_sha
    return (*_default_base(root, branch, head_sha, commits, forks), head_sha)


def _check_hand_edited(head: Checkout, differ: set[str], ws: Workspace) -> None:
    """The run files and training base that differ, loaded from the head side as ``rlgen run``
    loads them (one line naming the file and place for a defect). Files that are the same on
    both sides are not read: a defect there is no change to review (``rlgen validate`` finds it)."""
    # Lazy: 49 ms (median of 9), imported while kustomize runs.
    from rlgen.run import files

    def hand_edited(rel: str) -> bool:
        return rel.startswith(TRAINING_BASE + "/") or files.is_hand_edited_run_file(rel)

    edited = {rel for rel in differ if hand_edited(rel)}
    if not edited:
        return

    if isinstance(head, WorkingTree):
        files.check_changed(ws.root, ws.spec, edited, plain=True)
        return
    # rlgen.yaml names the environment whose runs index is the one rlgen run edits.
    folder = head.on_disk([rel for rel in head.files if hand_edited(rel) or rel == answers.FILENAME])
    try:
        files.check_changed(folder, ws.spec, edited, plain=True)
    except RlgenError as exc:
        raise RlgenError(f"{head.label}: {str(exc).replace(str(folder) + '/', '')}") from None


def synced(sources: dict[str, list[str]], co: Checkout) -> dict[str, list[str]]:
    """The sources a sync entry point of ``co`` applies: the entry points themselves (plain
    files) and the roots their Flux Kustomizations or Argo CD Applications name by path. A root
    nothing names (base/training once the last run is gone) reaches no cluster. ``sources``
    holds every entry point (:class:`~rlgen.render.changes.ChangesRendering` renders them all);
    a root is a folder, an entry point a file."""
    entry_points = {s: docs for s, docs in sources.items() if s in co.files}
    if not entry_points:
        return sources
    paths = {applied for docs in entry_points.values() for text in docs for applied in _applied_paths(text)}
    return {s: docs for s, docs in sources.items() if s in entry_points or s in paths}


@lru_cache(maxsize=None)
def _applied_paths(text: str) -> frozenset[str]:
    # By text: most entry points are the same at both revisions, and are read once.
    obj = yamlio.read_plain(text)
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return frozenset()
    sources = [spec, spec.get("source"), *(spec.get("sources") or [])]
    return frozenset(str(s["path"]).removeprefix("./").rstrip("/") or "."
                     for s in sources if isinstance(s, dict) and isinstance(s.get("path"), str))


def _commits(repo: Path, refs: list[str]) -> dict[str, str]:
    """The commit each of ``refs`` names (those naming none are left out), from one git call."""
    # cat-file reads one name a line and answers each on a line of its own, "<name> missing"
    # for one that names no commit.
    names = [r for r in dict.fromkeys(refs) if r.strip() and "\n" not in r]
    if not names:
        return {}
    listing = git.start(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                        input="".join(f"{r}^{{commit}}\n" for r in names))
    answers = listing().splitlines()
    return {r: line.split()[0] for r, line in zip(names, answers) if line.endswith(" commit")}


def _named(commits: dict[str, str], ref: str) -> str:
    if ref not in commits:
        raise RlgenError(f"'{ref}' is not a commit of this repository")
    return commits[ref]


def _default_base(root: Path, branch: str, head: str | None, commits: dict[str, str],
                  forks: dict[str, Callable[[], str]]) -> tuple[str, str]:
    for ref in (f"origin/{branch}", branch):
        if ref in commits:
            fork = forks[ref]() if ref in forks else git.run(root, "merge-base", head or "HEAD", commits[ref])
            return ref, fork.strip()
    raise RlgenError(f"no base revision: neither origin/{branch} nor {branch} exists; pass --base REF")
