"""The generated CI's first step: ``pip install`` of rlgen into a fresh environment, from a
local wheel (no network: rlgen's wheel and those of its dependencies are built first into a
folder, and pip is pointed at it with ``--no-index``). Timed and sized beside the same install
with the cluster and template extras, which is what a plain install held before the Kubernetes
client and cookiecutter became the extras ``rlgen[cluster]`` and ``rlgen[template]``."""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import timing
from rlgen import __version__
from timing import Cmd

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
#: The extras that were part of a plain install before they became extras.
BEFORE = "cluster,template"


def wheelhouse(work: Path) -> Path:
    """rlgen's wheel and every dependency of rlgen[cluster,template], built once (untimed)."""
    folder = work / "wheels"
    # The version of the rlgen the other benchmarks run, which setuptools-scm writes into the checkout.
    timing.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(folder), f"{ROOT}[{BEFORE}]"],
               SETUPTOOLS_SCM_PRETEND_VERSION_FOR_RLGEN=__version__)
    return folder


def install(venv: Path, requirement: str, wheels: Path) -> Cmd:
    def fresh():
        shutil.rmtree(venv, ignore_errors=True)
        timing.run([sys.executable, "-m", "venv", str(venv)])

    # What a CI step runs once its Python is set up: pip install, nothing from the network.
    return Cmd(f"`pip install {requirement}`", [str(venv / "bin" / "pip"), "install", "--quiet", "--no-index",
                                                "--find-links", str(wheels), requirement], setup=fresh)


def size_mb(venv: Path) -> float:
    total = sum(p.lstat().st_size for p in venv.rglob("*") if p.is_file() or p.is_symlink())
    return total / 1e6


def rows(work: Path) -> tuple[list[timing.Row], str]:
    """The rows, and the python of an environment with the plain install (what the other
    benchmarks run rlgen with)."""
    wheels = wheelhouse(work)
    plain, cluster = work / "ci-plain", work / "ci-cluster"
    cmds = [install(plain, "rlgen", wheels), install(cluster, f"rlgen[{BEFORE}]", wheels)]
    samples: list[list[float]] = [[], []]
    for i in range(RUNS):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            samples[side].append(cmds[side].once())
    seconds = [statistics.median(s) for s in samples]
    sizes = [size_mb(plain), size_mb(cluster)]
    label = f"`pip install 'rlgen[{BEFORE}]'` (all a plain install held before)"
    out = [timing.Row("CI install: `pip install rlgen` from a local wheel, fresh environment, time",
                      seconds[0], label, seconds[1], 0.5),
           timing.Row("CI install: the environment's size", sizes[0], label, sizes[1], 0.5, unit="MB")]
    for row in out:
        print(f"  {row.measure}: {row.rlgen:.1f} vs {row.baseline:.1f} -> {row.ratio:.2f}x", file=sys.stderr)
    python = str(plain / "bin" / "python")
    for module, extra in (("kubernetes", "cluster"), ("cookiecutter", "template")):
        if subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0:
            raise SystemExit(f"the plain install has {module}: it should be the extra rlgen[{extra}]")
    return out, python


if __name__ == "__main__":
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="bench-install-"))
    try:
        print(timing.table(rows(work)[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
