"""A repository generated before every environment had its runs index and every cluster shared
``infrastructure/upstream/`` gets the new layout through rlgen update: the team's runs, added by
hand to the old index with a comment, are listed in ``overlays/<env>/runs/`` with the comment
kept; the upstream roots move to the shared folder; nothing is left in the old places."""
from __future__ import annotations

import json
import shutil

from support.repos import INDEX, git, link, listed, ok, one_error_line, rlgen_in
from support.updates import as_index_layout, as_old_layout, status, validate


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
    # A Flux repository gets no index: a folder per run, in the main environment's runs.
    assert listed(repo) == ["baseline", "lr"] and not (repo / INDEX).exists()
    assert "path: ./overlays/production/runs" in (repo / "clusters/production/runs.yaml").read_text()
    assert not (repo / "clusters/production/infrastructure.yaml").exists()
    assert (repo / "infrastructure/upstream/openkruise-agents.yaml").is_file()
    assert (repo / "clusters/production/upstream/kustomization.yaml").is_file()
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lr" in ok(rlgen_in(repo, "run", "list"))


def test_an_index_layout_gets_a_folder_per_run_keeping_what_the_index_applied(repo, tmp_path):
    ok(rlgen_in(repo, "run", "new", "lr", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    shutil.copytree(repo / "runs/lr", tmp_path / "lr")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    as_index_layout(repo)
    _amend(repo)
    shutil.copytree(tmp_path / "lr", repo / "runs/lr")
    index = repo / INDEX
    # The team's run, and a label the team's index gave every run.
    index.write_text(index.read_text().replace("  - ../../../runs/baseline\n", "  - ../../../runs/baseline\n"
                                               "  - ../../../runs/lr\nlabels:\n  - pairs:\n      team: rl\n"))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "Run lr")
    assert "lr" in ok(rlgen_in(repo, "run", "list"))
    check = rlgen_in(repo, "update", "--check", "-o", "json")
    assert check.returncode == 1 and "overlays/production/runs/README.md" in json.loads(check.stdout)["files"]

    ok(rlgen_in(repo, "update", "--no-branch"))

    assert status(repo) == "" and not index.exists()
    assert listed(repo) == ["baseline", "lr"]
    assert (repo / "overlays/production/runs/README.md").is_file()
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    sources = json.loads(ok(rlgen_in(repo, "render", "-o", "json")))["sources"]
    jobs = [o for s in sources if s["source"] == "overlays/production/runs" for o in s["objects"] if o["kind"] == "RayJob"]
    assert len(jobs) == 2 and all(j["metadata"]["labels"]["team"] == "rl" for j in jobs)
    assert rlgen_in(repo, "update", "--check").returncode == 0
    # A run made now touches no file another run's branch touches.
    made = json.loads(ok(rlgen_in(repo, "run", "new", "next", "-o", "json")))
    assert made["files"]["changed"] == [] and link("next") in made["files"]["added"]


def test_a_change_of_sync_engine_moves_the_runs_to_the_layout_it_reads(repo):
    ok(rlgen_in(repo, "run", "new", "lr", "--no-branch"))
    # Argo CD builds no folder without kustomization file: the runs are listed in an index again.
    ok(rlgen_in(repo, "update", "--plugin", "argo", "--no-branch"))
    assert listed(repo) == ["baseline", "lr"] and (repo / INDEX).is_file() and not (repo / link("lr")).exists()
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    ok(rlgen_in(repo, "update", "--plugin", "flux", "--no-branch"))
    assert listed(repo) == ["baseline", "lr"] and not (repo / INDEX).exists()
    assert status(repo) == ""
