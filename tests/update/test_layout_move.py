"""A repository generated before every environment had its runs index and every cluster shared
``infrastructure/upstream/`` gets the new layout through rlgen update: the team's runs, added by
hand to the old index with a comment, are listed in ``overlays/<env>/runs/`` with the comment
kept; the upstream roots move to the shared folder; nothing is left in the old places."""
from __future__ import annotations

import shutil

from support.repos import INDEX, git, listed, ok, one_error_line, rlgen_in
from support.updates import as_old_layout, status, validate


def _amend(repo) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")


def test_an_old_repository_gets_the_runs_index_and_the_shared_upstream_roots(repo, tmp_path):
    # The team's run, made by rlgen run, kept aside while the render commit becomes the old layout.
    ok(rlgen_in(repo, "run", "new", "lr", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    shutil.copytree(repo / "runs/lr", tmp_path / "lr")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    as_old_layout(repo)
    _amend(repo)
    shutil.copytree(tmp_path / "lr", repo / "runs/lr")
    old_index = repo / "runs/kustomization.yaml"
    old_index.write_text(old_index.read_text().replace("  - baseline\n", "  # our learning-rate try\n  - baseline\n  - lr\n"))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "Run lr")
    assert "rlgen update moves it" in one_error_line(rlgen_in(repo, "run", "list"))

    ok(rlgen_in(repo, "update", "--no-branch"))

    assert status(repo) == ""
    assert not old_index.exists()
    assert listed(repo) == ["baseline", "lr"] and "# our learning-rate try" in (repo / INDEX).read_text()
    assert "path: ./overlays/production/runs" in (repo / "clusters/production/runs.yaml").read_text()
    assert not (repo / "clusters/production/infrastructure.yaml").exists()
    assert (repo / "infrastructure/upstream/openkruise-agents.yaml").is_file()
    assert (repo / "clusters/production/upstream/kustomization.yaml").is_file()
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lr" in ok(rlgen_in(repo, "run", "list"))
