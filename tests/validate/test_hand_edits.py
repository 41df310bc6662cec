"""A run is what its files say. A hand edit of ``runs/<run>/run.yaml`` (or of the training base),
merged as it is, would keep the RayJob's name, and KubeRay never runs a started RayJob again:
``rlgen validate`` (the generated CI's gate) fails on it with one line naming the run's file and
the one command that gives the RayJob its new name. The edits here are made on the files, as a
user in a pull request makes them."""
from __future__ import annotations

import json

from ruamel.yaml import YAML
from support.repos import commit_all, ok, pinned, rlgen_in, run_rlgen

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
