"""rlgen update on real generated repositories, real git: the user's edits survive a plugin
swap, conflicts stop with markers and --abort undoes them, deleted files stay deleted."""
from __future__ import annotations

import re

import pytest
from support.repos import commit_all, git, link, listed, ok, one_error_line, pinned, repo_files, rlgen_in
from support.updates import branch, copy_of, head, names_in, recorded_render, status, validate

SWAP = ("update", "--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com")


def _label_namespace(repo):
    path = repo / "base" / "platform" / "namespace.yaml"
    path.write_text(path.read_text().replace("  name: rl-training\n", "  name: rl-training\n  labels:\n    team: ml\n"))
    commit_all(repo, "Label the namespace")


def _runs(repo):
    """What the team wrote of its runs: each run.yaml and the index (RayJob names follow the base)."""
    return {p: d for p, d in repo_files(repo).items() if p.startswith("runs/") and not p.endswith("/kustomization.yaml")
            or p.startswith("overlays/production/runs/")}


@pytest.mark.parametrize("sync", ["flux", "argo"])
def test_sandbox_swap_keeps_the_edit_and_the_runs(generate, tmp_path, sync):
    repo = copy_of(generate, tmp_path, "--plugin", sync)
    _label_namespace(repo)
    for run, lr in (("lr-3e-6", "3e-6"), ("lr-1e-6", "1e-6")):
        ok(rlgen_in(repo, "run", "new", run, "--no-branch", "--set", f"actor_rollout_ref.actor.optim.lr={lr}"))
    runs, before = _runs(repo), head(repo)

    out = ok(rlgen_in(repo, *SWAP))

    assert branch(repo).startswith("rlgen/update-") and branch(repo) in out
    assert status(repo) == ""
    assert "team: ml" in (repo / "base/platform/namespace.yaml").read_text()
    assert not (repo / "components/opensource-sandbox").exists()
    assert (repo / "components/marketplace-sandbox/platform/sandboxset.yaml").is_file()
    stages = names_in(repo / "clusters/production/infrastructure.yaml")
    kind = "Kustomization" if sync == "flux" else "Application"
    assert {f"{kind}/sandbox-operator", f"{kind}/sandbox-manager"}.isdisjoint(stages)
    assert f"{kind}/infrastructure" in stages
    assert _runs(repo) == runs
    # Each run's pinned RayJob name is the one rlgen run gives it on the new base.
    assert "is unchanged" in ok(rlgen_in(repo, "run", "set", "lr-1e-6", "actor_rollout_ref.actor.optim.lr=1e-6", "-o", "table"))
    assert status(repo) == ""
    assert "marketplace-sandbox" in (repo / "rlgen.yaml").read_text()
    ok(validate(repo))
    # A merge of the user's branch and the render, which rlgen.yaml records for the next update.
    parents = git(repo, "rev-list", "--parents", "-n1", "HEAD").split()[1:]
    assert parents == [before, recorded_render(repo)]
    assert git(repo, "rev-parse", "main").strip() == before


def test_a_conflicting_edit_stops_with_markers_and_abort_restores_everything(repo):
    platform = repo / "clusters/production/platform.yaml"
    platform.write_text(platform.read_text().replace("interval: 10m", "interval: 5m", 1))
    commit_all(repo, "Sync the platform faster")
    files, before = repo_files(repo), head(repo)

    result = rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "table")

    assert result.returncode == 1
    assert result.stdout.splitlines() == ["CONFLICT clusters/production/platform.yaml"]
    text = platform.read_text()
    assert "<<<<<<< rlgen/your-branch\n  interval: 5m\n=======\n  interval: 15m\n>>>>>>> rlgen/new-render" in text
    assert head(repo) == before and git(repo, "rev-parse", "main").strip() == before
    assert "UU clusters/production/platform.yaml" in status(repo)
    checked = validate(repo)
    assert checked.returncode == 1 and "conflict markers" in checked.stdout

    out = ok(rlgen_in(repo, "update", "--abort", "-o", "table"))

    assert "main" in out
    assert repo_files(repo) == files
    assert head(repo) == before and branch(repo) == "main" and status(repo) == ""
    assert git(repo, "branch", "--list", "rlgen/*") == ""
    assert "nothing to abort" in one_error_line(rlgen_in(repo, "update", "--abort"))


