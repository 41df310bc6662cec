"""rlgen run new/set/list/rm on real generated repositories: real git, real kustomize."""
from __future__ import annotations

import re

import pytest
from rlgen.naming import dns1035_label_error
from ruamel.yaml import YAML
from support.repos import (
    INDEX,
    REPO,
    build,
    commit_all,
    git,
    listed,
    ok,
    one_error_line,
    pinned,
    rlgen_in,
)
from support.verl_config import compose_run, mounted_configs

LR = "actor_rollout_ref.actor.optim.lr"








def state(repo) -> tuple:
    """Everything an error must leave alone: files, branches, HEAD, index and worktree status."""
    files = {p.relative_to(repo).as_posix(): p.read_bytes()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return files, git(repo, "branch", "-a"), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


def load(path):
    return YAML(typ="safe").load(path.read_text())


def rendered(repo, run: str) -> tuple[dict, dict]:
    objects = build(repo / "runs" / run)
    return (next(o for o in objects if o["kind"] == "RayJob"), next(o for o in objects if o["kind"] == "ConfigMap"))




def test_run_new_commits_the_run_on_its_own_branch(repo):
    main = git(repo, "rev-parse", "HEAD").strip()
    out = ok(rlgen_in(repo, "run", "new", "lr-sweep", "--set", f"{LR}=3e-6", "--set", "trainer.total_epochs=2"))
    rayjob, configmap = rendered(repo, "lr-sweep")
    assert re.fullmatch(r"lr-sweep-[0-9a-f]{7}", rayjob["metadata"]["name"])
    assert rayjob["metadata"]["name"] in out and pinned(repo, "lr-sweep") == rayjob["metadata"]["name"]
    assert git(repo, "branch", "--show-current").strip() == "run/lr-sweep"
    assert git(repo, "rev-parse", "HEAD~1").strip() == main
    assert git(repo, "status", "--porcelain") == ""
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == [
        INDEX, "runs/lr-sweep/kustomization.yaml", "runs/lr-sweep/run.yaml"]
    message = git(repo, "log", "-1", "--format=%B")
    assert f"{LR}=3e-06" in message and "trainer.total_epochs=2" in message
    assert listed(repo) == ["baseline", "lr-sweep"]
    # What the pod gets: its own ConfigMap, with this run's changes, experiment and checkpoints.
    run = YAML(typ="safe").load(configmap["data"]["run.yaml"])
    assert run["actor_rollout_ref"]["actor"]["optim"]["lr"] == 3e-06
    # The checkpoint root names the commit the run was made on: a run made again under this
    # name never finds these checkpoints.
    assert run["trainer"] == {"experiment_name": "lr-sweep", "default_local_dir": f"/var/checkpoints/lr-sweep/{main[:10]}",
                              "resume_mode": "auto", "total_epochs": 2}
    volumes = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["volumes"]
    assert {"name": "configs", "configMap": {"name": configmap["metadata"]["name"]}} in volumes


def test_a_new_run_composes_with_the_pinned_verl(repo, tmp_path):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch", "--set", f"{LR}=3e-6",
             "--set", "trainer.logger=[console, mlflow]", "--set", "actor_rollout_ref.rollout.n=8"))
    configs = tmp_path / "configs"
    configs.mkdir()
    cfg = compose_run(*mounted_configs(repo, "exp", configs))
    assert cfg.actor_rollout_ref.actor.optim.lr == 3e-06
    assert list(cfg.trainer.logger) == ["console", "mlflow"]
    assert cfg.actor_rollout_ref.rollout.n == 8
    # The run's checkpoint root; resume.py gives verl its RayJob's folder below it
    # (tests/verl/test_checkpoints.py).
    assert cfg.trainer.experiment_name == "exp" and cfg.trainer.default_local_dir.startswith("/var/checkpoints/exp/")
    assert cfg.trainer.resume_mode == "auto"


