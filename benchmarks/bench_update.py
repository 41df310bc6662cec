"""``rlgen update`` on a repository with 200 runs, as a ratio of ``rlgen new`` measured in the
same run: whole processes, interleaved round by round, medians of each.

Three updates: an option of the sync plugin (entry points only), a sandbox swap (components,
entry points, README) and a rollout option that changes the training base, which names all
200 runs again (one kustomize build each). Each update starts from the same commit.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlgen.repo.workspace import load_spec
from rlgen.run.folder import index_text, run_kustomization
from rlgen.tools.yamlio import dump
from rlgen.verl import trainer_config

#: The answers every rlgen new needs (a team registry and this repository's remote).
NEW = ("--no-input", "--set", "rlgen.registry=registry.rl.test/team", "--set", "rlgen.node_pool=lingjun", "--set", "rlgen.node_cpu=180", "--set", "rlgen.node_memory=1800",
       "--set", "rlgen.git_url=ssh://git@git.rl.test/platform/rl-repo.git", "--set", "rlgen.git_host=generic-hmac",
       "--set", "ak-storage.bucket=rl-bench-data", "--set", "ak-storage.region=cn-hangzhou")
RUNS = 200
ROUNDS = 5
UPDATES = {
    "sync option": ["--set", "flux.interval=15m"],
    "sandbox swap": ["--plugin", "marketplace-sandbox", "--set", "marketplace-sandbox.domain=sandbox.example.com"],
    "training base (re-names runs)": ["--set", "vllm.gpu_memory_utilization=0.6"],
}


def rlgen(*args: str, cwd: Path | None = None) -> None:
    result = subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"rlgen {' '.join(args)}: {result.stdout[-1000:]}{result.stderr}")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


def make_repo(parent: Path) -> Path:
    repo = parent / "repo"
    rlgen("new", str(repo), *NEW)
    spec, names = load_spec(repo), ["baseline"]
    for i in range(1, RUNS):
        name = f"lr-sweep-{i:03d}"
        folder = repo / "runs" / name
        folder.mkdir()
        change = {"actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6 * (1 + i / 100)}}}}
        (folder / "run.yaml").write_text(dump(trainer_config.deep_merge(trainer_config.run_config(spec, name), change)))
        (folder / "kustomization.yaml").write_text(run_kustomization(spec, name, f"{name}-0000000"))
        names.append(name)
    (repo / "runs" / "kustomization.yaml").write_text(index_text(names))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{RUNS} runs")
    return repo


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="rlgen-bench-update-"))
    repo = make_repo(work)
    start = git(repo, "rev-parse", "HEAD").strip()
    times: dict[str, list[float]] = {"rlgen new": [], **{name: [] for name in UPDATES}}
    for i in range(ROUNDS):
        target = work / f"new-{i}"
        times["rlgen new"].append(timed(lambda: rlgen("new", str(target), *NEW)))
        shutil.rmtree(target)
        for name, args in UPDATES.items():
            times[name].append(timed(lambda: rlgen("update", "--no-branch", *args, cwd=repo)))
            git(repo, "reset", "-q", "--hard", start)
    base = statistics.median(times["rlgen new"])
    print(f"{RUNS} runs, {ROUNDS} rounds, medians")
    print(f"{'command':<40} {'s':>7} {'ratio to rlgen new':>19}")
    for name, values in times.items():
        label = name if name == "rlgen new" else f"rlgen update: {name}"
        print(f"{label:<40} {statistics.median(values):>7.2f} {statistics.median(values) / base:>19.2f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