def test_a_resolved_conflict_is_committed_with_git_and_the_next_update_starts_from_it(repo):
    platform = repo / "clusters/production/platform.yaml"
    platform.write_text(platform.read_text().replace("interval: 10m", "interval: 5m", 1))
    commit_all(repo, "Sync the platform faster")
    assert rlgen_in(repo, "update", "--set", "flux.interval=15m").returncode == 1
    text = platform.read_text()
    platform.write_text(text[:text.index("<<<<<<<")] + "  interval: 5m\n" + text[text.index(">>>>>>>"):].split("\n", 1)[1])
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--no-edit")
    assert len(git(repo, "rev-list", "--parents", "-n1", "HEAD").split()) == 3

    ok(rlgen_in(repo, "update", "--check"))
    ok(rlgen_in(repo, "update", "--no-branch", "--set", "flux.platform_timeout=90m"))

    assert "interval: 5m" in platform.read_text() and "timeout: 90m" in platform.read_text()
    assert status(repo) == ""


def test_a_deleted_generated_file_stays_deleted(repo):
    git(repo, "rm", "-q", "images/training/Dockerfile")
    commit_all(repo, "We build the training image elsewhere")

    ok(rlgen_in(repo, "update", "--set", "flux.interval=15m"))

    assert not (repo / "images/training/Dockerfile").exists()
    assert "interval: 15m" in (repo / "clusters/production/runs.yaml").read_text()
    assert status(repo) == ""


def test_nothing_to_update_changes_nothing(repo):
    before = head(repo)
    assert "Up to date" in ok(rlgen_in(repo, "update", "-o", "table"))
    assert head(repo) == before and git(repo, "branch", "--list", "rlgen/*") == ""


def test_refuses_a_dirty_tree_and_unknown_options(repo):
    assert "did you mean" in one_error_line(rlgen_in(repo, "update", "--plugin", "marketplace-sandbx"))
    assert "no such option" in one_error_line(rlgen_in(repo, "update", "--unset", "flux.interval"))
    (repo / "README.md").write_text("changed\n")
    assert "uncommitted changes to README.md" in one_error_line(rlgen_in(repo, "update", "--set", "flux.interval=1m"))


