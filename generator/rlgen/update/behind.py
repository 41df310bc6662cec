"""``rlgen update --check``: is the repository what its answers and this rlgen render?

User edits do not count: the check compares rlgen's last render (from git history) with what
this rlgen renders from the same answers, and the answers with those of the last render.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rlgen import __version__
from rlgen.errors import RlgenError
from rlgen.generate.pipeline import generate
from rlgen.plugin_host.discovery import discover
from rlgen.repo import answers
from rlgen.tools import repo_files, yamlio
from rlgen.tools import git_plumbing
from rlgen.update import index_move
from rlgen.update.answers_change import Change, new_selection
from rlgen.update.render import base_render, keep_runs, team_template


@dataclass
class Status:
    up_to_date: bool
    reason: str
    render: str
    rendered_by: str
    files: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"up_to_date": self.up_to_date, "reason": self.reason or None, "render": self.render,
                "rendered_by": self.rendered_by, "this_rlgen": __version__, "files": self.files}


def check(root: Path) -> Status:
    recorded = answers.read(root)
    base = base_render(root, recorded)
    base_yaml = git_plumbing.read_blobs(root, [f"{base}:{answers.FILENAME}"])[0].decode()
    rendered_by = str((yamlio.read_plain(base_yaml) or {}).get("rlgen_version") or "unknown")
    status = Status(True, "", base, rendered_by)
    if _answers(repo_files.read_text(root / answers.FILENAME, root)) != _answers(base_yaml):
        status.up_to_date, status.reason = False, (
            f"{answers.FILENAME} differs from the answers of the last render (edited by hand?): "
            "run rlgen update to render them")
        return status
    # The template at the recorded commit: behind means behind this rlgen or the answers.
    with team_template(root, recorded) as template:
        build = generate(new_selection(discover(), recorded, Change()), recorded["run_naming"], template)
    files = index_move.moved(keep_runs(root, build.tree.files, base), recorded, recorded["plugins"]["sync"])
    ids = git_plumbing.blob_ids(root, files, write=False)
    before = {p: sha for p, (_, sha) in git_plumbing.tree_blobs(root, base).items()}
    status.files = sorted(p for p in set(ids) | set(before) if ids.get(p) != before.get(p))
    if status.files:
        version = f"rlgen {rendered_by} rendered it, this is rlgen {__version__}" if rendered_by != __version__ \
            else "this rlgen renders it differently"
        status.up_to_date, status.reason = False, (
            f"behind: {version} ({len(status.files)} file(s), e.g. {status.files[0]}): run rlgen update")
    elif moved := _template_moved(root, recorded):
        # The weekly update workflow runs rlgen update only when this check says behind.
        status.up_to_date, status.reason = False, f"behind: the team's template {moved}: run rlgen update"
    return status


def _template_moved(root: Path, recorded: dict) -> str | None:
    """How the team's template moved since the last render (its source's newest commit, or a
    plain folder's files), or None when it did not or the repository has none."""
    record = recorded.get("template")
    if record is None:
        return None
    with team_template(root, recorded, newest=True) as newest:
        pin = newest.pin
    if record.get("commit") and pin.commit and pin.commit != record["commit"]:
        return f"has a newer commit ({record['commit'][:12]} rendered, {pin.commit[:12]} newest)"
    if record.get("digest") and pin.digest and pin.digest != record["digest"]:
        return "changed since it was rendered (its files' digest differs)"
    return None


def _answers(text: str) -> dict:
    try:
        doc = yamlio.read_plain(text)
    except ValueError as exc:
        raise RlgenError(f"{answers.FILENAME}: {exc}") from None
    return {k: v for k, v in (doc if isinstance(doc, dict) else {}).items() if k != answers.RENDER_KEY}
