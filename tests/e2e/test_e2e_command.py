"""``rlgen e2e`` as a team's CI runs it (the generated e2e workflow's last step): a process, its
programs from PATH, its own throwaway control plane. The default repository passes; a run larger
than the GPU pool and a stage applying an object the API server refuses fail, each named with its
reason in the job summary, and a kind nothing here serves is named, not failed; SIGTERM leaves no
process and no folder behind."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.e2e_command import (e2e, e2e_of_an_unknown_kind_and_a_refused_object, git, git_objects,
                                 installed_programs, leftovers)
from support.flux import REGISTRY
from support.repos import POOL, INSTALL, ok, run_rlgen, storage_answers
from support.toolchain import tool


@pytest.fixture(scope="module")
def repo(git_server, tmp_path_factory):
    """The default repository as ``rlgen new`` leaves it (one commit), its upstream roots fetched
    from the tests' Git server."""
    path = tmp_path_factory.mktemp("e2e-command") / "rl-repo"
    ok(run_rlgen("new", str(path), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", "rlgen.git_url=https://git.rl.test/team/rl-repo.git", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 *storage_answers(), "--set", f"rlgen.upstream_mirror={git_server.base}"))
    return path


@pytest.fixture(scope="module")
def programs(repo, tmp_path_factory):
    return installed_programs(repo, tmp_path_factory.mktemp("e2e-tools"),
                              ("source-controller", "kustomize-controller", "notification-controller", "flux"))


def test_the_default_repository_syncs_and_its_runs_are_scheduled(repo, programs, tmp_path):
    result, summary, seconds = e2e(repo, programs, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=7", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert summary.startswith(f"## rlgen e2e passed: clusters/production/ at {head}"), summary
    # Every stage of clusters/production/ Ready, the pool shaped from the repository's pods.
    for stage in ("flux-system", "platform", "runs"):
        assert f"| Kustomization {stage} | True |" in summary, summary
    # ACK taints Lingjun nodes by key alone (rlgen.pool).
    assert "1 node(s) of 8 nvidia.com/gpu, taint node-role.alibabacloud.com/lingjun:NoSchedule" in summary
    assert "| GPU nodes for " in summary and "| problem |" not in summary, summary
    # Flux is installed by the pinned CLI's own bootstrap.
    assert "rlgen e2e: flux bootstrap git --path=clusters/production" in result.stderr, result.stderr
    assert leftovers(tmp_path) == []
    print(f"rlgen e2e, default repository: {seconds:.0f} s")


def test_a_run_larger_than_the_pool_fails_naming_the_run_and_why(repo, programs, tmp_path):
    git(repo, "checkout", "--quiet", "-b", "too-big", "main")
    try:
        ok(run_rlgen("run", "set", "baseline", "trainer.nnodes=2", cwd=repo))
        result, summary, _ = e2e(repo, programs, tmp_path)
    finally:
        git(repo, "checkout", "--quiet", "main")
    assert result.returncode == 1, result.stdout + result.stderr
    reason = result.stderr.strip().splitlines()[-1]
    assert reason.startswith("rlgen: error: rlgen status --wait: cannot resolve by itself: run baseline: pod "), reason
    assert "Insufficient nvidia.com/gpu" in reason, reason
    assert summary.startswith("## rlgen e2e failed:") and "Insufficient nvidia.com/gpu" in summary, summary
    # doctor, run against the same cluster, says the same of the pool.
    assert "room for 1 of 2 pod(s) of 8 nvidia.com/gpu" in summary, summary
    assert leftovers(tmp_path) == []


def test_a_kind_nothing_serves_is_named_and_a_refused_object_fails_its_stage(repo, programs, tmp_path):
    result, summary = e2e_of_an_unknown_kind_and_a_refused_object(repo, programs, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    reason = result.stderr.strip().splitlines()[-1]
    assert reason.startswith("rlgen: error: stage Kustomization platform failed: "), reason
    assert "Invalid value: 70000" in reason and "ServiceMonitor" not in reason, reason
    assert "| Kustomization platform | False |" in summary, summary
    # The kind is named once, and is no reason of the failure.
    unchecked = "not checked here: ServiceMonitor (monitoring.coreos.com/v1): rlgen knows no CRD of it"
    assert f"rlgen e2e: {unchecked}" in result.stderr and f"- {unchecked}" in summary, summary
    assert leftovers(tmp_path) == []


def test_sigterm_stops_every_process_it_started(repo, programs, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "rlgen", "e2e", str(repo)], stderr=subprocess.PIPE, text=True,
                            env={**programs, "TMPDIR": str(tmp_path)})
    try:
        line = ""
        while not line.startswith("rlgen e2e: control plane in ") and proc.poll() is None:
            line = proc.stderr.readline()
        assert line.startswith("rlgen e2e: control plane in "), proc.stderr.read()
        apiserver = Path(line.split(" in ", 1)[1].strip()) / "cluster" / "logs" / "kube-apiserver.log"
        deadline = time.monotonic() + 60
        while not (apiserver.exists() and apiserver.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert leftovers(tmp_path), "no process of the control plane started"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert leftovers(tmp_path) == []


def test_a_sops_repository_syncs_without_the_teams_age_key(git_server, programs, tmp_path):
    """The values are encrypted for a key rlgen e2e never sees: it syncs a stand-in commit whose
    files are placeholders encrypted for a key of its own, and leaves the repository as it was."""
    key = tmp_path / "team.agekey"
    subprocess.run([tool("age-keygen"), "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run([tool("age-keygen"), "-y", str(key)], check=True, capture_output=True,
                            text=True).stdout.strip()
    key.unlink()
    repo = tmp_path / "sops-repo"
    ok(run_rlgen("new", str(repo), "--no-input", "--set", f"rlgen.registry={REGISTRY}", *POOL,
                 "--set", "rlgen.git_url=https://git.rl.test/team/rl-repo.git", "--set", "rlgen.git_host=generic-hmac", "--set", f"rlgen.install={INSTALL}",
                 *storage_answers(), "--set", f"rlgen.upstream_mirror={git_server.base}",
                 "--plugin", "sops", "--set", f"sops.age_recipients={public}", env=programs))
    ok(run_rlgen("secret", "set", "hf-token", "token", cwd=repo, env=programs, input="hf_" + "x" * 34))
    objects = git_objects(repo)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    (tmp_path / "run").mkdir()
    result, summary, _ = e2e(repo, programs, tmp_path / "run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "| Kustomization secrets | True |" in summary, summary
    assert "every Secret a placeholder (1 SOPS file(s) too, encrypted for an age key made for this run)" in summary
    # Nothing written into the repository: no commit, no object, no file.
    assert git_objects(repo) == objects
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout == head
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""
