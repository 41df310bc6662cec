"""``rlgen validate`` on repositories of 50 and 200 runs, beside the kustomize floor (one
build of each top root, as many at a time as rlgen runs, nothing else) and beside the short
script a CI step would otherwise run (validate_script.py: the same builds plus jsonschema).

``cold``: ``.rlgen-cache/`` deleted before each run (a fresh CI checkout); ``warm``: the cache
of the previous run kept (a developer validating again after a commit that changed nothing
the roots read)."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import repos
import timing
from timing import Cmd, measure

HERE = Path(__file__).resolve().parent
# The schemas rlgen ships (k8s/ and crds/), unless a folder is named.
SCHEMAS = os.environ.get("RLGEN_SCHEMA_DIR") or str(Path(__file__).resolve().parents[1] / "generator" / "rlgen" / "schemas" / "catalog")


def floor(repo: Path) -> Cmd:
    roots = " ".join(str(r) for r in repos.top_roots(repo))
    jobs = os.cpu_count() or 2
    kustomize = " ".join(timing.kustomize())
    return Cmd("one kustomize build of each top root, nothing else (the floor)",
               ["sh", "-c", f"printf '%s\\n' {roots} | xargs -P {max(2, jobs)} -n 1 {kustomize} > /dev/null"])


def validate(repo: Path, cold: bool) -> Cmd:
    cache = repo / ".rlgen-cache"
    setup = (lambda: shutil.rmtree(cache, ignore_errors=True)) if cold else None
    return Cmd("validate", timing.rlgen("validate", str(repo), "--output", "json"),
               setup=setup)


def scaling(measure_name: str, small: timing.Row, large: timing.Row) -> timing.Row:
    """How much more than its floor a command costs at 200 runs than at 50: 1 when it grows
    exactly as the floor does."""
    return timing.Row(measure_name, large.ratio, "the same ratio at 50 runs", small.ratio, 1.1, unit="x",
                      rlgen_cpu=large.cpu_ratio, baseline_cpu=small.cpu_ratio)


def rows() -> list[timing.Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-validate-"))
    try:
        made = {runs: repos.make_repo(work, runs) for runs in (50, 200)}
        cold = {runs: measure(f"`rlgen validate`, {runs} runs, cold cache", validate(repo, True), floor(repo), 1.2)
                for runs, repo in made.items()}
        out = [*cold.values(), scaling("`rlgen validate` cold, 200 runs against 50: ratio of ratios", cold[50], cold[200])]
        out += [measure(f"`rlgen validate`, {runs} runs, warm cache", validate(repo, False), floor(repo), 1.2)
                for runs, repo in made.items()]
        script = Cmd("a 40-line script: build the top roots + jsonschema",
                     [sys.executable, str(HERE / "validate_script.py"), SCHEMAS, *map(str, repos.top_roots(made[50]))])
        out.append(measure("`rlgen validate`, 50 runs, cold cache", validate(made[50], True), script, 0.8))
        out.append(measure("`rlgen validate`, 50 runs, warm cache", validate(made[50], False), script, 0.8))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    timing.main(rows)