def test_a_renamed_run_keeps_its_own_size(repo):
    """A run resized with ``rlgen run set`` keeps its worker count and GPUs through an update that
    renames it (found on the control plane: the renamed run asked for the base's size)."""
    ok(rlgen_in(repo, "run", "set", "baseline", "trainer.nnodes=2"))
    kustomization = (repo / "runs/baseline/kustomization.yaml").read_text()
    old = pinned(repo, "baseline")
    ok(rlgen_in(repo, "update", "--set", "vllm.gpu_memory_utilization=0.6", "--no-branch"))
    assert pinned(repo, "baseline") != old
    after = (repo / "runs/baseline/kustomization.yaml").read_text()
    assert after == kustomization.replace(old, pinned(repo, "baseline"))
    result = validate(repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is unchanged" in ok(rlgen_in(repo, "run", "set", "baseline", "trainer.nnodes=2", "-o", "table"))


def test_a_new_training_base_renames_the_runs_and_a_removed_run_stays_removed(repo):
    ok(rlgen_in(repo, "run", "new", "lr-3e-6", "--no-branch", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    ok(rlgen_in(repo, "run", "rm", "baseline", "--no-branch"))
    run_yaml = (repo / "runs/lr-3e-6/run.yaml").read_bytes()
    old = pinned(repo, "lr-3e-6")

    out = ok(rlgen_in(repo, "update", "--set", "vllm.gpu_memory_utilization=0.6", "-o", "table"))

    assert not (repo / "runs/baseline").exists()
    assert "baseline" not in listed(repo) and not (repo / link("baseline")).exists()
    new = pinned(repo, "lr-3e-6")
    assert new != old and f"Run lr-3e-6: RayJob {old} -> {new}" in out
    assert (repo / "runs/lr-3e-6/run.yaml").read_bytes() == run_yaml
    assert f"RayJob {old} -> {new}" in git(repo, "log", "-1", "--format=%B")
    assert status(repo) == ""
    # The name rlgen run gives the run from its own folder is the one the update pinned.
    assert "is unchanged" in ok(rlgen_in(repo, "run", "set", "lr-3e-6", "actor_rollout_ref.actor.optim.lr=3e-6", "-o", "table"))


def test_a_renamed_run_keeps_its_size_and_no_branch_points_at_the_diff_that_shows_it(repo):
    import json
    import re

    from support.repos import build, run_rlgen

    ok(rlgen_in(repo, "run", "new", "big", "--no-branch", "--set", "trainer.nnodes=2"))
    old = pinned(repo, "big")
    out = ok(rlgen_in(repo, "update", "--no-branch", "--set", "vllm.gpu_memory_utilization=0.6", "-o", "table"))
    assert pinned(repo, "big") != old
    rayjob = next(o for o in build(repo / "runs" / "big") if o["kind"] == "RayJob")
    assert rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 2  # still its own size
    result = run_rlgen("validate", str(repo), "-o", "json", "--offline")
    assert not [p for p in json.loads(result.stdout)["problems"] if "edited after" in p["message"]]
    review = re.search(r"review it with (rlgen diff [^.]+)\.", out)[1]
    assert "--base" in review
    assert "no differences" not in ok(rlgen_in(repo, *review.split()[1:]))


def test_a_repository_from_before_loses_the_overlay_no_cluster_syncs(repo):
    # As earlier rlgen versions generated it: a staging overlay in the first render, though only
    # production has a cluster.
    import shutil

    shutil.copytree(repo / "overlays/production", repo / "overlays/staging")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")

    ok(rlgen_in(repo, "update", "--no-branch"))

    assert not (repo / "overlays/staging").exists()
    assert status(repo) == ""
    ok(validate(repo))


def test_an_update_from_another_branch_than_the_synced_one_is_refused(repo):
    # Its pull request would carry the run branch's commits along with the update.
    ok(rlgen_in(repo, "run", "new", "lr-3e-6", "--set", "actor_rollout_ref.actor.optim.lr=3e-6"))
    assert git(repo, "branch", "--show-current").strip() == "run/lr-3e-6"
    before = git(repo, "rev-parse", "HEAD")
    for args in (("update", "--set", "vllm.gpu_memory_utilization=0.6"), ("cluster", "add", "s1", "--env", "staging")):
        line = one_error_line(rlgen_in(repo, *args))
        assert line == ("rlgen: error: on branch run/lr-3e-6: the update's branch would start here and carry its "
                        "commits; git switch main (the branch the cluster syncs) first, or pass --no-branch to "
                        "commit the update on run/lr-3e-6")
    assert git(repo, "rev-parse", "HEAD") == before and status(repo) == ""
    assert "rlgen/update-" not in git(repo, "branch", "--list")
    ok(rlgen_in(repo, "update", "--set", "vllm.gpu_memory_utilization=0.6", "--no-branch"))


def test_a_repository_from_before_gets_the_sandbox_manager_tag_of_its_build_script(repo):
    # As earlier rlgen versions generated it: the manager tagged mcp-136236a8 whatever its build
    # script said, the script naming that tag, images/build.sh not listing it.
    build_list = repo / "images/build.sh"
    (current,) = re.findall(r'"images/sandbox-manager (\S+)"', build_list.read_text())
    old = current.rpartition("-")[0]
    for path in ("infrastructure/upstream/openkruise-agents.yaml", "README.md"):
        (repo / path).write_text((repo / path).read_text().replace(current, old))
    build_list.write_text(build_list.read_text().replace(f'  "images/sandbox-manager {current}"\n', ""))
    script = repo / "images/sandbox-manager/build.sh"
    script.write_text(re.sub(r'(?m)^image=.*\n', "", script.read_text()).replace('"$image"', old))
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--amend", "--no-edit")

    out = ok(rlgen_in(repo, "update", "--no-branch", "--output", "table"))

    assert f"Images to build before the merge syncs: {current} " in out
    assert f'  "images/sandbox-manager {current}"\n' in build_list.read_text()
    upstream = (repo / "infrastructure/upstream/openkruise-agents.yaml").read_text()
    assert f"newTag: {current.rpartition(':')[2]}\n" in upstream and f"newTag: {old.rpartition(':')[2]}\n" not in upstream
    assert old not in script.read_text() and status(repo) == ""
    ok(validate(repo))
