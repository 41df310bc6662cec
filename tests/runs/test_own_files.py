"""rlgen run touches only its own files: the user's changes elsewhere (an untracked note, an
edited README) never block it and are never committed or undone; a change to a file it would
write is refused by name; a hand edit of a run is committed by rlgen run set with its new name."""
from __future__ import annotations

import json

from support.repos import git, link, ok, one_error_line, pinned, rlgen_in, run_rlgen

LR = "actor_rollout_ref.actor.optim.lr"


def _users_changes(repo) -> None:
    (repo / "notes.txt").write_text("my notes\n")
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nmy line\n")


def test_changes_elsewhere_never_block_and_stay_the_users(repo):
    _users_changes(repo)
    ok(rlgen_in(repo, "run", "new", "exp", "--set", f"{LR}=2e-6"))
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        link("exp"), "runs/exp/kustomization.yaml", "runs/exp/run.yaml"]
    ok(rlgen_in(repo, "run", "set", "exp", f"{LR}=3e-6"))
    ok(rlgen_in(repo, "run", "sweep", "lr", "--grid", f"{LR}=1e-6,2e-6", "--no-branch"))
    ok(rlgen_in(repo, "run", "rm", "exp", "--no-branch"))
    assert git(repo, "status", "--porcelain").splitlines() == [" M README.md", "?? notes.txt"]
    assert "my line" in (repo / "README.md").read_text()


def test_a_change_to_a_file_the_command_writes_is_refused_by_name(repo):
    run_yaml = repo / "runs" / "baseline" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text() + "# mine\n")
    (repo / "runs" / "baseline" / "notes.txt").write_text("mine\n")
    head = git(repo, "rev-parse", "HEAD")
    line = one_error_line(rlgen_in(repo, "run", "rm", "baseline"))
    assert "uncommitted changes to runs/baseline/notes.txt, runs/baseline/run.yaml, which this command writes" in line
    assert "git stash -u" in line
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "branch", "--list", "run/*") == ""
    assert run_yaml.read_text().endswith("# mine\n")


def test_a_failure_after_switching_branch_keeps_the_users_changes(repo):
    _users_changes(repo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    line = one_error_line(rlgen_in(repo, "run", "new", "exp"))
    assert "pre-commit hook" in line
    assert git(repo, "branch", "--show-current").strip() == "main" and git(repo, "branch", "--list", "run/*") == ""
    assert git(repo, "status", "--porcelain").splitlines() == [" M README.md", "?? notes.txt"]


def test_run_set_after_a_hand_edit_commits_the_edit_and_the_new_name_in_one_step(repo):
    git(repo, "switch", "-q", "-c", "run/tune")
    old = pinned(repo, "baseline")
    run_yaml = repo / "runs" / "baseline" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text() + "trainer:\n  total_epochs: 7\n"
                        if "trainer:" not in run_yaml.read_text()
                        else run_yaml.read_text().replace("trainer:\n", "trainer:\n  total_epochs: 7\n", 1))
    result = run_rlgen("validate", cwd=repo)
    assert result.returncode == 1 and "rlgen run set baseline" in result.stdout + result.stderr
    out = json.loads(ok(rlgen_in(repo, "run", "set", "baseline", "-o", "json")))
    assert out["previous_rayjob"] == old and out["rayjob"] != old and out["branch"] == "run/tune"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "runs/baseline/kustomization.yaml", "runs/baseline/run.yaml"]
    assert "Edited by hand:\n  runs/baseline/run.yaml" in git(repo, "log", "-1", "--format=%B")
    assert "total_epochs: 7" in git(repo, "show", "HEAD:runs/baseline/run.yaml")
    assert run_rlgen("validate", cwd=repo).returncode == 0
