"""A run is what its files say. A hand edit of ``runs/<run>/run.yaml`` (or of the training base),
merged as it is, would keep the RayJob's name, and KubeRay never runs a started RayJob again:
``rlgen validate`` (the generated CI's gate) fails on it with one line naming the run's file and
the one command that gives the RayJob its new name. The edits here are made on the files, as a
user in a pull request makes them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from support.repos import commit_all, git, ok, pinned, rlgen_in, run_rlgen
from support.toolchain import missing

LR = ("actor_rollout_ref", "actor", "optim", "lr")


def validate(repo, *args):
    return run_rlgen("validate", str(repo), "--offline", *args)


def edit_yaml(path, keys, value):
    yaml = YAML()
    doc = yaml.load(path.read_text())
    node = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    with path.open("w") as out:
        yaml.dump(doc, out)


def stale(result) -> list[dict]:
    return [p for p in json.loads(result.stdout)["problems"] if "edited after its RayJob was named" in p["message"]]


def test_a_hand_edit_of_run_yaml_fails_validate_with_the_fix(repo):
    before = pinned(repo, "baseline")
    assert stale(validate(repo, "-o", "json")) == []
    edit_yaml(repo / "runs" / "baseline" / "run.yaml", LR, 5e-6)
    commit_all(repo, "baseline: a lower learning rate")

    result = validate(repo, "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    (problem,) = stale(result)
    assert problem["source"] == "runs/baseline/run.yaml"
    assert problem["obj"] == f"RayJob/{before}"
    assert problem["fix"] == "rlgen run set baseline"

    lines = [line for line in validate(repo, "-o", "table").stdout.splitlines() if "runs/baseline/run.yaml" in line]
    assert len(lines) == 1 and "rlgen run set baseline" in lines[0], lines

    out = ok(rlgen_in(repo, "run", "set", "baseline"))
    after = pinned(repo, "baseline")
    assert after != before and after in out
    assert validate(repo, "-o", "json").returncode == 0


def test_an_edit_of_the_training_base_names_every_run(repo):
    ok(rlgen_in(repo, "run", "new", "second", "--no-branch", "--set", "trainer.total_epochs=2"))
    trainer = repo / "base" / "training" / "trainer.yaml"
    edit_yaml(trainer, ("trainer", "save_freq"), 7)
    commit_all(repo, "save more often")
    problems = stale(validate(repo, "-o", "json"))
    assert sorted((p["source"], p["fix"]) for p in problems) == [
        ("runs/baseline/run.yaml", "rlgen run set baseline"), ("runs/second/run.yaml", "rlgen run set second")]


def test_a_sized_run_keeps_its_name_and_size_through_validate(repo):
    """The name validate expects is the one rlgen run gave: a run of its own size is not stale."""
    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=2"))
    assert stale(validate(repo, "-o", "json")) == []



@pytest.fixture
def fix_step(tmp_path):
    """``fix_step(checkout)`` runs the validate workflow's fix step there as a runner does;
    returns its outputs and job summary."""
    if not shutil.which("jq"):
        message = "jq is missing (GitHub's runners have it)"
        missing(message)

    def run(checkout: Path) -> tuple[str, str]:
        doc = YAML(typ="safe").load((checkout / ".github" / "workflows" / "validate.yaml").read_text())
        step = next(s for s in doc["jobs"]["validate"]["steps"]
                    if s.get("name") == "Offer the fix of hand-edited runs as a commit")
        runner = tmp_path / "runner"
        runner.mkdir()
        env = {**os.environ, **step["env"], "RUNNER_TEMP": str(runner),
               "GITHUB_OUTPUT": str(runner / "output"), "GITHUB_STEP_SUMMARY": str(runner / "summary"),
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        ran = subprocess.run(["bash", "-c", step["run"]], cwd=checkout, env=env, capture_output=True, text=True)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        read = lambda name: (runner / name).read_text() if (runner / name).exists() else ""  # noqa: E731
        return read("output"), read("summary")

    return run


def test_the_generated_ci_offers_the_fix_as_a_commit(repo, tmp_path, fix_step):
    """On a pull request's merge checkout (a detached HEAD), the step's patch, applied with
    ``git am`` on the user's branch, makes validate pass."""
    edit_yaml(repo / "runs" / "baseline" / "run.yaml", LR, 5e-6)
    commit_all(repo, "baseline: a lower learning rate")
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", str(repo), str(checkout))
    git(checkout, "checkout", "--quiet", "--detach")

    output, summary = fix_step(checkout)
    assert "1 hand-edited run(s)" in summary and "git am rlgen-fix.patch" in summary
    git(repo, "-c", "user.name=u", "-c", "user.email=u@localhost", "am", "--quiet", output.strip().removeprefix("patch="))
    assert pinned(repo, "baseline") == pinned(checkout, "baseline")
    assert validate(repo, "-o", "json").returncode == 0


def test_the_fix_step_offers_nothing_when_no_run_is_stale(repo, fix_step):
    head = git(repo, "rev-parse", "HEAD")
    assert fix_step(repo) == ("", "")
    assert git(repo, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("command", [("validate", "--offline"), ("run", "set", "baseline")])
def test_a_misspelled_verl_key_written_by_hand_is_refused_naming_the_closest(repo, command):
    # verl's struct config refuses it only when the job starts on the GPUs: rlgen says so in the
    # pull request, as `rlgen run set baseline trainer.total_epoch=2` already does.
    edit_yaml(repo / "runs" / "baseline" / "run.yaml", ("trainer", "total_epoch"), 2)
    result = rlgen_in(repo, *command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        f"rlgen: error: {repo / 'runs' / 'baseline' / 'run.yaml'}: trainer.total_epoch: verl 0.9.1 has no config key "
        "'trainer.total_epoch' (closest: 'trainer.total_epochs')"]
