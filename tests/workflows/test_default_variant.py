"""The six workflows of the default repository (Flux, AccessKey storage, manual Secrets), each run
by nektos/act on this machine (support/act.py): on the repository as generated, and on one
broken as a user would break it, with what the job says in its summary."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from support.act import THIS_RLGEN, TOKEN
from support.repos import commit_all, git, ok, rlgen_in

from rlgen import __version__

WORKFLOWS = ".github/workflows"


@pytest.fixture(scope="module")
def default(generate, runner, tmp_path_factory):
    """The default repository, published to the runner's Git host as my-org/rl-default."""
    repo = shutil.copytree(generate(*THIS_RLGEN), tmp_path_factory.mktemp("default") / "repo", symlinks=True)
    return repo, runner.publish(repo, "rl-default")


def branch(repo, name: str, change) -> None:
    """A branch ``name`` off main holding ``change(repo)`` as one commit, then back on main."""
    git(repo, "switch", "-q", "-c", name)
    change(repo)
    commit_all(repo, name)
    git(repo, "switch", "-q", "main")


def test_validate_passes_on_the_repository_as_generated(default, runner):
    repo, full = default
    job = runner.run(repo / WORKFLOWS / "validate.yaml", "push", full,
                     {"ref": "refs/heads/main", "after": git(repo, "rev-parse", "HEAD").strip(), "deleted": False},
                     served=runner.served)
    assert job.passed, job.log[-4000:]
    # The pinned kustomize and kubeconform came from github.com's release path, checksums checked.
    assert any("kustomize_v5.7.1_linux_amd64.tar.gz" in p for p in runner.releases.served)
    assert "kustomize.tgz: OK" in job.log and "kubeconform.tgz: OK" in job.log
    # The fix step is for failures only.
    assert "Offer the fix of hand-edited runs as a commit" not in job.step_results()


def test_validate_fails_on_a_hand_edited_run_and_offers_the_fix_as_a_patch(default, runner, tmp_path):
    repo, full = default
    work = shutil.copytree(repo, tmp_path / "repo", symlinks=True)
    run_yaml = (work / "runs" / "baseline" / "run.yaml").relative_to(work)

    def edit(r):
        # A change of the run's config by hand, its RayJob's name kept: KubeRay would never run it.
        path = r / run_yaml
        path.write_text(path.read_text().replace("  resume_mode: auto\n", "  resume_mode: auto\n  total_epochs: 7\n"))

    branch(work, "hand-edit", edit)
    full = runner.publish(work, "rl-hand-edit")
    event = runner.pull_request(work, full, "main", "hand-edit")
    job = runner.run(work / WORKFLOWS / "validate.yaml", "pull_request", full, event, served=runner.served)
    assert job.returncode != 0 and "Job failed" in job.log, job.log[-4000:]
    assert job.step_results().get("rlgen validate") == "failure", job.step_results()
    assert "rlgen can name the RayJobs of 1 hand-edited run(s)" in job.summary, job.summary
    patch = job.artifacts / "rlgen-fix" / "rlgen-fix.patch"
    assert patch.is_file() and "runs/baseline/kustomization.yaml" in patch.read_text(), job.log[-3000:]


def test_diff_comments_once_and_updates_its_comment(default, runner, tmp_path):
    repo, _ = default
    work = shutil.copytree(repo, tmp_path / "repo", symlinks=True)
    git(work, "switch", "-q", "-c", "lr")
    ok(rlgen_in(work, "run", "new", "lr-3e-6", "--set", "actor_rollout_ref.actor.optim.lr=3e-6", "--no-branch"))
    git(work, "switch", "-q", "main")
    full = runner.publish(work, "rl-diff")
    event = runner.pull_request(work, full, "main", "lr")
    for _ in range(2):
        job = runner.run(work / WORKFLOWS / "diff.yaml", "pull_request", full, event, served=runner.served)
        assert job.passed, job.log[-4000:]
    comments = runner.api.repos[full].comments[1]
    # One comment, found again by its marker and updated in place by the second run.
    assert len(comments) == 1 and comments[0]["body"].startswith("<!-- rlgen-diff -->\n"), comments
    assert "lr-3e-6" in comments[0]["body"] and "lr-3e-6" in job.summary
    assert ("PATCH", f"/repos/{full}/issues/comments/{comments[0]['id']}") in runner.api.calls


