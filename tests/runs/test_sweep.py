"""rlgen run sweep, run list's grouping and run rm --sweep on real generated repositories: real
git, real kustomize, and rlgen validate on what they commit."""
from __future__ import annotations

import json
import os

import pytest
from rlgen.errors import RlgenError
from rlgen.runs import grid
from ruamel.yaml import YAML
from support.repos import build, link, git, listed, ok, one_error_line, pinned, rlgen_in, run_rlgen, schema_dir
from support.verl_config import compose_run, mounted_configs

LR = "actor_rollout_ref.actor.optim.lr"
BATCH = "data.train_batch_size"
SAFE = YAML(typ="safe")


def state(repo) -> tuple:
    """Everything a refused or dry-run command must leave alone: files, branches, HEAD, status,
    and no journal of an unfinished change."""
    files = {p.relative_to(repo).as_posix(): p.read_bytes()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.relative_to(repo).parts}
    journal = (repo / ".git" / "rlgen-change.json").exists()
    return files, journal, git(repo, "branch", "-a"), git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")


def index(repo) -> list[str]:
    return listed(repo)


def validate(repo) -> tuple[int, list]:
    env = {**os.environ, "RLGEN_SCHEMA_DIR": str(schema_dir())}
    result = run_rlgen("validate", str(repo), "--output", "json", env=env)
    return result.returncode, json.loads(result.stdout)["problems"]


def sweep(repo, *args: str) -> dict:
    return json.loads(ok(rlgen_in(repo, "run", "sweep", *args, "-o", "json")))


# ---- The grid, read before anything is opened -------------------------------------------------

def test_the_points_are_the_product_in_grid_order_the_last_key_fastest():
    axes = grid.parse((f"{LR}=1e-6,3e-6", f"{BATCH}=[128, 256, 512]"))
    assert axes == {LR: [1e-6, 3e-6], BATCH: [128, 256, 512]}
    assert grid.points(axes) == [{LR: a, BATCH: b} for a in (1e-6, 3e-6) for b in (128, 256, 512)]


def test_run_names_are_numbered_in_grid_order_and_sort_in_it():
    assert grid.run_names("lr", 3) == ["lr-1", "lr-2", "lr-3"]
    names = grid.run_names("lr", 12)
    assert names[0] == "lr-01" and names[-1] == "lr-12" and sorted(names) == names
    assert len(grid.run_names("s" * 60, 9)[0]) == 62
    with pytest.raises(RlgenError, match="longer than 60 characters"):
        grid.run_names("s" * 61, 12)


@pytest.mark.parametrize("option, values", [
    ('trainer.project_name=["a,b", c]', ["a,b", "c"]),        # a value holding a comma: a flow list
    ("trainer.logger=[[console], [console, mlflow]]", [["console"], ["console", "mlflow"]]),
    ("trainer.project_name=a, b", ["a", "b"]),              # spaces after commas are YAML's
    ("trainer.val_before_train=true,false", [True, False]),
    (f"{LR}=[1e-6]", [1e-6]),
])
def test_values_are_yaml_split_at_commas_or_one_flow_list(option, values):
    assert list(grid.parse((option,)).values()) == [values]


@pytest.mark.parametrize("options, expected", [
    ((f"{LR}=1e-6,,3e-6",), "an empty value"),
    ((f"{LR}=[]",), "no values"),
    ((f"{LR}=1e-6,1e-06",), "1e-06 is given twice"),
    ((f"{LR}=1e-6", f"{LR}=3e-6"), f"--grid {LR} is given twice"),
    ((f"{LR}=[1e-6",), "is not a YAML value"),
    ((LR,), "expected KEY=V1,V2"),
    (("Not-a-key=1,2",), "expected KEY=VALUE with a dotted verl key"),
])
def test_a_malformed_grid_is_refused(options, expected):
    with pytest.raises(RlgenError, match=expected.replace("[", r"\[")):
        grid.parse(options)


# ---- The command -------------------------------------------------------------------------------

