"""rlgen run refuses what would make a wrong commit: a detached HEAD, values verl cannot take,
a rollout engine the image lacks, a second command at the same time; and branches from the
synced branch, not from whatever is checked out."""
from __future__ import annotations

import fcntl
import json
import os

from support.repos import commit_all, git, ok, one_error_line, rlgen_in


def state(repo) -> tuple:
    files = {p.relative_to(repo).as_posix(): p.read_bytes()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return files, git(repo, "branch", "-a"), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


def test_run_new_branches_from_the_synced_branch_not_from_another_runs_branch(repo):
    main = git(repo, "rev-parse", "main").strip()
    ok(rlgen_in(repo, "run", "new", "first"))
    out = ok(rlgen_in(repo, "run", "new", "second"))  # not a terminal: JSON
    assert json.loads(out)["start"] == "main"
    assert git(repo, "rev-parse", "HEAD~1").strip() == main
    assert not (repo / "runs" / "first").exists()
    # --from-head keeps the old behaviour for stacking a run on purpose.
    ok(rlgen_in(repo, "run", "new", "third", "--from-head"))
    assert (repo / "runs" / "second").is_dir() and git(repo, "rev-parse", "HEAD~2").strip() == main


def test_run_new_prefers_origin_of_the_synced_branch(repo):
    ok(rlgen_in(repo, "run", "new", "upstream", "--no-branch"))
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    out = ok(rlgen_in(repo, "run", "new", "next", "-o", "table"))
    assert "(from origin/main)" in out and (repo / "runs" / "upstream").is_dir()


def test_every_committing_command_refuses_a_detached_head(repo):
    git(repo, "switch", "-q", "--detach")
    before = state(repo)
    for args in (("run", "new", "x", "--no-branch"), ("run", "new", "x"), ("run", "set", "baseline", "trainer.total_epochs=2"),
                 ("run", "rm", "baseline", "--no-branch")):
        assert "HEAD is detached" in one_error_line(rlgen_in(repo, *args))
        assert state(repo) == before


def test_run_set_refuses_null_for_a_key_verl_needs(repo):
    before = state(repo)
    line = one_error_line(rlgen_in(repo, "run", "set", "baseline", "data.train_batch_size=null"))
    assert line.startswith("rlgen: error: data.train_batch_size: null, but verl needs a value")
    line = one_error_line(rlgen_in(repo, "run", "set", "baseline", "data.train_batch_size=big"))
    assert "data.train_batch_size" in line and "an integer" in line
    assert state(repo) == before


def test_run_set_refuses_a_rollout_engine_the_image_lacks(repo):
    line = one_error_line(rlgen_in(repo, "run", "set", "baseline", "actor_rollout_ref.rollout.name=hf"))
    assert '"hf" is not "vllm"' in line
    ok(rlgen_in(repo, "run", "set", "baseline", "actor_rollout_ref.rollout.name=vllm"))


def test_a_second_command_at_the_same_time_is_told_so(repo):
    before = state(repo)
    fd = os.open(repo / ".git" / "rlgen.lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        line = one_error_line(rlgen_in(repo, "run", "new", "x"))
    finally:
        os.close(fd)
    assert "another rlgen command is changing this repository" in line
    assert state(repo) == before
    ok(rlgen_in(repo, "run", "new", "x"))


def test_run_list_json_keeps_non_ascii(repo):
    run = repo / "runs" / "baseline" / "run.yaml"
    run.write_text(run.read_text().replace("trainer:\n", "trainer:\n  project_name: 项目\n"))
    commit_all(repo, "project name")
    out = ok(rlgen_in(repo, "run", "list"))  # not a terminal: JSON
    assert "项目" in out
    assert json.loads(out)[0]["changes"] == {"trainer.project_name": "项目"}
    assert "项目" in ok(rlgen_in(repo, "run", "list", "-o", "table"))


def test_no_git_identity_refuses_every_committing_command_with_gits_advice(repo, tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        env.pop(var, None)
    before = state(repo)
    for args in (("run", "new", "x"), ("run", "new", "x", "--no-branch"), ("run", "set", "baseline", "trainer.total_epochs=2"),
                 ("run", "rm", "baseline"), ("run", "sweep", "lr", "--grid", "trainer.total_epochs=2,3")):
        line = one_error_line(rlgen_in(repo, *args, env=env))
        assert 'git config --global user.email "you@example.com"' in line, args
        assert state(repo) == before
    assert "noreply.localhost" not in git(repo, "log", "--format=%ae %ce")
    # The repository's own identity is the user's, and the commit carries it.
    git(repo, "config", "user.name", "Ada Researcher")
    git(repo, "config", "user.email", "ada@rl-team.cn")
    ok(rlgen_in(repo, "run", "new", "x", env=env))
    assert git(repo, "log", "-1", "--format=%an <%ae> %cn <%ce>").strip() == \
        "Ada Researcher <ada@rl-team.cn> Ada Researcher <ada@rl-team.cn>"
