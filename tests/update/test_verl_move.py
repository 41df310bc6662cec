"""rlgen update --set rlgen.verl=0.9.1 moves a verl 0.7.1 repository: the render brings the base
config, the image and the tool config; every run's keys that 0.9 moved are moved; a key 0.9
removed stops the update, one line per run and key, until --force drops it."""
from __future__ import annotations

import json

from support.repos import git, ok, repo_files, rlgen_in
from support.updates import branch, copy_of, head, status, validate

RENAMED = ("critic.model.fsdp_config.param_offload", "critic.fsdp.param_offload")
REMOVED = "actor_rollout_ref.rollout.skip_rollout"
MOVE = ("update", "--set", "rlgen.verl=0.9.1")


def _three_runs(generate, tmp_path):
    repo = copy_of(generate, tmp_path, "--set", "rlgen.verl=0.7.1")
    ok(rlgen_in(repo, "run", "new", "lr-3e-6", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    ok(rlgen_in(repo, "run", "new", "critic-offload", "--no-branch", "--set", f"{RENAMED[0]}=true"))
    ok(rlgen_in(repo, "run", "new", "skip", "--no-branch", "--set", f"{REMOVED}=true"))
    return repo


def test_a_removed_key_stops_the_move_one_line_per_run_and_key(generate, tmp_path):
    repo = _three_runs(generate, tmp_path)
    files, before, where = repo_files(repo), head(repo), branch(repo)
    result = rlgen_in(repo, *MOVE)
    assert result.returncode == 1, result.stderr
    assert f"run skip: {REMOVED} is not a config key of verl 0.9.1" in result.stderr
    assert "critic-offload" not in result.stderr and "lr-3e-6" not in result.stderr
    assert (repo_files(repo), head(repo), branch(repo), status(repo)) == (files, before, where, "")
    assert not git(repo, "branch", "--list", "rlgen/update-*").strip()


def test_force_moves_every_run_and_the_repository_validates(generate, tmp_path):
    from rlgen.tools import yamlio
    from rlgen.verl.trainer_config import flatten

    repo = _three_runs(generate, tmp_path)
    out = ok(rlgen_in(repo, *MOVE, "--force"))
    assert f"dropped {REMOVED} from runs/skip/run.yaml (not in verl 0.9.1)" in out
    assert status(repo) == ""

    def keys(run):
        return flatten(yamlio.read_plain12((repo / "runs" / run / "run.yaml").read_text()))

    assert keys("critic-offload")[RENAMED[1]] is True and RENAMED[0] not in keys("critic-offload")
    assert REMOVED not in keys("skip")
    assert keys("lr-3e-6")["actor_rollout_ref.actor.optim.lr"] == 3e-6
    assert yamlio.read_plain((repo / "rlgen.yaml").read_text())["options"]["rlgen"]["verl"] == "0.9.1"
    assert "FROM verlai/verl:vllm024.latest\n" in (repo / "images/training/Dockerfile").read_text()
    assert "type: native" in (repo / "base/training/tool_config.yaml").read_text()
    result = validate(repo)
    assert json.loads(result.stdout)["problems"] == [] and result.returncode == 0, result.stdout + result.stderr
    # rlgen diff shows the move run by run: the renamed key on the run that set it.
    diff = ok(rlgen_in(repo, "diff", "--base", "main"))
    assert "critic-offload" in diff and RENAMED[1] in diff
