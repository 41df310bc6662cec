"""rlgen update and rlgen cluster add/rm: -o json says what the commit holds, --dry-run says
what it would hold and leaves the repository exactly as it was, and any DNS-1123 environment."""
from __future__ import annotations

import fcntl
import json
import os

import pytest
from ruamel.yaml import YAML
from support.repos import build, commit_all, git, link, ok, one_error_line, pinned, repo_files, rlgen_in
from support.updates import branch, head, recorded_render, status, validate


def everything(repo) -> tuple:
    """What a dry run must leave alone: the file tree, every ref, HEAD, the index and work tree,
    and no update state in the git directory."""
    git_dir = repo / ".git"
    leftovers = sorted(name for name in ("MERGE_HEAD", "MERGE_MSG", "rlgen-update.json") if (git_dir / name).exists())
    return (repo_files(repo), git(repo, "for-each-ref"), git(repo, "symbolic-ref", "HEAD"), head(repo),
            status(repo), git(repo, "ls-files", "--stage"), leftovers)


def lock_is_free(repo) -> bool:
    path = repo / ".git" / "rlgen.lock"
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def committed(repo, commit: str) -> dict[str, list[str]]:
    found = {"added": [], "changed": [], "removed": []}
    for line in git(repo, "diff", "--name-status", "--no-renames", f"{commit}~1", commit).splitlines():
        state, path = line.split("\t")
        found[{"A": "added", "M": "changed", "D": "removed"}[state[0]]].append(path)
    return {k: sorted(v) for k, v in found.items()}


def test_update_json_is_what_the_commit_holds(repo):
    result = rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "json")
    out = json.loads(ok(result))
    assert result.stderr == ""
    assert out["up_to_date"] is False and out["dry_run"] is False and out["conflicts"] == []
    assert out["branch"] == branch(repo) == f"rlgen/update-{recorded_render(repo)[:7]}" and out["new_branch"] is True
    assert out["commit"] == head(repo) and out["render"] == recorded_render(repo)
    assert out["files"] == committed(repo, head(repo))
    assert "clusters/production/platform.yaml" in out["files"]["changed"]

    again = json.loads(ok(rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "json")))
    assert again["up_to_date"] is True and again["commit"] is None and again["files"]["changed"] == []


def test_update_dry_run_changes_nothing_and_names_what_the_update_then_commits(repo):
    before = everything(repo)
    dry = json.loads(ok(rlgen_in(repo, "update", "--set", "flux.interval=15m", "--dry-run", "-o", "json")))
    assert everything(repo) == before and lock_is_free(repo)
    assert dry["dry_run"] is True and dry["commit"] is None and dry["new_branch"] is True
    assert dry["branch"].startswith("rlgen/update-") and "clusters/production/platform.yaml" in dry["files"]["changed"]

    table = ok(rlgen_in(repo, "update", "--set", "flux.interval=15m", "--dry-run", "-o", "table"))
    assert table.startswith("Dry run: nothing written. Would commit on a new branch rlgen/update-")
    assert "    M clusters/production/platform.yaml" in table.splitlines()
    assert everything(repo) == before

    # The branch is named for the render commit, which the real update makes anew (its own time).
    real = json.loads(ok(rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "json")))
    assert real["files"] == dry["files"] and real["branch"].startswith("rlgen/update-")


def test_update_dry_run_of_a_conflict_exits_1_and_leaves_no_merge(repo):
    platform = repo / "clusters/production/platform.yaml"
    platform.write_text(platform.read_text().replace("interval: 10m", "interval: 5m", 1))
    commit_all(repo, "Sync the platform faster")
    before = everything(repo)
    result = rlgen_in(repo, "update", "--set", "flux.interval=15m", "--dry-run", "-o", "json")
    assert result.returncode == 1 and result.stderr == ""
    assert json.loads(result.stdout)["conflicts"] == ["clusters/production/platform.yaml"]
    assert everything(repo) == before and lock_is_free(repo)

    real = rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "json")
    assert real.returncode == 1 and real.stderr == ""
    assert json.loads(real.stdout)["conflicts"] == ["clusters/production/platform.yaml"]
    assert "UU clusters/production/platform.yaml" in status(repo)


