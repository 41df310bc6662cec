"""What ``rlgen diff`` does (see :mod:`rlgen.diff.command`): check out the base revision, render
what differs, compare and print."""
from __future__ import annotations

import shutil
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

import click

from rlgen.diff import report
from rlgen.diff.compare import compare
from rlgen.errors import RlgenError
from rlgen.output import resolve_output, to_json
from rlgen.render import manifests
from rlgen.render.changes import render_changes
from rlgen.repo.workspace import Workspace, open_workspace
from rlgen.repo import run_files
from rlgen.tools import git, kustomize, yamlio


def diff(base: str | None, head: str | None, output: str | None, fmt: str | None, exit_code: bool) -> None:
    ws = open_workspace(Path.cwd())
    run_files.check_repository(ws.root, ws.spec)
    kustomize.command()
    head_sha = _commit(ws.root, head) if head else None
    base_name, base_sha = (base, _commit(ws.root, base)) if base else _default_base(ws, head_sha or "HEAD")
    labels = (f"{base_name}@{base_sha[:7]}", f"{head}@{head_sha[:7]}" if head_sha else "working tree")

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="rlgen-diff-")))
        trees = {labels[0]: stack.enter_context(_worktree(ws.root, base_sha, tmp / "base"))}
        trees[labels[1]] = stack.enter_context(_worktree(ws.root, head_sha, tmp / "head")) if head_sha else ws.root
        if head_sha:
            run_files.check_repository(trees[labels[1]], ws.spec)
        # Only what differs is built; unchanged roots would only cancel out in the comparison.
        rendered = render_changes(list(trees.items()), cache_repo=ws.root)
        rendered = {label: synced(rendered[label], tree) for label, tree in trees.items()}
    comparison = compare(rendered[labels[0]], rendered[labels[1]], ws.spec)
    output = {"text": "table", "markdown": "markdown"}[fmt] if fmt and not output else resolve_output(output)
    if output == "json":
        click.echo(to_json(report.as_data(comparison, *labels)))
    else:
        click.echo((report.markdown if output == "markdown" else report.text)(comparison, *labels), nl=False)
    if exit_code and comparison.objects:
        sys.exit(1)


def synced(sources: dict[str, list[str]], tree: Path) -> dict[str, list[str]]:
    """The sources a sync entry point of ``tree`` applies: the entry points themselves (plain
    files) and the roots their Flux Kustomizations or Argo CD Applications name by path. A root
    nothing names (base/training once the last run is gone) reaches no cluster."""
    entry_points = manifests.plain_files(manifests.committable(tree))
    names = {p.relative_to(tree).as_posix() for p in entry_points}
    if not names:
        return sources
    paths = {applied for p in entry_points for text in manifests.split(p.read_text())
             for applied in _applied_paths(yamlio.read_plain(text))}
    return {s: docs for s, docs in sources.items() if s in names or s in paths}


def _applied_paths(obj) -> set[str]:
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return set()
    sources = [spec, spec.get("source"), *(spec.get("sources") or [])]
    return {str(s["path"]).removeprefix("./").rstrip("/") or "."
            for s in sources if isinstance(s, dict) and isinstance(s.get("path"), str)}


def _commit(repo: Path, ref: str) -> str:
    try:
        return git.run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except RlgenError:
        raise RlgenError(f"'{ref}' is not a commit of this repository") from None


def _default_base(ws: Workspace, head: str) -> tuple[str, str]:
    branch = ws.spec.git_branch
    for ref in (f"origin/{branch}", branch):
        try:
            _commit(ws.root, ref)
        except RlgenError:
            continue
        return ref, git.run(ws.root, "merge-base", head, ref).strip()
    raise RlgenError(f"no base revision: neither origin/{branch} nor {branch} exists; pass --base REF")


@contextmanager
def _worktree(repo: Path, sha: str, dest: Path) -> Iterator[Path]:
    git.run(repo, "worktree", "add", "--detach", "--quiet", str(dest), sha)
    try:
        yield dest
    finally:
        try:
            git.run(repo, "worktree", "remove", "--force", str(dest))
        except RlgenError:
            # Leave no worktree entry behind even if git could not remove the folder itself.
            shutil.rmtree(dest, ignore_errors=True)
            git.run(repo, "worktree", "prune")