def test_rlgen_update_without_its_token_says_so_and_passes(default, runner):
    repo, full = default
    job = runner.run(repo / WORKFLOWS / "rlgen-update.yaml", "schedule", full, served=runner.served)
    assert job.passed, job.log[-4000:]
    assert "Secret RLGEN_UPDATE_TOKEN is not set, so nothing was checked" in job.summary, job.summary


def test_rlgen_update_on_a_repository_up_to_date_opens_nothing(default, runner):
    repo, full = default
    job = runner.run(repo / WORKFLOWS / "rlgen-update.yaml", "schedule", full,
                     secrets={"RLGEN_UPDATE_TOKEN": TOKEN}, served=runner.served)
    assert job.passed, job.log[-4000:]
    assert f"Up to date: rlgen {__version__} renders this repository as its last render." in job.summary, job.summary
    assert not runner.api.repos.get(full) or not runner.api.repos[full].pulls


def test_rlgen_update_behind_pushes_its_branch_and_opens_one_pull_request(default, runner, tmp_path):
    repo, _ = default
    work = shutil.copytree(repo, tmp_path / "repo", symlinks=True)
    answers = work / "rlgen.yaml"
    # Behind its answers: rlgen.yaml edited by hand, as rlgen update --check reports it.
    answers.write_text(answers.read_text().replace("\noptions:\n", "\noptions:\n  flux:\n    interval: 5m\n", 1))
    commit_all(work, "flux every 5 minutes")
    full = runner.publish(work, "rl-behind")
    for attempt in range(2):
        job = runner.run(work / WORKFLOWS / "rlgen-update.yaml", "schedule", full,
                         secrets={"RLGEN_UPDATE_TOKEN": TOKEN}, served=runner.served)
        assert job.passed, job.log[-4000:]
        assert "Behind:" in job.summary, job.summary
    pulls = runner.api.repos[full].pulls
    # The second week refreshes the pull request the first opened.
    assert [(p["number"], p["head"]["ref"], p["base"]["ref"], p["state"]) for p in pulls] == [
        (1, "rlgen/update", "main", "open")], pulls
    assert pulls[0]["body"].startswith("Merge with a merge commit, not squash")
    assert "Refreshed pull request #1 from rlgen/update." in job.summary
    pushed = subprocess.run(["git", "ls-remote", runner.git_server.url(full), "refs/heads/rlgen/update"],
                            capture_output=True, text=True, check=True).stdout
    assert pushed.strip(), "the update branch was not pushed"


def test_cluster_status_is_skipped_until_turned_on_and_names_an_unreachable_cluster(default, runner, tmp_path):
    repo, full = default
    head = {"ref": "refs/heads/main", "after": git(repo, "rev-parse", "HEAD").strip(), "deleted": False}
    off = runner.run(repo / WORKFLOWS / "cluster-status.yaml", "push", full, head)
    assert off.returncode == 0 and "Wait for the staging cluster" not in off.step_results(), off.log[-3000:]
    kubeconfig = ("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                  "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
                  "current-context: c\n")
    on = runner.run(repo / WORKFLOWS / "cluster-status.yaml", "push", full, head,
                    secrets={"STAGING_KUBECONFIG": kubeconfig},
                    variables={"RLGEN_STAGING_STATUS": "true"})
    assert on.returncode != 0 and on.step_results().get("Wait for the staging cluster") == "failure", on.log[-3000:]
    assert "127.0.0.1:9" in on.log
    # The kubeconfig is removed whatever the outcome.
    assert on.step_results().get("Remove the kubeconfig") == "success"