def test_cluster_add_dry_run_then_json(repo):
    before = everything(repo)
    dry = json.loads(ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "--dry-run", "-o", "json")))
    assert everything(repo) == before and lock_is_free(repo)
    assert dry["cluster"] == "staging" and dry["environment"] == "staging" and dry["dry_run"] is True
    assert "clusters/staging/platform.yaml" in dry["files"]["added"] and "rlgen.yaml" in dry["files"]["changed"]

    out = json.loads(ok(rlgen_in(repo, "cluster", "add", "staging", "--env", "staging", "-o", "json")))
    assert out["commit"] == head(repo) and out["branch"] == branch(repo)
    assert out["files"] == dry["files"] == committed(repo, head(repo))

    gone = json.loads(ok(rlgen_in(repo, "cluster", "rm", "staging", "--no-branch", "--dry-run", "-o", "json")))
    assert "clusters/staging/platform.yaml" in gone["files"]["removed"] and (repo / "clusters/staging").is_dir()


def test_a_cluster_of_any_dns_label_environment_gets_its_own_overlay(repo):
    ok(rlgen_in(repo, "cluster", "add", "canary-1", "--env", "canary", "--no-branch"))
    assert status(repo) == ""
    overlay = repo / "overlays/canary/platform/kustomization.yaml"
    assert YAML(typ="safe").load(overlay.read_text())["resources"] == ["../../../base/platform"]
    paths = set()
    for doc in YAML(typ="safe").load_all("\n---\n".join(p.read_text() for p in (repo / "clusters/canary-1").glob("*.yaml"))):
        if doc:
            paths.add((doc.get("spec") or {}).get("path", "").removeprefix("./"))
    assert {"overlays/canary/platform", "overlays/canary/runs"} <= paths
    assert "clusters:\n  canary-1: canary" in (repo / "rlgen.yaml").read_text()
    assert "| `canary-1` | `clusters/canary-1/` | `overlays/canary/platform`" in (repo / "README.md").read_text()
    ok(validate(repo))
    added = head(repo)
    # The canary overlay renders the platform the production one does.
    kinds = sorted(o["kind"] for o in build(repo / "overlays/canary/platform"))
    assert kinds == sorted(o["kind"] for o in build(repo / "overlays/production/platform"))
    # A run listed in the canary index reaches the canary cluster alone.
    ok(rlgen_in(repo, "run", "new", "try-it", "--no-branch"))
    (repo / "overlays/canary/runs/try-it").mkdir()
    (repo / link("try-it", "canary")).write_text((repo / link("try-it")).read_text())
    assert pinned(repo, "try-it") in {o["metadata"]["name"] for o in build(repo / "overlays/canary/runs")
                                      if o["kind"] == "RayJob"}
    git(repo, "reset", "-q", "--hard", added)
    # Removing the last cluster of the environment removes its overlay with it.
    ok(rlgen_in(repo, "cluster", "rm", "canary-1", "--no-branch"))
    assert not (repo / "overlays/canary/platform").exists() and not (repo / "clusters/canary-1").exists()


@pytest.mark.parametrize("env", ["Bad_Env", "-canary", "x" * 64])
def test_an_environment_that_is_no_dns_label_is_refused_in_one_line(repo, env):
    before = everything(repo)
    line = one_error_line(rlgen_in(repo, "cluster", "add", "c2", "--env", env))
    assert "--env" in line and "DNS-1123" in line or "longer than 63" in line
    assert everything(repo) == before


def test_update_names_the_secrets_a_new_namespace_needs_and_only_those(repo):
    moved = rlgen_in(repo, "update", "--set", "rlgen.namespace=rl-moved", "-o", "table")
    # The hand-made Secrets stay in the old namespace; the optional hf-token is not asked for.
    assert ("Secrets to create before the merge syncs: rl-moved/oss-credentials, rl-moved/sandbox-api-key "
            "(new to this repository") in ok(moved)
    again = json.loads(ok(rlgen_in(repo, "update", "--set", "flux.interval=15m", "-o", "json")))
    assert again["secrets"] == []
