"""CLI start-up and generation time beside a bare interpreter and one kustomize build.

Prints a table: median wall time of each command and its ratio to ``python -c pass``,
all measured in this run on this machine.
"""
from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEAT = 7


def timed(argv: list[str], setup=None) -> float:
    samples = []
    for _ in range(REPEAT):
        if setup:
            setup()
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    work = Path(tempfile.mkdtemp())
    repo = work / "repo"
    rlgen = [sys.executable, "-m", "rlgen"]
    kustomize = [shutil.which("kustomize"), "build"] if shutil.which("kustomize") else ["kubectl", "kustomize"]

    def fresh():
        shutil.rmtree(repo, ignore_errors=True)

    rows = [
        ("python -c pass (baseline)", timed([sys.executable, "-c", "pass"])),
        ("rlgen --help", timed([*rlgen, "--help"])),
        ("rlgen new (whole repository + git commit)", timed([*rlgen, "new", str(repo), "--no-input"], fresh)),
        ("kustomize build runs/ of that repository", timed([*kustomize, str(repo / "runs")])),
    ]
    base = rows[0][1]
    print(f"{'command':<45} {'median s':>9} {'x baseline':>11}")
    for name, seconds in rows:
        print(f"{name:<45} {seconds:>9.3f} {seconds / base:>11.1f}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