def test_a_sweep_is_one_commit_on_one_branch_with_one_labelled_run_per_point(repo):
    main = git(repo, "rev-parse", "HEAD").strip()
    out = sweep(repo, "lr", "--grid", f"{LR}=1e-6,3e-6", "--grid", f"{BATCH}=128,256",
                "--set", "trainer.total_epochs=2")
    names = ["lr-1", "lr-2", "lr-3", "lr-4"]
    assert git(repo, "branch", "--show-current").strip() == "run/sweep-lr" == out["branch"]
    assert git(repo, "rev-parse", "HEAD~1").strip() == main and out["start"] == "main"
    assert out["commit"] == git(repo, "rev-parse", "HEAD").strip() and out["new_branch"] is True
    assert git(repo, "status", "--porcelain") == "" and index(repo) == ["baseline", *names]
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split()) == sorted(
        [*map(link, names), *(f"runs/{n}/{f}" for n in names for f in ("kustomization.yaml", "run.yaml"))])
    assert out["files"]["changed"] == [] and len(out["files"]["added"]) == 12
    points = [(1e-6, 128), (1e-6, 256), (3e-6, 128), (3e-6, 256)]
    assert [(r["run"], r["point"]) for r in out["runs"]] == [(n, {LR: a, BATCH: b}) for n, (a, b) in zip(names, points)]
    message = git(repo, "log", "-1", "--format=%B")
    for run, (lr, batch) in zip(out["runs"], points):
        name = run["run"]
        assert run["keys"] == {"trainer.total_epochs": 2, LR: lr, BATCH: batch}
        assert run["rayjob"] == pinned(repo, name)
        objects = build(repo / "runs" / name)
        rayjob = next(o for o in objects if o["kind"] == "RayJob")
        assert rayjob["metadata"]["name"] == run["rayjob"]
        assert rayjob["metadata"]["labels"]["rlgen.io/sweep"] == "lr"
        assert "rlgen.io/sweep" not in json.dumps(rayjob["spec"])  # its pods are what run new makes
        config = SAFE.load(next(o for o in objects if o["kind"] == "ConfigMap")["data"]["run.yaml"])
        assert config["actor_rollout_ref"]["actor"]["optim"]["lr"] == lr and config["data"]["train_batch_size"] == batch
        assert config["trainer"]["experiment_name"] == name
        # A reader of the commit or of the run's file sees which point a run is.
        point = f"{LR}={json.dumps(lr)}, {BATCH}={batch}"
        assert f"{name}  {run['rayjob']}  {point}" in message
        head = (repo / "runs" / name / "run.yaml").read_text().split("hydra:")[0]
        assert "sweep 'lr'" in head and f"{LR}={json.dumps(lr)}" in head and f"{BATCH}={batch}" in head
    assert len({r["rayjob"] for r in out["runs"]}) == 4
    assert validate(repo) == (0, [])


def test_every_run_of_a_sweep_composes_with_the_pinned_verl(repo, tmp_path):
    ok(rlgen_in(repo, "run", "sweep", "log", "--no-branch", "--grid", "trainer.logger=[[console], [console, mlflow]]",
                "--grid", 'trainer.project_name=["team,a", b]'))
    assert git(repo, "branch", "--show-current").strip() == "main"
    seen = []
    for run in ("log-1", "log-2", "log-3", "log-4"):
        configs = tmp_path / run
        configs.mkdir()
        cfg = compose_run(*mounted_configs(repo, run, configs))
        seen.append((list(cfg.trainer.logger), cfg.trainer.project_name))
        assert cfg.trainer.experiment_name == run
    assert seen == [(["console"], "team,a"), (["console"], "b"), (["console", "mlflow"], "team,a"),
                    (["console", "mlflow"], "b")]
    assert validate(repo) == (0, [])


def test_a_dry_run_lists_what_it_would_make_and_changes_nothing(repo):
    before = state(repo)
    args = ("lr", "--grid", f"{LR}=1e-6,3e-6", "--set", "trainer.total_epochs=2")
    table = ok(rlgen_in(repo, "run", "sweep", *args, "--dry-run", "-o", "table"))
    assert table.startswith("Dry run: nothing written. Would commit on a new branch run/sweep-lr")
    assert "lr-1  lr-1-" in table and "lr-2  lr-2-" in table and f"{LR}=1e-06" in table
    assert "runs/lr-2/run.yaml" in table
    dry = sweep(repo, *args, "--dry-run")
    assert dry["dry_run"] is True and dry["commit"] is None and dry["branch"] == "run/sweep-lr"
    assert state(repo) == before and not (repo / "runs" / "lr-1").exists()
    real = sweep(repo, *args)
    assert real["runs"] == dry["runs"] and real["files"] == dry["files"]


