"""rlgen run new/set/rm -o json: one object on stdout, its fields what git holds afterwards."""
from __future__ import annotations

import json

from support.repos import git, link, ok, pinned, rlgen_in

LR = "actor_rollout_ref.actor.optim.lr"


def committed_files(repo, commit: str) -> dict[str, list[str]]:
    """What ``commit`` added, changed and removed, read from git itself."""
    found = {"added": [], "changed": [], "removed": []}
    for line in git(repo, "diff", "--name-status", "--no-renames", f"{commit}~1", commit).splitlines():
        status, path = line.split("\t")
        found[{"A": "added", "M": "changed", "D": "removed"}[status[0]]].append(path)
    return {k: sorted(v) for k, v in found.items()}


def test_run_new_set_rm_json_is_what_git_holds(repo):
    result = rlgen_in(repo, "run", "new", "exp", "--set", f"{LR}=3e-6", "-o", "json")
    new = json.loads(ok(result))
    head = git(repo, "rev-parse", "HEAD").strip()
    assert result.stderr == ""
    assert new["run"] == "exp" and new["dry_run"] is False and new["new_branch"] is True
    assert new["branch"] == "run/exp" == git(repo, "branch", "--show-current").strip()
    assert new["commit"] == head and new["start"] == "main"
    assert new["rayjob"] == pinned(repo, "exp")
    assert new["files"] == committed_files(repo, head)
    # No file another run's branch changes: the run's folders are all new.
    assert sorted(new["files"]["added"]) == [link("exp"), "runs/exp/kustomization.yaml", "runs/exp/run.yaml"]
    assert new["files"]["changed"] == []

    old = new["rayjob"]
    changed = json.loads(ok(rlgen_in(repo, "run", "set", "exp", f"{LR}=1e-5", "-o", "json")))
    head = git(repo, "rev-parse", "HEAD").strip()
    assert changed["commit"] == head and changed["branch"] == "run/exp" and changed["new_branch"] is False
    assert changed["previous_rayjob"] == old and changed["rayjob"] == pinned(repo, "exp") != old
    assert changed["keys"] == {LR: 1e-5}
    assert changed["files"] == committed_files(repo, head)

    same = json.loads(ok(rlgen_in(repo, "run", "set", "exp", f"{LR}=1e-5", "-o", "json")))
    assert same["commit"] is None and same["rayjob"] == same["previous_rayjob"]
    assert git(repo, "rev-parse", "HEAD").strip() == head

    removed = json.loads(ok(rlgen_in(repo, "run", "rm", "exp", "--no-branch", "-o", "json")))
    head = git(repo, "rev-parse", "HEAD").strip()
    assert removed["commit"] == head and removed["rayjob"] == changed["rayjob"] and removed["start"] is None
    assert removed["files"] == committed_files(repo, head) and "runs/exp/run.yaml" in removed["files"]["removed"]


def test_a_dry_run_in_json_says_what_it_would_commit_and_commits_nothing(repo):
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "branch", "-a"), git(repo, "status", "--porcelain"))
    dry = json.loads(ok(rlgen_in(repo, "run", "new", "exp", "--dry-run", "-o", "json")))
    assert dry["dry_run"] is True and dry["commit"] is None and dry["branch"] == "run/exp"
    assert "runs/exp/run.yaml" in dry["files"]["added"]
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "branch", "-a"), git(repo, "status", "--porcelain")) == before
    assert not (repo / "runs" / "exp").exists()
    # The same run made for real commits exactly the files the dry run named.
    real = json.loads(ok(rlgen_in(repo, "run", "new", "exp", "-o", "json")))
    assert real["files"] == dry["files"] and real["rayjob"] == dry["rayjob"]


def test_an_error_in_json_mode_is_one_line_on_stderr_and_nothing_on_stdout(repo):
    result = rlgen_in(repo, "run", "set", "nope", f"{LR}=1e-5", "-o", "json")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "no run 'nope'" in result.stderr
