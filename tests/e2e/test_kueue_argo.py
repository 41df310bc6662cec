"""Kueue's admission under Argo CD: an Argo CD repository whose runs Kueue queues, on a control
plane of its own (Kueue and KubeRay, the pinned Argo CD installed as the README says). Once
Kueue has admitted a run and written into its RayJob, a sync of the runs Application leaves
what Kueue wrote and the admission as they were."""
from __future__ import annotations

import json
import subprocess

import pytest
from support import kueue
from support.argocd import describe, install_as_the_readme_says, refresh, sync_now, synced_at
from support.controlplane import wait_until
from support.flux import NAMESPACE, REGISTRY
from support.repos import INSTALL, POOL, ok, run_rlgen, storage_answers


@pytest.fixture
def dump_on_failure(kueue_argo_control_plane, request):
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(describe(kueue_argo_control_plane) + "\n" + kueue_argo_control_plane.logs(40))


pytestmark = pytest.mark.usefixtures("dump_on_failure")


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(kueue_argo_control_plane, git_server, create_readme_secrets, tmp_path_factory):
    cp = kueue_argo_control_plane
    url = git_server.create("team/rl-queued-argo.git")
    repo = tmp_path_factory.mktemp("kueue-argo") / "rl-queued-argo"
    ok(run_rlgen("new", str(repo), "--no-input", "--plugin", "argo", "--plugin", "kueue",
                 "--set", "kueue.gpu_quota=32", "--set", "kueue.teams=rl-team",
                 "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={url}", "--set", "rlgen.git_host=github", "--set", f"rlgen.install={INSTALL}",
                 *storage_answers(),
                 "--set", f"rlgen.upstream_mirror={git_server.base}"))
    git(repo, "remote", "add", "origin", url)
    git(repo, "push", "--quiet", "-u", "origin", "HEAD:main")
    create_readme_secrets(cp, repo)
    install_as_the_readme_says(cp, repo)
    synced_at(cp, git(repo, "rev-parse", "HEAD"))
    return repo


def test_an_argo_sync_after_admission_leaves_kueue_s_fields_and_the_admission(kueue_argo_control_plane, repo):
    cp = kueue_argo_control_plane
    job = {r["run"]: r["rayjob"] for r in json.loads(ok(run_rlgen("run", "list", "-o", "json", cwd=repo)))}["baseline"]
    wait_until(f"{job} admitted by Kueue", lambda: kueue.admission(cp, NAMESPACE).get(job) == "admitted", timeout=120)
    wait_until(f"the worker of {job} scheduled", lambda: kueue.running_workers(cp, NAMESPACE, job, count=1))
    before = kueue.kueue_fields(kueue.live_rayjob(cp, NAMESPACE, job))
    workload = kueue.admitted_workload(cp, NAMESPACE, job)
    # The generated retry policy and self-heal apply at once what differs; a sync is asked too.
    refresh(cp)
    sync_now(cp, "runs")
    kueue.assert_kept(before, workload, kueue.kueue_fields(kueue.live_rayjob(cp, NAMESPACE, job)),
                      kueue.admitted_workload(cp, NAMESPACE, job))
    assert kueue.running_workers(cp, NAMESPACE, job, count=1)
