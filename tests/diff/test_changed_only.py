"""rlgen diff builds and checks only what differs between the two revisions."""
from __future__ import annotations

import os
import shutil

from support.counting import builds, counting_kustomize
from support.repos import commit_all, git, ok, one_error_line, pinned, rlgen_in

LR = "actor_rollout_ref.actor.optim.lr"


def test_a_one_run_change_builds_that_run_once_per_revision(repo, tmp_path):
    for name in ("a", "b", "c"):
        ok(rlgen_in(repo, "run", "new", name, "--no-branch", "--set", f"{LR}=3e-6"))
    git(repo, "switch", "-q", "-c", "run/b-lr")
    old = pinned(repo, "b")
    ok(rlgen_in(repo, "run", "set", "b", f"{LR}=1e-5"))
    env, log = counting_kustomize(tmp_path)
    env = {**os.environ, **env}

    out = ok(rlgen_in(repo, "diff", "-o", "table", env=env))
    built = builds(log)
    assert len(built) == 2 and all(b.endswith("/runs/b") for b in built), built
    assert "2 added, 2 removed, 0 changed" in out.splitlines()[0]
    assert f"~ b: RayJob {old} -> {pinned(repo, 'b')}\n      {LR}: 3e-06 -> 1e-05\n" in out

    # The renders are cached by content: asking again builds nothing and says the same.
    assert ok(rlgen_in(repo, "diff", "-o", "table", env=env)) == out
    assert builds(log) == []

    # Two commits (rlgen run set committed), as the generated CI compares them: read from git,
    # the same two builds.
    shutil.rmtree(repo / ".rlgen-cache")
    committed = ok(rlgen_in(repo, "diff", "--base", "main", "--head", "HEAD", "-o", "table", env=env))
    built = builds(log)
    assert len(built) == 2 and all(b.endswith("/runs/b") for b in built), built
    runs = [text.split("\n", 1)[1].split("Objects:")[0] for text in (committed, out)]
    assert runs[0] == runs[1] and "~ b: RayJob" in runs[0]


def test_an_edit_of_the_training_base_shows_in_every_run(repo, tmp_path):
    for name in ("a", "b", "c", "d", "e"):
        ok(rlgen_in(repo, "run", "new", name, "--no-branch"))
    git(repo, "switch", "-q", "-c", "epochs")
    trainer = repo / "base" / "training" / "trainer.yaml"
    trainer.write_text(trainer.read_text().replace("total_epochs: ", "total_epochs: 1"))
    env, log = counting_kustomize(tmp_path)

    out = ok(rlgen_in(repo, "diff", "-o", "table", env={**os.environ, **env}))
    # Six runs changed: one build of runs/ per revision is cheaper than one per run.
    assert len(builds(log)) == 2
    runs = [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  ~ ")]
    assert {"~ a", "~ b", "~ c", "~ d", "~ e"} <= set(runs), out


def test_a_defect_the_change_leaves_alone_is_for_validate_not_diff(repo):
    """A hand edit already on the base (a plugin rlgen.yaml names that is not installed, a run
    file that no longer parses) is no change to review: diff shows the change beside it, and
    refuses the defect, in one line naming the file, once the change touches that file."""
    for name in ("a", "b"):
        ok(rlgen_in(repo, "run", "new", name, "--no-branch"))
    answers, broken = repo / "rlgen.yaml", repo / "runs" / "a" / "run.yaml"
    answers.write_text(answers.read_text().replace("rollout: vllm", "rollout: not-installed"))
    broken.write_text(broken.read_text() + "trainer: [\n")
    commit_all(repo, "hand edits")
    git(repo, "switch", "-q", "-c", "epochs")
    run_b = repo / "runs" / "b" / "run.yaml"
    run_b.write_text(run_b.read_text().replace("trainer:\n", "trainer:\n  total_epochs: 7\n", 1))

    out = ok(rlgen_in(repo, "diff", "-o", "table"))
    assert "~ b: RayJob" in out and "trainer.total_epochs:" in out and "-> 7" in out, out
    assert "not-installed" in one_error_line(rlgen_in(repo, "validate", "--offline"))

    broken.write_text(broken.read_text() + "# touched\n")
    assert "runs/a/run.yaml" in one_error_line(rlgen_in(repo, "diff", "-o", "table"))
    answers.write_text(answers.read_text() + "# touched\n")
    assert "not-installed" in one_error_line(rlgen_in(repo, "diff", "-o", "table"))


def test_the_base_side_asks_git_only_for_the_files_that_differ(repo, monkeypatch):
    """Compared with the working tree, a commit's files that git says are alike are read from
    disk: git's object store is asked for the changed ones alone, and what the base side
    reads is still the commit's own content."""
    from rlgen.render.checkouts import Commit, WorkingTree, changed
    from rlgen.tools import git_plumbing

    ok(rlgen_in(repo, "run", "new", "b", "--no-branch", "--set", f"{LR}=3e-6"))
    base_sha = git(repo, "rev-parse", "HEAD").strip()
    run_yaml = repo / "runs" / "b" / "run.yaml"
    before = run_yaml.read_bytes()
    run_yaml.write_text(run_yaml.read_text().replace("3e-06", "1e-05").replace("3.0e-06", "1.0e-05"))
    assert run_yaml.read_bytes() != before
    asked: list[str] = []
    read_blobs = git_plumbing.read_blobs
    monkeypatch.setattr(git_plumbing, "read_blobs", lambda r, ids: asked.extend(ids) or read_blobs(r, ids))

    base = Commit("base", repo, base_sha, repo / ".scratch-base")
    differ = changed(base, WorkingTree("working tree", repo))
    assert differ == {"runs/b/run.yaml"}
    trainer = "base/training/trainer.yaml"
    assert base.read(trainer) == (repo / trainer).read_bytes()
    assert base.read("runs/b/run.yaml") == before
    assert asked == [base.id("runs/b/run.yaml")]


def test_an_edit_git_is_told_to_overlook_is_still_a_change(repo):
    """A file marked assume-unchanged is one git's own diff stops comparing with the disk: its
    edit still reaches the cluster once committed, so the diff shows it."""
    ok(rlgen_in(repo, "run", "new", "b", "--no-branch", "--set", f"{LR}=3e-6"))
    git(repo, "update-index", "--assume-unchanged", "runs/b/run.yaml")
    run_yaml = repo / "runs" / "b" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("3e-06", "1e-05").replace("3.0e-06", "1.0e-05"))
    assert git(repo, "diff", "--name-only", "HEAD") == ""

    out = ok(rlgen_in(repo, "diff", "--base", "HEAD", "-o", "table"))
    assert f"{LR}: 3e-06 -> 1e-05" in out, out
