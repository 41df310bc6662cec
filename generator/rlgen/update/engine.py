"""``rlgen update``'s merge: rlgen's previous render is the base, the fresh render is theirs,
the user's branch is ours, and git's merge-ort merges them.

Nothing is written to the work tree until the merged tree exists. ``rlgen.yaml`` is rlgen's
own: the user's side takes the previous render's copy (its answers already went into the
new render), so the new one always wins, with the render commit recorded in it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rlgen import __version__
from rlgen.errors import RlgenError
from rlgen.generate.pipeline import generate
from rlgen.plugin_host.selection import Selection
from rlgen.repo import answers
from rlgen.repo.layout import TRAINING_BASE
from rlgen.repo.sync_engines import builds_folders
from rlgen.run import checkpoints
from rlgen.tools import git, repo_files, yamlio
from rlgen.tools import git_plumbing, git_recovery
from rlgen.update import index_move, migrations, state, verl_move
from rlgen.update.answers_change import Change
from rlgen.update.render import base_render, commit_render, keep_runs, team_template, write_render
from rlgen.update.repin import repin_runs

BRANCH_PREFIX = "rlgen/update-"


@dataclass
class Outcome:
    render: str = ""
    branch: str | None = None
    #: Whether ``branch`` is the update's own new branch (else the branch that was checked out).
    new_branch: bool = False
    commit: str | None = None
    conflicts: list[str] = field(default_factory=list)
    #: ``{"added": [...], "changed": [...], "removed": [...]}``, as :func:`rlgen.tools.git.name_status`.
    files: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "changed": [], "removed": []})
    repinned: list[tuple[str, str, str]] = field(default_factory=list)
    migrated: list[migrations.Migration] = field(default_factory=list)
    verl: verl_move.Move | None = None
    #: Template files that rlgen's own won over (reported, not an error).
    clashes: list[str] = field(default_factory=list)
    #: ``source: old -> new`` when the team's template moved to another commit.
    template_moved: str = ""
    #: The images whose folder the update changed: new tags the registry needs before the merge syncs.
    images: list[str] = field(default_factory=list)
    #: ``namespace/name`` of the Secrets the new answers read and the old ones did not.
    secrets: list[str] = field(default_factory=list)
    #: One line: the runs that start from step 0 and why (rlgen.run.checkpoints.restarts).
    restarts: str = ""
    #: (the engine that syncs the repository now, the one it syncs with after the merge), when they differ.
    engines: tuple | None = None


def update(root: Path, recorded: dict, selection: Selection, change: Change, no_branch: bool,
           dry_run: bool = False) -> Outcome:
    """Merge the render of ``selection``; ``dry_run``: the same merge, described and then undone
    (HEAD, index, work tree and branches as before; only unreferenced objects stay in git's store)."""
    if state.merging(root):
        raise RlgenError("a merge is in progress: resolve it and git commit, or rlgen update --abort")
    git.require_clean(root)
    # Even a dry run commits its merge's sides to git's store.
    git.require_identity(root)
    base = base_render(root, recorded)
    move = verl_move.move(recorded, selection.values["rlgen"]["verl"], change.force)
    if move:
        # Removed keys are refused here, before anything is rendered or written.
        verl_move.apply(move, git_plumbing.tree_files(root, "HEAD"), report=True)
    with team_template(root, recorded, change.template_ref, change.template_newest) as template:
        build = generate(selection, recorded["run_naming"], template)
    render = write_render(root, index_move.moved(keep_runs(root, build.tree.files, base), recorded,
                                                 selection.plugins["sync"]))
    pending = migrations.pending(selection, recorded["plugin_versions"])
    if render.tree == git.run(root, "rev-parse", f"{base}^{{tree}}").strip() and not pending and \
            not index_move.needed(git_plumbing.tree_files(root, base), builds_folders(selection.plugins["sync"])):
        return Outcome(clashes=build.clashes)
    new_render = commit_render(root, render, base, selection.plugins)
    ours, theirs = _sides(root, base, new_render, selection, build.ctx, pending, move, recorded)
    merged = git_plumbing.merge(root, ours, theirs)
    pin = build.template.pin.record() if build.template else None
    outcome = Outcome(render=new_render, migrated=pending, verl=move, clashes=build.clashes,
                      template_moved=_moved(recorded.get("template"), pin))
    final_answers = answers.text(selection, [s.name for s in build.secrets()], recorded["run_naming"],
                                 new_render, template=pin).encode()
    _apply(root, merged, final_answers, build.spec, change, no_branch, outcome, dry_run)
    touched = [path for paths in outcome.files.values() for path in paths]
    outcome.images = [i.ref for i in build.images if any(p.startswith(i.context + "/") for p in touched)]
    return outcome


def _moved(before: dict[str, str] | None, after: dict[str, str] | None) -> str:
    if not before or not after or before == after:
        return ""
    old, new = ((r.get("commit") or r.get("digest", "").removeprefix("sha256:"))[:12] for r in (before, after))
    return f"{after['source']}: {old} -> {new}"


def _sides(root: Path, base: str, new_render: str, selection: Selection, ctx, pending,
           move: verl_move.Move | None, recorded: dict) -> tuple[str, str]:
    """(ours, theirs) as commits whose one merge base is the previous render, migrated when a
    plugin's version or the verl release changed; the user's branch itself is never rewritten."""
    base_yaml = _file_at(root, base, answers.FILENAME)
    ours_changes: dict[str, bytes | None] = {answers.FILENAME: base_yaml}
    merge_base, theirs = base, new_render
    base_files = git_plumbing.tree_files(root, base)
    env, folders = answers.environment_of(recorded), builds_folders(selection.plugins["sync"])
    if pending or move or index_move.needed(base_files, folders):
        def migrated(treeish: str) -> dict[str, bytes | None]:
            files = base_files if treeish == base else git_plumbing.tree_files(root, treeish)
            changes = index_move.apply(files, env, folders)
            files = {p: d for p, d in {**files, **changes}.items() if d is not None}
            changes.update(migrations.apply(selection, ctx, pending, files))
            if move:
                current = {p: d for p, d in {**files, **changes}.items() if d is not None}
                changes.update(verl_move.apply(move, current, report=False))
            return changes

        merge_base = git_plumbing.commit_tree(root, git_plumbing.make_tree(root, base, migrated(base)), [base],
                                              "Previous render, migrated")
        ours_changes = {**migrated("HEAD"), **ours_changes}
        # The render keeps runs/ as the previous render had them, moved already (moved_runs).
        theirs_tree = (git_plumbing.make_tree(root, new_render, verl_move.apply(
            move, git_plumbing.tree_files(root, new_render), report=False)) if move else f"{new_render}^{{tree}}")
        theirs = git_plumbing.commit_tree(root, theirs_tree, [merge_base], "New render")
    ours = git_plumbing.commit_tree(root, git_plumbing.make_tree(root, "HEAD", ours_changes), [merge_base], "Your branch")
    return ours, theirs


def _file_at(root: Path, commit: str, path: str) -> bytes:
    try:
        git.run(root, "cat-file", "-e", f"{commit}:{path}")
    except RlgenError:
        raise RlgenError(f"the render commit {commit[:12]} has no {path}") from None
    return git_plumbing.read_blobs(root, [f"{commit}:{path}"])[0]


def _apply(root: Path, merged: git_plumbing.Merged, final_answers: bytes, spec, change: Change, no_branch: bool,
           outcome: Outcome, dry_run: bool) -> None:
    branch, head = git.head(root)
    update_branch = _update_branch(root, branch, no_branch, outcome)
    # A dry run merges on the checked-out branch (no branch is made) and puts everything back.
    made = None if dry_run else update_branch
    before = state.Before(branch, head, made)
    git_recovery.begin(root, git_recovery.Journal("update", branch, head, new_branch=made, start=head))
    try:
        if update_branch and not dry_run:
            git.run(root, "switch", "-q", "-c", update_branch)
        # read-tree -m refuses a file whose stat data the index has not caught up with, and
        # rlgen's git status never writes it back (no optional locks): refreshed here, journaled.
        git.run(root, "update-index", "-q", "--refresh", check=False)
        git.run(root, "read-tree", "-u", "-m", "HEAD", merged.tree)
        (root / answers.FILENAME).write_bytes(final_answers)
        if merged.conflicts:
            if dry_run:
                outcome.conflicts = merged.conflicted_paths
                state.restore(root, before)
                return
            _leave_conflicts(root, merged, change, before, outcome)
            return
        outcome.repinned = repin_runs(root, spec, head, merged.tree)
        outcome.restarts = checkpoints.restarts([run for run, _, _ in outcome.repinned], _new_volume(root, head))
        git.run(root, "add", "-A")
        tree = git.run(root, "write-tree").strip()
        outcome.files = git.name_status(root, head, tree)
        if dry_run:
            state.restore(root, before)
            return
        _commit(root, change, outcome)
    except BaseException:
        state.restore(root, before)
        raise
    finally:
        # Every way out is an end the next command need not undo (conflicts included:
        # rlgen update --abort undoes those).
        git_recovery.end(root)


def _new_volume(root: Path, head: str) -> bool:
    """Whether the training base mounts another checkpoints claim than at ``head``."""
    path = f"{TRAINING_BASE}/rayjob.yaml"
    before = git.run(root, "show", f"{head}:{path}", check=False)
    after = root / path
    if not before or not after.is_file():
        return False
    return checkpoints.claim(yamlio.read_plain(before) or {}) != checkpoints.claim(
        yamlio.read_plain(repo_files.read_text(after, root)) or {})


def _update_branch(root: Path, branch: str, no_branch: bool, outcome: Outcome) -> str | None:
    """The branch the update is made on, None for the checked-out ``branch``; said in ``outcome``."""
    update_branch = None if no_branch else BRANCH_PREFIX + outcome.render[:7]
    if update_branch and git.run(root, "branch", "--list", update_branch).strip():
        raise RlgenError(f"branch {update_branch} already exists: delete it or pass --no-branch")
    outcome.branch, outcome.new_branch = update_branch or branch, bool(update_branch)
    return update_branch


def _commit(root: Path, change: Change, outcome: Outcome) -> None:
    # git commit with MERGE_HEAD set: the merge of the render, made by the porcelain so that
    # the repository's hooks run and its signing settings apply.
    _merge_state(root, outcome.render)
    git.commit(root, _message(change, outcome))
    outcome.commit = git.run(root, "rev-parse", "HEAD").strip()


def _leave_conflicts(root: Path, merged: git_plumbing.Merged, change: Change, before: state.Before,
                     outcome: Outcome) -> None:
    """The state ``git merge`` leaves on a conflict: markers in the files, unmerged stages in the
    index, MERGE_HEAD naming the render, so ``git commit`` after the resolution records the merge."""
    git_plumbing.index_entries(root, merged.conflicts)
    git.run(root, "add", "--", answers.FILENAME)
    _merge_state(root, outcome.render)
    git_plumbing.git_path(root, "MERGE_MSG").write_text(_message(change, outcome))
    state.save(root, before)
    git_recovery.end(root)
    outcome.conflicts = merged.conflicted_paths
    outcome.branch = before.update_branch or before.branch


def _message(change: Change, outcome: Outcome) -> str:
    subject = ", ".join(change.describe()) or "what this rlgen renders"
    body = [f"Migrated {m.plugin} {m.from_version} -> {m.to_version}" for m in outcome.migrated]
    body += [f"Moved trainer configs: {line}" for line in (outcome.verl.describe() if outcome.verl else [])]
    body += [f"Template {outcome.template_moved}"] if outcome.template_moved else []
    body += [f"Run {run}: RayJob {old} -> {new} (the training base changed)" for run, old, new in outcome.repinned]
    body += [outcome.restarts] if outcome.restarts else []
    paragraphs = [f"Update with rlgen {__version__}: {subject}", "\n".join(body), f"Render: {outcome.render}"]
    return "\n\n".join(p for p in paragraphs if p) + "\n"


def _merge_state(root: Path, render: str) -> None:
    """What ``git merge --no-ff`` leaves for ``git commit``: without ``no-ff`` in MERGE_MODE, git
    commit drops HEAD from the parents when the render descends from it (a repository with no
    commit since the last render), and the update commit would no longer hold the change."""
    git_plumbing.git_path(root, "MERGE_HEAD").write_text(render + "\n")
    git_plumbing.git_path(root, "MERGE_MODE").write_text("no-ff")
