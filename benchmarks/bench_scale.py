"""Render and validate time against a run's size (a repository whose run spans 1, 4, 16, 64 GPU
nodes: ``rlgen render`` of the run, ``rlgen validate`` of the repository), and ``rlgen validate``
of a repository of 200 runs of mixed sizes against one of 200 single-node runs.

Whole ``rlgen`` processes, measured interleaved (every size once per round, so machine noise
hits all alike), medians over ``BENCH_ROUNDS`` rounds (default 5), ratios against the 1-node
case of the same invocation.
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

from rlgen.repo.workspace import open_workspace
from rlgen.run import naming
from rlgen.run.folder import index_text, run_kustomization
from rlgen.tools.yamlio import dump
from rlgen.verl import trainer_config
from rlgen.verl.batch_rules import Size

SIZES = (1, 4, 16, 64)
MIXED = (1, 2, 4, 8, 16, 64)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
ENV = dict(os.environ)
#: The answers every repository needs (placeholders: nothing is pushed or pulled).
REQUIRED = ("--set", "rlgen.registry=registry.bench.test/team", "--set", "rlgen.node_pool=lingjun", "--set", "rlgen.node_cpu=180", "--set", "rlgen.node_memory=1800", "--set", "rlgen.git_url=ssh://git@git.bench.test/rl.git", "--set", "rlgen.git_host=generic-hmac",
            "--set", "rlgen.install=rlgen==0.1.0", "--set", "ak-storage.bucket=rl-bench-data",
            "--set", "ak-storage.region=cn-hangzhou")


def rlgen(*args: str, cwd: Path | None = None) -> None:
    result = subprocess.run([sys.executable, "-m", "rlgen", *args], cwd=cwd, capture_output=True, text=True, env=ENV)
    if result.returncode != 0:
        raise SystemExit(f"rlgen {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr}")


def timed(*args: str, cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of rlgen and the processes it waited for)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "rlgen", *args], cwd=cwd, env=ENV, stdout=out, stderr=out)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            out.seek(0)
            raise SystemExit(f"rlgen {' '.join(args)} failed:\n{out.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime


def sized_repo(parent: Path, nodes: int) -> Path:
    """A repository whose runs span ``nodes`` GPU nodes (``rlgen new --set rlgen.nnodes``)."""
    repo = parent / f"nodes-{nodes}"
    rlgen("new", str(repo), "--no-input", *REQUIRED, "--set", f"rlgen.nnodes={nodes}")
    return repo


def many_runs(parent: Path, name: str, sizes: tuple[int, ...], count: int = 200) -> Path:
    """``count`` runs cycling through ``sizes``, written as ``rlgen run`` writes them, named by
    the repository's scheme (a hash of their files, no render), so validate finds no stale name."""
    repo = parent / name
    rlgen("new", str(repo), "--no-input", *REQUIRED)
    spec = open_workspace(repo).spec
    names = ["baseline"]
    for i in range(1, count):
        run, nodes = f"run-{i:03d}", sizes[i % len(sizes)]
        folder = repo / "runs" / run
        folder.mkdir()
        doc = trainer_config.deep_merge(trainer_config.run_config(spec, run), {"trainer": {"nnodes": nodes}})
        (folder / "run.yaml").write_text(dump(doc))
        (folder / "kustomization.yaml").write_text(run_kustomization(
            spec, run, naming.inputs_name(repo, spec, run), naming.INPUTS, Size(nodes, spec.gpus_per_node)))
        names.append(run)
    (repo / "runs" / "kustomization.yaml").write_text(index_text(names))
    return repo


def interleaved(cases: dict[str, tuple[tuple[str, ...], Path]]) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and median CPU seconds of each case."""
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for _ in range(ROUNDS):
        for key, (args, cwd) in cases.items():
            samples[key].append(timed(*args, cwd=cwd))
    return ({k: statistics.median(s[0] for s in v) for k, v in samples.items()},
            {k: statistics.median(s[1] for s in v) for k, v in samples.items()})


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        cases = {}
        for n in SIZES:
            repo = sized_repo(work, n)
            cases[f"render {n}"] = (("render", "runs/baseline"), repo)
            cases[f"validate {n}"] = (("validate", ".", "--output", "json"), repo)
        medians, cpu = interleaved(cases)
        print(f"rounds: {ROUNDS}; median seconds (wall, and CPU of the process tree), ratio against the 1-node run")
        print(f"{'nodes':>6} {'GPUs':>6} {'render s':>9} {'ratio':>6} {'CPU s':>6} {'ratio':>6} "
              f"{'validate s':>11} {'ratio':>6} {'CPU s':>6} {'ratio':>6}")
        for n in SIZES:
            r, v = medians[f"render {n}"], medians[f"validate {n}"]
            rc, vc = cpu[f"render {n}"], cpu[f"validate {n}"]
            print(f"{n:>6} {n * 8:>6} {r:>9.2f} {r / medians['render 1']:>6.2f} {rc:>6.2f} {rc / cpu['render 1']:>6.2f} "
                  f"{v:>11.2f} {v / medians['validate 1']:>6.2f} {vc:>6.2f} {vc / cpu['validate 1']:>6.2f}")
        mixed, single = many_runs(work, "mixed", MIXED), many_runs(work, "single", (1,))
        whole, whole_cpu = interleaved({"mixed": (("validate", ".", "--output", "json"), mixed),
                                        "single": (("validate", ".", "--output", "json"), single)})
        print(f"\n200 runs, validate the whole repository: 1-node runs {whole['single']:.2f} s, "
              f"mixed sizes {'/'.join(map(str, MIXED))} nodes {whole['mixed']:.2f} s, "
              f"ratio {whole['mixed'] / whole['single']:.2f}; CPU {whole_cpu['single']:.2f} s and "
              f"{whole_cpu['mixed']:.2f} s, ratio {whole_cpu['mixed'] / whole_cpu['single']:.2f}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
