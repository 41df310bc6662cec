"""The generated e2e workflow's job run by nektos/act on this machine (tests/support/act.py), the
default repository (Flux), a pull request changing its run's learning rate: its wall time with the control plane's
programs restored by the cache step (warm: the entry an earlier run saved), and with the cache
empty (the job builds them with ``rlgen e2e --install-tools``; Go's module and build caches are
this machine's, already filled by ``make toolchain``, so this is not a first run on a fresh
runner, which builds everything from source: docs/toolchain.md). Whole ``act`` processes, the
median of ``BENCH_RUNS`` warm runs (default 3) and one cold run.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "tests"))

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
REQUIRED = ("--set", "rlgen.registry=registry.bench.test/team", "--set", "rlgen.git_url=ssh://git@git.bench.test/rl.git",
            "--set", "rlgen.git_host=generic-hmac",
            "--set", "rlgen.node_pool=lingjun", "--set", "rlgen.node_cpu=180", "--set", "rlgen.node_memory=1800",
            "--set", "ak-storage.bucket=rl-bench-data", "--set", "ak-storage.region=cn-hangzhou")


def main() -> int:
    from e2e.conftest import openkruise_agents
    from support.act import THIS_RLGEN, TOKEN, Runner, rlgen_wheel
    from support.github_host import RestApi
    from workflows.test_e2e_job import KEY, seed_cache

    from rlgen.e2e.git_server import GitServer

    work = Path(tempfile.mkdtemp(prefix="bench-act-e2e-"))
    warm, cold = [], None
    try:
        with GitServer(work / "git") as git, RestApi(TOKEN) as api:
            runner = Runner(work, git, api, None, rlgen_wheel(work / "wheelhouse"))
            git.publish("openkruise/agents", openkruise_agents(work / "agents"), tag="v0.3.0")
            repo = work / "repo"
            subprocess.run([sys.executable, "-m", "rlgen", "new", str(repo), "--no-input", *REQUIRED, *THIS_RLGEN,
                            "--set", f"rlgen.upstream_mirror={git.base}"], check=True, capture_output=True)
            subprocess.run(["git", "-C", str(repo), "switch", "-q", "-c", "lr"], check=True)
            # A changed run: a second run would need a second GPU node (GPU_NODES is rlgen.nnodes, 1).
            subprocess.run([sys.executable, "-m", "rlgen", "run", "set", "baseline",
                            "actor_rollout_ref.actor.optim.lr=3e-6"], cwd=repo, check=True, capture_output=True)
            subprocess.run(["git", "-C", str(repo), "switch", "-q", "main"], check=True)
            full = runner.publish(repo, "rl-bench")
            event = runner.pull_request(repo, full, "main", "lr")
            workflow = repo / ".github/workflows/e2e.yaml"

            def timed() -> float:
                started = time.monotonic()
                job = runner.run(workflow, "pull_request", full, event)
                if not job.passed:
                    print(job.log[-4000:], file=sys.stderr)
                    raise SystemExit("the e2e job failed")
                return time.monotonic() - started

            # The first job also makes the tool cache's Python and installs rlgen in it, as a
            # runner's first job would: not timed.
            seed_cache(runner)
            timed()
            warm = [timed() for _ in range(RUNS)]
            shutil.rmtree(runner.cache / KEY)
            cold = timed()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| measure | wall |\n|---|---|")
    print(f"| e2e job under act, programs restored from the cache (median of {RUNS}) | {statistics.median(warm):.0f} s |")
    print(f"| e2e job under act, cache empty (builds linked from Go's warm build cache) | {cold:.0f} s |")
    print(f"warm runs: {', '.join(f'{w:.0f} s' for w in warm)}", file=sys.stderr)
    print(f"{os.cpu_count()} cores, load average {' / '.join(f'{v:.2f}' for v in os.getloadavg())}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
