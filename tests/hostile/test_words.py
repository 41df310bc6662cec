"""The words a person reads: a suggestion in verl's own key names, a wrong type shown against
the value the repository has, and a sweep's diff for a pull request that shows each run's
objects once in full and the others as their differences."""
from __future__ import annotations

import shutil
from pathlib import Path

from support.repos import one_error_line, rlgen_in


def test_a_key_in_other_words_suggests_verls_name(generate, tmp_path):
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    line = one_error_line(rlgen_in(repo, "run", "new", "x", "--set", "actor_rollout_ref.actor.optim.learning_rate=1e-6"))
    assert "(closest: 'actor_rollout_ref.actor.optim.lr')" in line, line


def test_a_wrong_type_is_shown_against_the_repositorys_value(generate, tmp_path):
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    assert "  total_epochs: 1\n" in (repo / "base/training/trainer.yaml").read_text()
    line = one_error_line(rlgen_in(repo, "run", "new", "x", "--set", "trainer.total_epochs=1.5"))
    assert "expects an integer like 1, the repository's value, got 1.5" in line, line


def test_a_sweeps_diff_shows_each_object_once_in_full(generate, tmp_path):
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    made = rlgen_in(repo, "run", "sweep", "lr", "--grid", "actor_rollout_ref.actor.optim.lr=1e-6,3e-6",
                    "--grid", "data.train_batch_size=[128, 256]")
    assert made.returncode == 0, made.stderr
    result = rlgen_in(repo, "diff", "-o", "markdown")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    # 4 runs: one ConfigMap and one RayJob whole, the 3 others of each as their differences.
    assert text.count("mcp_server.json: |") == 1
    assert text.count("kind: RayJob") == 1
    assert text.count(": as lr-1-") == 6
    assert "+      train_batch_size: 256" in text and "+      experiment_name: lr-4" in text


ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", "external-secrets.role_arn=acs:ram::1234:role/eso",
       "--set", "external-secrets.oidc_provider_arn=acs:ram::1234:oidc-provider/ack-rrsa-c0ffee")


def test_secret_set_outside_git_is_one_sentence_and_reads_nothing(generate):
    result = rlgen_in(generate(*ESO), "secret", "set", "oss-credentials", "akSecret", input="never-read\n")
    line = one_error_line(result)
    assert "never-read" not in line and result.stdout == ""
    # One sentence: where the key goes, the command that puts it there, when it arrives.
    assert ";" not in line.replace('"$(date +%s)"', ""), line
    assert line.endswith("External Secrets syncs it into Secret rl-training/oss-credentials within 1h"), line
