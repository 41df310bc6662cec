"""``rlgen e2e`` on an Argo CD repository, as its generated e2e workflow runs it: Argo CD's
release manifest installed and the root Application applied, every Application synced from the
command's own Git server (the team's URL never reached) and the runs' pods scheduled; a stage
that cannot apply fails, naming its Application and why, and a kind nothing here serves is named.
The repository is left as it was."""
from __future__ import annotations

import subprocess

import pytest
from support.argocd import redis_server
from support.e2e_command import (e2e, e2e_of_an_unknown_kind_and_a_refused_object, git_objects,
                                 installed_programs, leftovers)
from support.flux import REGISTRY
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers

TEAM_URL = "https://git.rl.test/team/rl-argo.git"


@pytest.fixture(scope="module")
def repo(git_server, tmp_path_factory):
    """The default argo repository as ``rlgen new`` leaves it, its upstream roots fetched from the
    tests' Git server; its own URL one the command must never reach."""
    path = tmp_path_factory.mktemp("e2e-command-argo") / "rl-argo"
    ok(run_rlgen("new", str(path), "--no-input", "--plugin", "argo", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", f"rlgen.git_url={TEAM_URL}", "--set", "rlgen.git_host=github", "--set", f"rlgen.install={INSTALL}",
                 *storage_answers(), "--set", f"rlgen.upstream_mirror={git_server.base}"))
    return path


@pytest.fixture(scope="module")
def programs(repo, tmp_path_factory):
    redis_server()  # the runner's own, as the workflow installs it
    return installed_programs(repo, tmp_path_factory.mktemp("e2e-tools"), ("argocd",))


def test_the_argo_repository_syncs_in_waves_and_its_runs_are_scheduled(repo, programs, tmp_path):
    objects = git_objects(repo)
    result, summary, seconds = e2e(repo, programs, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert summary.startswith(f"## rlgen e2e passed: clusters/production/ at {head}"), summary
    assert "Throwaway control plane synced by Argo CD" in summary, summary
    # Every wave's Application created and healthy; the runs' too (the root does not wait for it).
    for app in ("root", "sandbox-operator", "sandbox-manager", "platform"):
        assert f"| Application {app} | True | Synced, Healthy |" in summary, summary
    assert "| Application runs | " in summary and "| Application runs | False" not in summary, summary
    assert "| GPU nodes for " in summary and "| problem |" not in summary, summary
    assert "rlgen e2e: kubectl apply -n argocd -f clusters/production/root.yaml" in result.stderr, result.stderr
    # The served commit was written outside the repository.
    assert git_objects(repo) == objects
    assert leftovers(tmp_path) == []
    print(f"rlgen e2e, argo repository: {seconds:.0f} s")


def test_a_refused_object_fails_its_application_and_an_unknown_kind_is_named(repo, programs, tmp_path):
    result, summary = e2e_of_an_unknown_kind_and_a_refused_object(repo, programs, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    reason = result.stderr.strip().splitlines()[-1]
    assert reason.startswith("rlgen: error: stage Application platform failed: "), reason
    assert "Invalid value: 70000" in reason and "ServiceMonitor" not in reason, reason
    assert "| Application platform | False |" in summary, summary
    assert "- not checked here: ServiceMonitor (monitoring.coreos.com/v1)" in summary, summary
    # The wave after it never started.
    assert "| Application runs | Unknown | not created yet |" in summary, summary
    assert leftovers(tmp_path) == []
