"""Runs that could never start are refused with the numbers and the fix: a worker larger than a
node of the pool, a run larger than the queue's quota plus what it may borrow; ``rlgen
validate`` says the same of a hand-edited run.yaml."""
from __future__ import annotations

import shutil

from support.repos import one_error_line, run_rlgen

KUEUE = ("--plugin", "kueue", "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=rl-team")


def test_a_worker_larger_than_a_node_is_refused(generate, tmp_path):
    repo = shutil.copytree(generate(), tmp_path / "repo", symlinks=True)
    line = one_error_line(run_rlgen("run", "new", "wide", "--set", "trainer.n_gpus_per_node=16", "--no-branch", cwd=repo))
    assert "trainer.n_gpus_per_node=16 GPUs is larger than a node of the pool (8 GPUs" in line, line
    assert not (repo / "runs" / "wide").exists()


def test_a_run_larger_than_the_quota_is_refused_by_new_and_validate(generate, tmp_path):
    repo = shutil.copytree(generate(*KUEUE), tmp_path / "repo", symlinks=True)
    line = one_error_line(run_rlgen("run", "new", "big", "--set", "trainer.nnodes=8", "--no-branch", cwd=repo))
    assert "8 x 8 = 64 GPUs is larger than the queue ever admits (32 GPUs of kueue.gpu_quota)" in line, line
    assert run_rlgen("run", "new", "fits", "--set", "trainer.nnodes=4", "--no-branch", cwd=repo).returncode == 0
    run_yaml = repo / "runs" / "fits" / "run.yaml"
    run_yaml.write_text(run_yaml.read_text().replace("nnodes: 4", "nnodes: 8"))
    result = run_rlgen("validate", "-o", "table", cwd=repo)
    assert result.returncode == 1
    assert "runs/fits/run.yaml" in result.stdout and "64 GPUs is larger than the queue ever admits" in result.stdout


def test_borrowing_raises_what_the_queue_admits(generate, tmp_path):
    repo = shutil.copytree(generate("--plugin", "kueue", "--set", "kueue.gpu_quota=16", "--set", "kueue.teams=rl-team",
                                    "--set", "kueue.cohort=pool", "--set", "kueue.borrowing_limit=16"),
                           tmp_path / "repo", symlinks=True)
    assert run_rlgen("run", "new", "borrows", "--set", "trainer.nnodes=4", "--no-branch", cwd=repo).returncode == 0
    line = one_error_line(run_rlgen("run", "new", "big", "--set", "trainer.nnodes=8", "--no-branch", cwd=repo))
    assert "(32 GPUs = kueue.gpu_quota 16 + kueue.borrowing_limit 16)" in line, line
