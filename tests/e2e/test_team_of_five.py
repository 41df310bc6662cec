"""Five researchers on one repository: each clones it and opens run pull requests (a new run, a
changed run, a sweep, a removed run) from the same main; a reviewer merges them in a random order
with a plain ``git merge`` (no merge driver, as a Git host's merge button), pushes and lets Flux
sync each merge. No merge conflicts, and the RayJobs on the cluster are exactly the union of what
the pull requests asked for."""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from support.controlplane import wait_until
from support.flux import NAMESPACE, reconcile
from support.repos import ok, run_rlgen

pytestmark = pytest.mark.usefixtures("dump_on_failure")
RESEARCHERS = 5
#: The order the pull requests merge in is drawn from this seed: the same order on every run.
SEED = 51


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], check=check, capture_output=True, text=True)


def clone(url: str, folder: Path, name: str) -> Path:
    subprocess.run(["git", "clone", "--quiet", url, str(folder)], check=True, capture_output=True)
    git(folder, "config", "user.name", name)
    git(folder, "config", "user.email", f"{name}@rl-team.cn")
    return folder


def runs(repo: Path) -> dict[str, str]:
    """Each run of the checked-out branch and its RayJob, as ``rlgen run list`` says."""
    return {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}


def rayjobs(cp) -> set[str]:
    return {j["metadata"]["name"] for j in cp.objects("rayjobs", "-n", NAMESPACE)}


def rlgen(repo: Path, *args: str) -> dict:
    return json.loads(ok(run_rlgen(*args, "-o", "json", cwd=repo)))


def merge_all(cp, reviewer: Path, branches: list[str]) -> list[str]:
    """Each branch merged into main by a plain merge, pushed and synced: the conflicted ones."""
    conflicts = []
    for branch in branches:
        git(reviewer, "fetch", "--quiet", "origin")
        merged = git(reviewer, "merge", "--no-ff", "-m", f"Merge pull request {branch}", f"origin/{branch}", check=False)
        if merged.returncode != 0:
            conflicts.append(f"{branch}: {merged.stdout}{merged.stderr}")
            git(reviewer, "merge", "--abort", check=False)
            continue
        git(reviewer, "push", "--quiet", "origin", "main")
        reconcile(cp)
    return conflicts


def open_pull_requests(repo: Path, who: int) -> dict[str, dict]:
    """Researcher ``who``'s four run branches, all from main as it is now, each pushed:
    by branch, the runs it adds or changes (with their RayJobs) and the runs it removes."""
    made: dict[str, dict] = {}
    new = rlgen(repo, "run", "new", f"r{who}-new", "--set", f"actor_rollout_ref.actor.optim.lr={who}e-6")
    made[new["branch"]] = {"runs": {f"r{who}-new": new["rayjob"]}, "removed": []}
    git(repo, "switch", "--quiet", "main")
    # On the synced branch, run set makes a branch of its own.
    changed = rlgen(repo, "run", "set", f"r{who}-keep", f"trainer.total_epochs={who + 1}")
    made[changed["branch"]] = {"runs": {f"r{who}-keep": changed["rayjob"]}, "removed": []}
    git(repo, "switch", "--quiet", "main")
    sweep = rlgen(repo, "run", "sweep", f"s{who}", "--grid", "actor_rollout_ref.actor.optim.lr=1e-6,2e-6")
    made[sweep["branch"]] = {"runs": {r["run"]: r["rayjob"] for r in sweep["runs"]}, "removed": []}
    git(repo, "switch", "--quiet", "main")
    removed = rlgen(repo, "run", "rm", f"r{who}-old")
    made[removed["branch"]] = {"runs": {}, "removed": [f"r{who}-old"]}
    git(repo, "switch", "--quiet", "main")
    for branch in made:
        git(repo, "push", "--quiet", "origin", branch)
    return made


def test_five_researchers_pull_requests_merge_in_any_order_and_the_cluster_runs_their_union(
        control_plane, synced, tmp_path):
    cp, url = control_plane, synced["url"]
    reviewer = clone(url, tmp_path / "reviewer", "reviewer")
    initial = runs(reviewer)
    # Each researcher has a run to change and one to remove on main.
    git(reviewer, "switch", "--quiet", "-c", "seed")
    for who in range(1, RESEARCHERS + 1):
        for run in (f"r{who}-keep", f"r{who}-old"):
            ok(run_rlgen("run", "new", run, "--no-branch", cwd=reviewer))
    git(reviewer, "push", "--quiet", "origin", "seed")
    git(reviewer, "switch", "--quiet", "main")
    assert merge_all(cp, reviewer, ["seed"]) == []
    before = runs(reviewer)
    wait_until("the seeded runs' RayJobs", lambda: rayjobs(cp) == set(before.values()))

    opened: dict[str, dict] = {}
    for who in range(1, RESEARCHERS + 1):
        opened |= open_pull_requests(clone(url, tmp_path / f"researcher-{who}", f"researcher-{who}"), who)
    order = sorted(opened)
    random.Random(SEED).shuffle(order)
    try:
        conflicts = merge_all(cp, reviewer, order)
        print(f"{len(opened)} pull requests, {len(order) - len(conflicts)} merges, {len(conflicts)} conflicts "
              f"(order: {', '.join(order)})")
        assert conflicts == [], conflicts

        expected = dict(before)
        for branch in order:
            expected = {r: j for r, j in expected.items() if r not in opened[branch]["removed"]}
            expected |= opened[branch]["runs"]
        assert runs(reviewer) == expected
        validate = run_rlgen("validate", "--offline", "-o", "json", cwd=reviewer)
        assert validate.returncode == 0, validate.stdout + validate.stderr
        wait_until("the RayJobs of every merged pull request, and no other", lambda: rayjobs(cp) == set(expected.values()))
    finally:
        # The cluster as the next modules expect it: only the runs main had before.
        git(reviewer, "merge", "--abort", check=False)
        git(reviewer, "switch", "--quiet", "-c", "team-cleanup")
        for run in sorted(set(runs(reviewer)) - set(initial)):
            ok(run_rlgen("run", "rm", run, "--no-branch", cwd=reviewer))
        git(reviewer, "push", "--quiet", "origin", "team-cleanup")
        git(reviewer, "switch", "--quiet", "main")
        merge_all(cp, reviewer, ["team-cleanup"])
        wait_until("the team's RayJobs pruned", lambda: rayjobs(cp) == set(initial.values()))
        # The shared clone the next modules push from takes what the reviewer merged.
        git(synced["repo"], "pull", "--quiet", "--ff-only", "origin", "main")
