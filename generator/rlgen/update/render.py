"""The two sides rlgen brings to an update: its previous render (the merge base, from git
history) and a fresh render of the new answers (committed on top of it)."""
from __future__ import annotations

from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlgen import __version__
from rlgen.errors import RlgenError
from rlgen.generate import template_source
from rlgen.generate.pipeline import generate
from rlgen.plugin_host.discovery import discover
from rlgen.repo import answers
from rlgen.repo import layout
from rlgen.run.files import is_hand_edited_run_file
from rlgen.tools import git, repo_files, yamlio
from rlgen.tools import git_plumbing
from rlgen.update.answers_change import Change, new_selection


def base_render(root: Path, recorded: dict[str, Any]) -> str:
    """The commit of rlgen's last render: ``render`` in ``rlgen.yaml``, else the root commit
    that ``rlgen new`` made."""
    if recorded["render"]:
        sha = recorded["render"]
        return git.commit_of(root, sha) or _rebuilt(root, recorded, sha)
    roots = git.run(root, "rev-list", "--max-parents=0", "HEAD").split()
    if len(roots) != 1:
        raise RlgenError(f"{answers.FILENAME}: no render commit recorded and the history has "
                         f"{len(roots)} root commits: add 'render: <commit of rlgen new>'")
    return roots[0]


def _rebuilt(root: Path, recorded: dict[str, Any], sha: str) -> str:
    """The last render made again when its commit is not in the history: a squash or rebase
    merge of its update branch leaves it out (and a clone never gets it). The same rlgen renders
    the same answers byte for byte; the runs and their indexes are the branch's own, as a render
    leaves them. A commit of git's store, with no parent."""
    version = str((yamlio.read_plain(repo_files.read_text(root / answers.FILENAME, root)) or {}).get("rlgen_version"))
    if version != __version__:
        raise RlgenError(f"{answers.FILENAME}: render: commit {sha[:12]} is not in this repository (a squash or "
                         f"rebase merge leaves it out) and only rlgen {version}, which made it, renders it again: "
                         f"pip install 'rlgen=={version}' and run this again, or fetch a history that has it")
    with team_template(root, recorded) as template:
        build = generate(new_selection(discover(), recorded, Change()), recorded["run_naming"], template)
    head = git_plumbing.tree_blobs(root, "HEAD")
    own = [p for p in head if _team_owned(p)]
    files = {p: d for p, d in build.tree.files.items() if not _team_owned(p)}
    files.update(zip(own, git_plumbing.read_blobs(root, [f"HEAD:{p}" for p in own])))
    tree = git_plumbing.make_tree(root, None, files)
    return git_plumbing.commit_tree(root, tree, [], f"Render with rlgen {version}, made again from "
                                                    f"{answers.FILENAME} (its commit {sha[:12]} is not here)\n")


#: Runs belong to the team once created: a render never changes them (after the merge, only
#: their RayJob names follow a changed training base, see :mod:`rlgen.update.repin`), nor the
#: runs indexes that list them.
RUNS = f"{layout.RUNS}/"


def _team_owned(path: str) -> bool:
    return is_hand_edited_run_file(path) and path != layout.OLD_RUNS_INDEX


def keep_runs(root: Path, files: dict[str, bytes], base: str) -> dict[str, bytes]:
    """``files`` with the run folders and every environment's runs folder (its index, or its
    runs' folders) as the previous render had them (an environment new in this render gets the
    render's), so a run the team removed or edited never conflicts with the first run a render
    writes. The indexes of earlier layouts are moved by :mod:`rlgen.update.index_move`."""
    # An environment's runs the render no longer writes go: it has no cluster left.
    envs = {layout.runs_env(p) for p in files} - {None}
    before = [p for p in git_plumbing.tree_blobs(root, base)
              if _team_owned(p) and (p.startswith(RUNS) or layout.runs_env(p) in envs)]
    had = {layout.runs_env(p) for p in before} - {None}
    kept = {p: d for p, d in files.items() if not (p.startswith(RUNS) or layout.runs_env(p) in had)}
    return {**kept, **dict(zip(before, git_plumbing.read_blobs(root, [f"{base}:{p}" for p in before])))}


@dataclass(frozen=True)
class Render:
    files: dict[str, bytes]
    tree: str


def write_render(root: Path, files: dict[str, bytes]) -> Render:
    return Render(files, git_plumbing.make_tree(root, None, files))


def commit_render(root: Path, render: Render, base: str, plugins: dict[str, str]) -> str:
    """The render as a commit whose parent is the previous render: the chain of renders is
    rlgen's side of every merge, kept in the history the update commit joins. Signed as the
    repository asks; made in git's object store, it runs no hook (see HOOKS_SKIPPED)."""
    line = ", ".join(f"{slot}={name}" for slot, name in plugins.items())
    return git_plumbing.commit_tree(root, render.tree, [base], f"Render with rlgen {__version__}\n\nPlugins: {line}\n",
                                    sign=True)


#: Why the render commit runs no hook, said when the repository has one.
HOOKS_SKIPPED = ("the render commit {render} ran no {hooks} hook: rlgen makes it in git's object store from "
                 "its own render, not from your index or work tree; the update commit that merges it ran them")


def team_template(root: Path, recorded: dict[str, Any], ref: str | None = None,
                  newest: bool = False) -> AbstractContextManager[template_source.Fetched | None]:
    """The recorded cookiecutter template, fetched: at ``ref``, at the newest commit of its
    source (``newest``), or at the commit the last render recorded (the same files again). A
    local folder is found relative to the repository at ``root``, and recorded so again."""
    record = recorded.get("template")
    if record is None:
        if ref is not None:
            raise RlgenError(f"--template-ref: {answers.FILENAME} records no template (rlgen new --template)")
        return nullcontext()
    pinned = None if newest or ref is not None else record.get("commit")
    source = record["source"]
    if not template_source.is_url(source):
        source = str(root / source)  # an absolute one, as earlier rlgen versions recorded, stays itself
    return _recorded(root, template_source.fetched(source, ref, pinned, where=f"{answers.FILENAME}: template.source"))


@contextmanager
def _recorded(root: Path, fetching: AbstractContextManager[template_source.Fetched]):
    with fetching as template:
        yield template_source.recorded_from(template, root)
