"""Timing shared by every benchmark: whole processes, interleaved A/B, medians, ratios.

Each :class:`Pair` is an rlgen command and its baseline. :func:`measure` runs them in turns
(A, B, B, A, ...: neither side always goes first and meets a warmer or colder machine), each
as a separate process, ``runs`` times, with an untimed ``setup`` before each run. A row of the
final table is the median of each side and their ratio, with the goal it must meet, and beside
it the median CPU time of each side (user + system, the processes each waited for included):
on a shared machine the wall times move with the load, the CPU times much less.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
#: The interpreter that runs rlgen: bench.py points it at a fresh environment where rlgen was
#: installed from a wheel, without extras, as a generated repository's CI installs it.
RLGEN_PYTHON = sys.executable


@dataclass
class Cmd:
    """One process to time; ``setup`` runs before each run, untimed (e.g. delete a cache)."""

    label: str
    argv: Sequence[str]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    setup: Callable[[], None] | None = None
    ok_codes: tuple[int, ...] = (0,)

    def once(self) -> float:
        return self.timed()[0]

    def timed(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds): the CPU time is user + system of the process and of
        every process it waited for (kustomize, git, kubeconform), from wait4."""
        if self.setup:
            self.setup()
        env = {**os.environ, **self.env}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(list(self.argv), cwd=self.cwd, env=env, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            seconds = time.perf_counter() - start
            proc.returncode = code = os.waitstatus_to_exitcode(status)
            if code not in self.ok_codes:
                out.seek(0), err.seek(0)
                raise SystemExit(f"{self.label} exited {code}:\n"
                                 f"{out.read().decode()[-1500:]}{err.read().decode()[-1500:]}")
        return seconds, usage.ru_utime + usage.ru_stime


@dataclass
class Row:
    measure: str
    rlgen: float
    baseline_label: str
    baseline: float
    goal: float  # the ratio rlgen / baseline must be at most this
    unit: str = "s"  # of rlgen and baseline: seconds, MB, or "x" (each already a ratio)
    #: Medians of the CPU seconds (user + system, child processes included) of each side.
    rlgen_cpu: float | None = None
    baseline_cpu: float | None = None

    @property
    def ratio(self) -> float:
        return self.rlgen / self.baseline

    @property
    def cpu_ratio(self) -> float | None:
        return None if self.rlgen_cpu is None or not self.baseline_cpu else self.rlgen_cpu / self.baseline_cpu

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal


def measure(measure_name: str, rlgen: Cmd, baseline: Cmd, goal: float, runs: int = RUNS) -> Row:
    """Both commands ``runs`` times each, interleaved, after one untimed warm-up of each."""
    rlgen.once(), baseline.once()
    samples: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
    for i in range(runs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            samples[side].append((rlgen, baseline)[side].timed())
    wall = [statistics.median(s[0] for s in samples[side]) for side in (0, 1)]
    cpu = [statistics.median(s[1] for s in samples[side]) for side in (0, 1)]
    row = Row(measure_name, wall[0], baseline.label, wall[1], goal, rlgen_cpu=cpu[0], baseline_cpu=cpu[1])
    print(f"  {row.measure}: {row.rlgen * 1000:.0f} ms vs {row.baseline * 1000:.0f} ms -> {row.ratio:.2f}x; "
          f"CPU {row.rlgen_cpu * 1000:.0f} ms vs {row.baseline_cpu * 1000:.0f} ms -> {row.cpu_ratio:.2f}x",
          file=sys.stderr)
    return row


def table(rows: list[Row]) -> str:
    lines = ["| measure | rlgen | baseline in the same run | ratio | goal | met | CPU: rlgen, baseline, ratio |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        unit = "x" if r.unit == "x" else "s"
        cpu = "" if r.cpu_ratio is None else \
            f"{_value(r.rlgen_cpu, unit)}, {_value(r.baseline_cpu, unit)}, {r.cpu_ratio:.2f}x"
        lines.append(f"| {r.measure} | {_value(r.rlgen, r.unit)} | {r.baseline_label}, {_value(r.baseline, r.unit)} | "
                     f"{r.ratio:.2f}x | <= {r.goal:g}x | {'yes' if r.met else 'NO'} | {cpu} |")
    return "\n".join(lines)


def _value(value: float, unit: str) -> str:
    if unit == "MB":
        return f"{value:.0f} MB"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def python() -> str:
    return RLGEN_PYTHON


#: The answers every ``rlgen new`` needs (the team's registry, this repository's URL, the bucket
#: and its region).
NEW_ANSWERS = ("--set", "rlgen.registry=registry.cn-hangzhou.aliyuncs.com/rl-bench", "--set", "rlgen.node_pool=lingjun", "--set", "rlgen.node_cpu=180", "--set", "rlgen.node_memory=1800",
               "--set", "rlgen.git_url=https://github.com/rl-bench/rl-repo.git",
               "--set", "ak-storage.bucket=rl-bench-data", "--set", "ak-storage.region=cn-hangzhou",
               # An editable checkout is no source an image build can reach: say where from.
               "--set", "rlgen.install=rlgen==0.1.0")


def rlgen(*args: str, python: str | None = None) -> list[str]:
    if args[:1] == ("new",):
        args = (*args, *NEW_ANSWERS)
    return [python or RLGEN_PYTHON, "-m", "rlgen", *args]


def kustomize() -> list[str]:
    if exe := shutil.which("kustomize"):
        return [exe, "build"]
    return [shutil.which("kubectl") or "kubectl", "kustomize"]


def run(argv: Sequence[str], cwd: Path | None = None, **env: str) -> str:
    """An untimed step of a benchmark's set-up; a failure stops the benchmark."""
    result = subprocess.run(list(argv), cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed:\n{result.stderr[-2000:]}")
    return result.stdout


def main(rows_fn: Callable[[], list[Row]]) -> None:
    """What each ``bench_*.py`` runs as a script: its own rows as one table."""
    print(table(rows_fn()))
