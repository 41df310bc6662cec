"""The e2e workflow run by nektos/act (support/act.py) on each variant whose e2e.yaml is its own
(test_variants.py): the default (Flux), argo (Argo CD's Go and Redis) and kueue (a pool of the
queue's quota). `rlgen e2e` syncs a pull request's commit on a throwaway control plane on this
machine, the pinned programs restored from the cache a previous run saved."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from support.act import THIS_RLGEN
from support.repos import git, ok, rlgen_in
from support.toolchain import build

from rlgen import __version__
from rlgen.e2e.programs import ENGINE_FOLDERS, GROUP_FOLDERS, TOOL_FOLDERS

KEY = f"rlgen-e2e-Linux-{__version__}"


def seed_cache(runner) -> None:
    """The cache entry an earlier run of the workflow saved: this machine's builds of the pinned
    programs (the same go.mod, go.sum and Go) every job here runs, both engines' and Kueue's,
    hard-linked."""
    entry = runner.cache / KEY
    if entry.exists():
        return
    entry.mkdir(parents=True)
    for module in build.modules():
        if module.name in (*TOOL_FOLDERS, *ENGINE_FOLDERS["Flux"], *ENGINE_FOLDERS["Argo CD"],
                           GROUP_FOLDERS["kueue.x-k8s.io"]):
            if not build.is_current(module):
                pytest.fail(f"{module.name} is not built: run make toolchain")
            subprocess.run(["cp", "-al", str(build.destination(module)), str(entry)], check=True)


def mirrored(generate, runner, tmp_path, *args: str):
    """The repository ``rlgen new ARGS`` generates with its upstream roots fetched from the
    runner's Git host (``rlgen.upstream_mirror``), which serves openkruise/agents v0.3.0 as the
    control-plane tests do: nothing is fetched from github.com."""
    # Lazy: the end-to-end tests' builder of the upstream repository, shared with bench_e2e.py.
    from e2e.conftest import openkruise_agents

    if not (runner.git_server.root / "openkruise/agents").exists():
        runner.git_server.publish("openkruise/agents", openkruise_agents(tmp_path / "agents"), tag="v0.3.0")
    return shutil.copytree(generate(*args, *THIS_RLGEN, "--set", f"rlgen.upstream_mirror={runner.git_server.base}"),
                           tmp_path / "repo", symlinks=True)


def pull_request(generate, runner, tmp_path, name: str, *command: str, variant: tuple[str, ...] = ()):
    """A pull request from branch ``name`` holding ``rlgen COMMAND`` as one commit, on the
    repository ``rlgen new VARIANT`` generates."""
    work = mirrored(generate, runner, tmp_path, *variant)
    git(work, "switch", "-q", "-c", name)
    ok(rlgen_in(work, *command))
    git(work, "switch", "-q", "main")
    full = runner.publish(work, f"rl-e2e-{name}")
    return work, full, runner.pull_request(work, full, "main", name)


def test_the_e2e_job_syncs_a_pull_request_with_the_programs_restored(generate, runner, tmp_path):
    seed_cache(runner)
    work, full, event = pull_request(generate, runner, tmp_path, "lr", "run", "set", "baseline",
                                     "actor_rollout_ref.actor.optim.lr=3e-6")
    job = runner.run(work / ".github/workflows/e2e.yaml", "pull_request", full, event)
    assert job.passed, job.log[-6000:]
    steps = job.step_results()
    assert steps.get("rlgen e2e") == "success", steps
    assert f"Cache restored from key: {KEY}" in job.log
    # A hit is not saved again.
    assert "Save the built programs" not in steps, steps


def test_the_e2e_job_fails_on_a_run_the_pool_cannot_take_and_says_why(generate, runner, tmp_path):
    # A second run beside baseline, each a whole GPU node, on a pool of GPU_NODES=1
    # (rlgen.nnodes): the new run's pods cannot be scheduled.
    seed_cache(runner)
    work, full, event = pull_request(generate, runner, tmp_path, "second", "run", "new", "lr-3e-6", "--no-branch")
    job = runner.run(work / ".github/workflows/e2e.yaml", "pull_request", full, event)
    assert job.returncode != 0 and job.step_results().get("rlgen e2e") == "failure", job.log[-4000:]
    assert "## rlgen e2e failed: clusters/production/" in job.summary, job.summary
    assert "run lr-3e-6" in job.log and "cannot be scheduled" in job.log


def test_the_argo_e2e_job_syncs_with_argo_cds_go_and_the_runners_redis(generate, runner, tmp_path):
    seed_cache(runner)
    work, full, event = pull_request(generate, runner, tmp_path, "argo-lr", "run", "set", "baseline",
                                     "actor_rollout_ref.actor.optim.lr=3e-6", variant=("--plugin", "argo"))
    job = runner.run(work / ".github/workflows/e2e.yaml", "pull_request", full, event)
    assert job.passed, job.log[-6000:]
    steps = job.step_results()
    # This machine has redis-server: the step finds it and installs nothing.
    assert steps.get("Install Redis (Argo CD's cache)") == "success" and "/redis-server" in job.log, steps
    assert steps.get("rlgen e2e") == "success", steps
    assert "Throwaway control plane synced by Argo CD" in job.summary, job.summary
    assert "| Application platform | True | Synced, Healthy |" in job.summary, job.summary


def test_the_kueue_e2e_job_syncs_on_a_pool_of_the_queues_quota(generate, runner, tmp_path):
    seed_cache(runner)
    work, full, event = pull_request(generate, runner, tmp_path, "kueue-lr", "run", "set", "baseline",
                                     "actor_rollout_ref.actor.optim.lr=3e-6",
                                     variant=("--plugin", "kueue", "--set", "kueue.gpu_quota=16"))
    job = runner.run(work / ".github/workflows/e2e.yaml", "pull_request", full, event)
    assert job.passed, job.log[-6000:]
    assert job.step_results().get("rlgen e2e") == "success", job.step_results()
    # GPU_NODES=2: 16 GPUs of quota in nodes of 8.
    assert "2 node(s) of 8 nvidia.com/gpu" in job.log + job.summary, job.summary
    assert "Kueue" in job.summary, job.summary
