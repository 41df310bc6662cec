"""``rlgen diff`` on a repository with 50 runs where one changed, beside two plain kustomize
renders of the whole repository (every root, one after the other: what a CI job that renders
base and head and diffs the text would run).

Prints a table: median wall time of each and its ratio to the two plain renders, all
measured in this run on this machine.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlgen.render import manifests
from rlgen.runs.command import new, set_
from rlgen.tools import kustomize

RUNS = 50
REPEAT = 5


def median_seconds(action) -> float:
    samples = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def make_repo(work: Path) -> Path:
    repo = work / "repo"
    subprocess.run([sys.executable, "-m", "rlgen", "new", str(repo), "--no-input"], check=True, capture_output=True)
    os.chdir(repo)
    # The generated repository has its first run; the others go on main, one commit each,
    # through the same code as `rlgen run new --no-branch` (in-process: faster to set up).
    with contextlib.redirect_stdout(io.StringIO()):
        for i in range(1, RUNS):
            new.callback(name=f"run-{i:02d}", source=None, no_branch=True,
                         sets=(f"actor_rollout_ref.actor.optim.lr={i}e-7",))
        subprocess.run(["git", "switch", "-q", "-c", "run/change"], check=True)
        set_.callback(name="run-07", assignments=("trainer.total_epochs=3",))
    return repo


def main() -> None:
    work = Path(tempfile.mkdtemp())
    try:
        repo = make_repo(work)
        roots = kustomize.roots(repo)
        # What rlgen diff builds: the roots no other root includes (not runs/<run>, base/...).
        top = manifests.top_roots(repo, manifests.committable(repo))

        def plain_renders():
            for _ in range(2):
                for root in roots:
                    subprocess.run([*kustomize.command(), str(root)], check=True, capture_output=True)

        def rlgen_diff(*args):
            return lambda: subprocess.run([sys.executable, "-m", "rlgen", "diff", *args], check=True,
                                          capture_output=True)

        def top_renders():
            for _ in range(2):
                for root in top:
                    subprocess.run([*kustomize.command(), str(root)], check=True, capture_output=True)

        reference = median_seconds(plain_renders)
        rows = [
            (f"two plain kustomize renders ({len(roots)} roots each)", reference),
            (f"two plain kustomize renders of the {len(top)} top roots", median_seconds(top_renders)),
            ("rlgen diff --base main --head HEAD", median_seconds(rlgen_diff("--base", "main", "--head", "HEAD"))),
            ("rlgen diff (defaults: fork point -> working tree)", median_seconds(rlgen_diff())),
            ("rlgen diff --format markdown", median_seconds(rlgen_diff("--format", "markdown"))),
        ]
        print(f"repository: {RUNS} runs, one changed on branch run/change; median of {REPEAT}")
        print(f"{'command':<52} {'median s':>9} {'x plain':>8}")
        for name, seconds in rows:
            print(f"{name:<52} {seconds:>9.3f} {seconds / reference:>8.2f}")
    finally:
        os.chdir(work.parent)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
