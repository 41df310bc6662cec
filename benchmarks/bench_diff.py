"""``rlgen diff`` on repositories of 50 and 200 runs where one run changed, beside the
changed-only floor: a script that checks out the base revision, builds only the changed run
at both revisions and diffs the two texts (changed_floor.sh). The cache is deleted before
each rlgen run, so every run of it builds."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import bench_validate
import repos
import timing
from timing import Cmd, measure

HERE = Path(__file__).resolve().parent
CHANGED = "run-007"


def branch_with_one_change(repo: Path) -> None:
    timing.run(["git", "switch", "-q", "-c", "run/change"], cwd=repo)
    timing.run(timing.rlgen("run", "set", CHANGED, "trainer.total_epochs=3"), cwd=repo)


def rows() -> list[timing.Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-diff-"))
    out = []
    try:
        for runs in (50, 200):
            repo = repos.make_repo(work, runs)
            branch_with_one_change(repo)
            cache = repo / ".rlgen-cache"
            rlgen = Cmd("diff", timing.rlgen("diff"), cwd=repo,
                        setup=lambda c=cache: shutil.rmtree(c, ignore_errors=True))
            floor = Cmd("build only the changed run at both revisions + diff",
                        ["sh", str(HERE / "changed_floor.sh"), "main", f"runs/{CHANGED}", " ".join(timing.kustomize())],
                        cwd=repo, ok_codes=(1,))
            out.append(measure(f"`rlgen diff`, {runs} runs, one run changed, cold cache", rlgen, floor, 2.0))
        return [*out, bench_validate.scaling("`rlgen diff` cold, 200 runs against 50: ratio of ratios", *out)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    timing.main(rows)
