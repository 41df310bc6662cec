"""rlgen diff builds only what differs between the two revisions."""
from __future__ import annotations

import os
import shutil

from support.counting import builds, counting_kustomize
from support.repos import git, ok, pinned, rlgen_in

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