def test_no_branch_commits_on_the_current_branch(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch"))
    assert git(repo, "branch", "--show-current").strip() == "main"
    assert "run/exp" not in git(repo, "branch")
    assert "Changed keys: none" in git(repo, "log", "-1", "--format=%B")


@pytest.mark.parametrize("args, expected", [
    (["new", "exp", "--set", f"{LR}r=1e-6"], f"no config key '{LR}r' (closest: '{LR}')"),
    (["new", "exp", "--set", "trainer.total_epoch=2"], "(closest: 'trainer.total_epochs')"),
    (["new", "exp", "--set", f"{LR}=fast"], f"{LR}: expects a number like 1e-06, the repository's value, got \"fast\""),
    (["new", "exp", "--set", "trainer.logger=console"], "trainer.logger: expects a list"),
    (["new", "exp", "--set", "trainer.total_epochs=1.5"], "expects an integer"),
    (["new", "exp", "--set", "trainer.total_epochs=[1"], "is not a YAML value"),
    (["new", "exp", "--set", "actor_rollout_ref.actor.optim=1"], "is a section of verl's config"),
    (["new", "exp", "--set", "trainer.experiment_name=other"], "experiment names and checkpoints are per run"),
    (["set", "baseline", "trainer.resume_mode=disable"], "a retried RayJob resumes from its own folder"),
    (["new", "exp", "--set", "trainer.n_gpus_per_node=3"], "= 4096 is not divisible by 3 GPUs"),
    (["new", "exp", "--set", "no-equals-sign"], "expected KEY=VALUE"),
    (["new", "Exp_1"], "not a DNS-1035 label"),
    (["new", "r" * 64], "longer than 63 characters"),
    (["new", "baseline"], "run 'baseline' already exists"),
    (["new", "exp", "--from", "nope"], "no run 'nope' (runs: baseline)"),
    (["set", "nope", f"{LR}=1e-6"], "no run 'nope'"),
    (["set", "baseline", "trainer.lr=1e-6"], f"(closest: '{LR}')"),
    (["rm", "nope"], "no run 'nope'"),
])
def test_bad_input_is_one_line_and_changes_nothing(repo, args, expected):
    before = state(repo)
    assert expected in one_error_line(rlgen_in(repo, "run", *args))
    assert state(repo) == before


def test_an_existing_branch_is_refused(repo):
    git(repo, "branch", "run/exp")
    before = state(repo)
    assert "branch run/exp already exists" in one_error_line(rlgen_in(repo, "run", "new", "exp"))
    assert state(repo) == before


def test_a_failure_after_writing_restores_files_and_branch(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(repo)
    said = one_error_line(rlgen_in(repo, "run", "new", "exp", "--set", f"{LR}=2e-6"))
    assert "the pre-commit hook (.git/hooks/pre-commit) refused the commit" in said and "refused by hook" in said
    assert state(repo) == before


def test_a_kustomize_failure_restores_the_files(repo):
    (repo / "base" / "training" / "rayjob.yaml").unlink()
    commit_all(repo, "break the training base")
    before = state(repo)
    assert "kustomize failed on" in one_error_line(rlgen_in(repo, "run", "new", "exp", "--no-branch"))
    assert state(repo) == before


def test_run_set_renames_the_rayjob_keeps_comments_and_commits(repo):
    old = pinned(repo, "baseline")
    out = ok(rlgen_in(repo, "run", "set", "baseline", f"{LR}=2e-6", "-o", "table"))
    new = pinned(repo, "baseline")
    assert new != old and f"{old} -> {new}" in out
    assert rendered(repo, "baseline")[0]["metadata"]["name"] == new
    text = (repo / "runs" / "baseline" / "run.yaml").read_text()
    assert "# Relative to the RayJob's working_dir" in text and "lr: 2e-06" in text
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith(f"Run baseline: set {LR}") and f"{LR}: (base) -> 2e-06" in message
    # On the synced branch the change goes to review on a branch of its own, from it.
    assert git(repo, "branch", "--show-current").strip() == "run/set-baseline" and git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD~1") == git(repo, "rev-parse", "main")
    # The same value again, on that branch: nothing to commit.
    head = git(repo, "rev-parse", "HEAD")
    assert "unchanged" in ok(rlgen_in(repo, "run", "set", "baseline", f"{LR}=2e-6", "-o", "table"))
    assert git(repo, "rev-parse", "HEAD") == head
    # Nothing to change on the synced branch leaves no branch behind.
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-q", "-D", "run/set-baseline")
    assert "unchanged" in ok(rlgen_in(repo, "run", "set", "baseline", "-o", "table"))
    assert git(repo, "branch", "--show-current").strip() == "main" and git(repo, "branch", "--list", "run/*") == ""


def test_run_set_after_a_hand_edit_starts_the_run_again(repo):
    old = pinned(repo, "baseline")
    path = repo / "runs" / "baseline" / "run.yaml"
    path.write_text(path.read_text() + "data:\n  train_batch_size: 128\n")
    commit_all(repo, "hand edit: the RayJob keeps its name")
    assert rendered(repo, "baseline")[0]["metadata"]["name"] == old
    ok(rlgen_in(repo, "run", "set", "baseline", "data.train_batch_size=128"))
    assert pinned(repo, "baseline") != old


def test_run_new_from_copies_the_changes_of_another_run(repo):
    ok(rlgen_in(repo, "run", "new", "first", "--no-branch", "--set", f"{LR}=3e-6"))
    ok(rlgen_in(repo, "run", "new", "second", "--from", "first", "--set", "trainer.total_epochs=3"))
    run = load(repo / "runs" / "second" / "run.yaml")
    assert run["actor_rollout_ref"]["actor"]["optim"]["lr"] == 3e-06
    head = git(repo, "rev-parse", "HEAD~1").strip()
    assert run["trainer"] == {"experiment_name": "second", "default_local_dir": f"/var/checkpoints/second/{head[:10]}",
                              "resume_mode": "auto", "total_epochs": 3}
    assert "new run from first" in git(repo, "log", "-1", "--format=%B")


def test_run_list_shows_runs_rayjobs_and_changed_keys(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch", "--set", f"{LR}=3e-6", "--set", "trainer.total_epochs=2"))
    lines = ok(rlgen_in(repo, "run", "list", "-o", "table")).splitlines()
    assert lines[0].split() == ["RUN", "RAYJOB", "SIZE", "CKPT/SAVE", "CHANGED", "KEYS"]
    # Qwen2.5-3B: 3e9 parameters x 14 bytes (fp32 weights, Adam's two moments, a bf16 copy).
    assert lines[1].split() == ["baseline", pinned(repo, "baseline"), "1x8", "42", "GB", "-"]
    assert lines[2].split(maxsplit=5) == ["exp", pinned(repo, "exp"), "1x8", "42", "GB",
                                          f"{LR}=3e-06, trainer.total_epochs=2"]
    ok(rlgen_in(repo, "run", "set", "exp", "actor_rollout_ref.actor.checkpoint.save_contents=[model]"))
    assert ok(rlgen_in(repo, "run", "list", "-o", "table")).splitlines()[2].split()[3:5] == ["12", "GB"]


def test_run_rm_removes_the_folder_and_the_index_entry(repo):
    ok(rlgen_in(repo, "run", "new", "exp", "--no-branch"))
    rayjob = pinned(repo, "exp")
    assert rayjob in ok(rlgen_in(repo, "run", "rm", "exp", "--no-branch", "-o", "table"))
    assert not (repo / "runs" / "exp").exists()
    assert listed(repo) == ["baseline"]
    assert git(repo, "status", "--porcelain") == "" and "Run exp: remove" in git(repo, "log", "-1", "--format=%B")
    assert rayjob not in {o["metadata"]["name"] for o in build(repo / "overlays/production/runs")}


def test_a_long_run_name_keeps_its_folder_and_gets_a_short_rayjob_name(repo):
    name = "grpo-qwen2-5-3b-gsm8k-tool-agent-lr-3e6-epochs-4"
    ok(rlgen_in(repo, "run", "new", name, "--no-branch"))
    rayjob = rendered(repo, name)[0]["metadata"]["name"]
    assert len(rayjob) <= 47 and dns1035_label_error(rayjob, 47) is None
    assert rayjob.startswith("grpo-qwen2-5-3b-gsm8k-tool-agent-")
    assert load(repo / "runs" / name / "run.yaml")["trainer"]["experiment_name"] == name


def test_every_run_renders_and_passes_the_schema_checks(repo, schemas):
    ok(rlgen_in(repo, "run", "new", "lr-high", "--no-branch", "--set", f"{LR}=1e-5"))
    ok(rlgen_in(repo, "run", "new", "long-" + "x" * 50, "--no-branch", "--set", "data.train_batch_size=128"))
    ok(rlgen_in(repo, "run", "new", "sweep", "--from", "lr-high", "--set", "actor_rollout_ref.rollout.n=8"))
    names = listed(repo)
    assert len(names) == 4
    rayjobs = set()
    for run in names:
        objects = build(repo / "runs" / run)
        assert {o["kind"] for o in objects} == {"RayJob", "ConfigMap"}
        assert [p for o in objects for p in schemas(o)] == []
        rayjob = next(o for o in objects if o["kind"] == "RayJob")["metadata"]["name"]
        assert rayjob == pinned(repo, run) and dns1035_label_error(rayjob, 47) is None
        rayjobs.add(rayjob)
    everything = build(repo / "overlays/production/runs")
    assert {o["metadata"]["name"] for o in everything if o["kind"] == "RayJob"} == rayjobs
    assert [p for o in everything for p in schemas(o)] == []


def test_run_rm_makes_a_branch_from_the_synced_branch_like_run_new(repo):
    main = git(repo, "rev-parse", "HEAD").strip()
    rayjob = pinned(repo, "baseline")
    out = ok(rlgen_in(repo, "run", "rm", "baseline", "-o", "table"))
    assert "on branch run/rm-baseline" in out and rayjob in out
    assert git(repo, "branch", "--show-current").strip() == "run/rm-baseline"
    assert git(repo, "rev-parse", "HEAD~1").strip() == main
    assert git(repo, "rev-parse", "main").strip() == main  # the synced branch is left alone
    assert not (repo / "runs" / "baseline").exists()


@pytest.mark.parametrize("args", [("new", "exp", "--set", f"{LR}=3e-6"), ("set", "baseline", f"{LR}=3e-6"),
                                  ("rm", "baseline")], ids=["new", "set", "rm"])
def test_dry_run_shows_the_commit_and_changes_nothing(repo, args):
    before = state(repo)
    out = ok(rlgen_in(repo, "run", *args, "--dry-run", "-o", "table"))
    assert out.startswith("Dry run: nothing written. Would commit")
    assert f"Run {args[1]}:" in out and "runs/" in out  # the message and the files it changes
    assert state(repo) == before
