"""``rlgen e2e`` of the default repository (Flux) and of the argo one, what the generated e2e
workflow's last step runs, with the toolchain already built (the workflow's cache warm): their wall
and CPU time against the goal of 3 minutes. No baseline: nothing else stands this control plane up.
Whole processes, interleaved, the median of ``BENCH_RUNS`` runs each (default 3); the
repositories' upstream roots come from a local Git server (``rlgen.upstream_mirror``), so nothing
is downloaded.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import Cmd

from rlgen.e2e.git_server import GitServer

PROJECT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
GOAL = 180.0
REQUIRED = ("--set", "rlgen.registry=registry.bench.test/team", "--set", "rlgen.node_pool=lingjun", "--set", "rlgen.node_cpu=180", "--set", "rlgen.node_memory=1800", "--set", "rlgen.git_url=ssh://git@git.bench.test/rl.git", "--set", "rlgen.git_host=generic-hmac",
            "--set", "rlgen.install=rlgen==0.1.0", "--set", "ak-storage.bucket=rl-bench-data",
            "--set", "ak-storage.region=cn-hangzhou")
#: The repositories timed: the default (Flux), and the same with Argo CD.
REPOSITORIES = (("default", ()), ("argo", ("--plugin", "argo")))


def openkruise_agents(tree: Path) -> Path:
    """openkruise/agents v0.3.0 as the tests serve it (tests/e2e/conftest.py)."""
    sys.path.insert(0, str(PROJECT / "tests"))
    from e2e.conftest import openkruise_agents as build

    return build(tree)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bench-e2e-"))
    try:
        with GitServer(work / "git") as server:
            server.publish("openkruise/agents", openkruise_agents(work / "agents"), tag="v0.3.0")
            cmds = []
            for label, plugins in REPOSITORIES:
                repo = work / label
                subprocess.run([sys.executable, "-m", "rlgen", "new", str(repo), "--no-input", *REQUIRED, *plugins,
                                "--set", f"rlgen.upstream_mirror={server.base}"], check=True, capture_output=True)
                cmds.append((label, Cmd("rlgen e2e", [sys.executable, "-m", "rlgen", "e2e", str(repo)],
                                        env={"TMPDIR": str(work)})))
            times: dict[str, list] = {label: [] for label, _ in cmds}
            for _ in range(RUNS):
                for label, cmd in cmds:
                    times[label].append(cmd.timed())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n| measure | wall | CPU | goal | met |\n|---|---|---|---|---|")
    for label, runs in times.items():
        wall = statistics.median(t[0] for t in runs)
        cpu = statistics.median(t[1] for t in runs)
        print(f"| `rlgen e2e`, {label} repository, warm toolchain (median of {RUNS}) | {wall:.0f} s | {cpu:.0f} s "
              f"| <= {GOAL:.0f} s | {'yes' if wall <= GOAL else 'NO'} |")
        print(f"{label} runs: {', '.join(f'{w:.0f} s' for w, _ in runs)}", file=sys.stderr)
    print(f"{os.cpu_count()} cores, load average {' / '.join(f'{v:.2f}' for v in os.getloadavg())}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