def test_a_grid_over_the_limit_is_refused_before_anything_is_opened(repo):
    before = state(repo)
    big = ("big", "--grid", f"{LR}=" + ",".join(f"{i}e-6" for i in range(1, 6)), "--grid", f"{BATCH}=128,256,512,1024")
    line = one_error_line(rlgen_in(repo, "run", "sweep", *big))
    assert "the grid makes 20 runs, more than --max-runs 16" in line and "--max-runs 20" in line
    small = ("two", "--grid", f"{LR}=1e-6,2e-6,3e-6")
    assert "makes 3 runs, more than --max-runs 2" in one_error_line(
        rlgen_in(repo, "run", "sweep", *small, "--max-runs", "2"))
    assert state(repo) == before
    ok(rlgen_in(repo, "run", "sweep", *small, "--max-runs", "3", "--no-branch"))
    assert index(repo) == ["baseline", "two-1", "two-2", "two-3"]


@pytest.mark.parametrize("args, expected", [
    (["s", "--grid", f"{LR}=1e-6,fast"], f"{LR}: expects a number"),
    (["s", "--grid", f"{LR}r=1e-6,2e-6"], f"(closest: '{LR}')"),
    # verl's batch rules, per run as for rlgen run new: one bad point refuses the sweep.
    (["s", "--grid", "trainer.n_gpus_per_node=8,3"], "run s-2: "),
    (["s", "--grid", f"{LR}=1e-6,2e-6", "--set", f"{LR}=3e-6"], f"{LR} is given by both --grid and --set"),
    (["s", "--grid", "trainer.experiment_name=a,b"], "experiment names and checkpoints are per run"),
    (["S", "--grid", f"{LR}=1e-6,2e-6"], "not a DNS-1035 label"),
    (["s" * 62, "--grid", f"{LR}=1e-6,2e-6"], "longer than 61 characters"),
    (["baseline", "--grid", f"{LR}=1e-6", "--from", "nope"], "no run 'nope'"),
])
def test_bad_input_is_one_line_and_changes_nothing(repo, args, expected):
    before = state(repo)
    assert expected in one_error_line(rlgen_in(repo, "run", "sweep", *args))
    assert state(repo) == before


def test_a_sweep_of_an_existing_name_or_branch_is_refused(repo):
    ok(rlgen_in(repo, "run", "sweep", "lr", "--no-branch", "--grid", f"{LR}=1e-6,2e-6"))
    before = state(repo)
    # More points would give other run names; the sweep's name is what is taken.
    line = one_error_line(rlgen_in(repo, "run", "sweep", "lr", "--no-branch", "--grid", f"{LR}=" + ",".join(
        f"{i}e-6" for i in range(1, 11))))
    assert "sweep 'lr' already exists (runs: lr-1, lr-2)" in line and "rlgen run rm --sweep lr" in line
    git(repo, "branch", "run/sweep-other")
    before = state(repo)
    assert "branch run/sweep-other already exists" in one_error_line(
        rlgen_in(repo, "run", "sweep", "other", "--grid", f"{LR}=1e-6"))
    assert state(repo) == before


def test_run_list_groups_a_sweeps_runs_and_keeps_them_after_run_set(repo):
    ok(rlgen_in(repo, "run", "new", "zz-solo", "--no-branch", "--set", f"{LR}=5e-6"))
    ok(rlgen_in(repo, "run", "sweep", "a-lr", "--no-branch", "--grid", f"{LR}=1e-6,2e-6"))
    ok(rlgen_in(repo, "run", "set", "a-lr-2", "trainer.total_epochs=3"))
    listed = json.loads(ok(rlgen_in(repo, "run", "list", "-o", "json")))
    assert [(r["run"], r["sweep"]) for r in listed] == [
        ("baseline", None), ("zz-solo", None), ("a-lr-1", "a-lr"), ("a-lr-2", "a-lr")]
    lines = ok(rlgen_in(repo, "run", "list", "-o", "table")).splitlines()
    assert lines[0].split() == ["RUN", "SWEEP", "RAYJOB", "SIZE", "CKPT/SAVE", "CHANGED", "KEYS"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["baseline", "-"], ["zz-solo", "-"], ["a-lr-1", "a-lr"], ["a-lr-2", "a-lr"]]
    assert lines[4].split(maxsplit=6)[6] == f"{LR}=2e-06, trainer.total_epochs=3"
    assert validate(repo) == (0, [])


