"""Run branches start where the cluster is and go where review is: rlgen run fetches the synced
branch first (or says in one line that it could not, and where it starts), a run branch's
upstream is its own name on origin (a plain git push opens the way to its pull request), and
rlgen run set on the synced branch makes a branch as the other commands do."""
from __future__ import annotations

import json
import subprocess

from support.repos import commit_all, git, listed, ok, rlgen_in


def _with_origin(repo, tmp_path):
    """``repo`` with a bare origin, and a second clone that moves origin's main on."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(origin)], check=True)
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main", "main")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(origin), str(other)], check=True)
    (other / "NOTES.md").write_text("merged elsewhere\n")
    commit_all(other, "A pull request merged meanwhile")
    git(other, "push", "-q", "origin", "main")
    return origin, git(other, "rev-parse", "HEAD").strip()


def test_run_new_fetches_and_its_branch_pushes_to_its_own_name(repo, tmp_path):
    origin, tip = _with_origin(repo, tmp_path)
    out = json.loads(ok(rlgen_in(repo, "run", "new", "exp")))
    assert out["start"] == "origin/main" and git(repo, "rev-parse", "HEAD~1").strip() == tip
    assert git(repo, "config", "branch.run/exp.remote").strip() == "origin"
    assert git(repo, "config", "branch.run/exp.merge").strip() == "refs/heads/run/exp"
    git(repo, "push", "-q")
    assert git(repo, "rev-parse", "--abbrev-ref", "run/exp@{upstream}").strip() == "origin/run/exp"
    assert git(origin, "rev-parse", "refs/heads/run/exp") == git(repo, "rev-parse", "HEAD")
    assert git(origin, "rev-parse", "refs/heads/main").strip() == tip


def test_run_set_on_the_synced_branch_makes_a_branch_from_origin(repo, tmp_path):
    _, tip = _with_origin(repo, tmp_path)
    out = json.loads(ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=3")))
    assert out["branch"] == "run/set-baseline" and out["new_branch"] is True
    assert git(repo, "rev-parse", "HEAD~1").strip() == tip
    assert git(repo, "config", "branch.run/set-baseline.merge").strip() == "refs/heads/run/set-baseline"
    assert git(repo, "rev-parse", "main") != git(repo, "rev-parse", "HEAD")
    # On a run's own branch it commits there.
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.total_epochs=4"))
    assert git(repo, "branch", "--show-current").strip() == "run/set-baseline"
    assert git(repo, "rev-parse", "HEAD~2").strip() == tip


def test_a_failed_fetch_is_one_line_naming_the_start(repo, tmp_path):
    _with_origin(repo, tmp_path)
    known = git(repo, "rev-parse", "origin/main").strip()
    git(repo, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    result = rlgen_in(repo, "run", "new", "exp", "-o", "table")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rlgen: could not fetch main from origin (")
    assert lines[0].endswith(f"starting from origin/main at {known[:12]}")
    assert git(repo, "rev-parse", "HEAD~1").strip() == known


def test_env_lists_a_new_run_or_sweep_in_that_environments_runs(repo):
    ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--no-branch"))
    ok(rlgen_in(repo, "run", "new", "exp", "--env", "staging"))
    assert listed(repo, "staging") == ["exp"] and listed(repo) == ["baseline"]
    git(repo, "switch", "-q", "main")
    ok(rlgen_in(repo, "run", "sweep", "lr", "--grid", "trainer.total_epochs=2,3", "--env", "staging"))
    assert listed(repo, "staging") == ["lr-1", "lr-2"]
    result = rlgen_in(repo, "run", "new", "other", "--env", "nope")
    assert result.returncode == 2 and "--env nope: no cluster syncs that environment" in result.stderr