def test_run_rm_sweep_removes_every_run_of_the_sweep_in_one_commit(repo):
    made = sweep(repo, "lr", "--no-branch", "--grid", f"{LR}=1e-6,2e-6,3e-6")
    ok(rlgen_in(repo, "run", "new", "other", "--no-branch"))
    main = git(repo, "rev-parse", "HEAD").strip()
    out = json.loads(ok(rlgen_in(repo, "run", "rm", "--sweep", "lr", "-o", "json")))
    assert out["branch"] == "run/rm-sweep-lr" == git(repo, "branch", "--show-current").strip()
    assert git(repo, "rev-parse", "HEAD~1").strip() == main and out["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert out["runs"] == [{"run": r["run"], "rayjob": r["rayjob"]} for r in made["runs"]]
    assert index(repo) == ["baseline", "other"] and not any((repo / "runs" / f"lr-{i}").exists() for i in (1, 2, 3))
    assert sorted(out["files"]["removed"]) == sorted(git(repo, "show", "--name-only", "--format=", "HEAD").split())
    assert out["files"]["changed"] == []
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("Sweep lr: remove its 3 runs") and all(r["rayjob"] in message for r in made["runs"])
    rayjobs = {o["metadata"]["name"] for o in build(repo / "overlays/production/runs") if o["kind"] == "RayJob"}
    assert rayjobs == {pinned(repo, "baseline"), pinned(repo, "other")}
    assert validate(repo) == (0, [])


def test_run_rm_sweep_refuses_what_it_cannot_remove(repo):
    ok(rlgen_in(repo, "run", "sweep", "lr", "--grid", f"{LR}=1e-6,2e-6"))
    before = state(repo)
    # On run/sweep-lr, not yet merged: the synced branch a new branch starts from has no such sweep.
    line = one_error_line(rlgen_in(repo, "run", "rm", "--sweep", "lr"))
    assert "no sweep 'lr' on main" in line and "--from-head" in line
    assert "no sweep 'nope' (sweeps: lr)" in one_error_line(rlgen_in(repo, "run", "rm", "--sweep", "nope"))
    assert "one of them" in one_error_line(rlgen_in(repo, "run", "rm", "lr-1", "--sweep", "lr"))
    assert "one of them" in one_error_line(rlgen_in(repo, "run", "rm"))
    dry = ok(rlgen_in(repo, "run", "rm", "--sweep", "lr", "--from-head", "--dry-run", "-o", "table"))
    assert "Would commit on a new branch run/rm-sweep-lr" in dry and "runs/lr-2/run.yaml" in dry
    assert state(repo) == before
    ok(rlgen_in(repo, "run", "rm", "--sweep", "lr", "--from-head"))
    assert index(repo) == ["baseline"]


def test_an_update_that_renames_a_sweeps_runs_keeps_them_in_the_sweep(repo):
    ok(rlgen_in(repo, "run", "sweep", "lr", "--no-branch", "--grid", f"{LR}=1e-6,2e-6"))
    before = {run: ((repo / "runs" / run / "kustomization.yaml").read_text(), pinned(repo, run))
              for run in ("lr-1", "lr-2")}
    ok(rlgen_in(repo, "update", "--set", "vllm.gpu_memory_utilization=0.6", "--no-branch"))
    for run, (text, old) in before.items():
        assert pinned(repo, run) != old
        assert (repo / "runs" / run / "kustomization.yaml").read_text() == text.replace(old, pinned(repo, run))
    listed = json.loads(ok(rlgen_in(repo, "run", "list", "-o", "json")))
    assert [r["sweep"] for r in listed] == [None, "lr", "lr"]
    assert validate(repo) == (0, [])
