"""Start-up and ``rlgen new``: ``--help`` beside a bare interpreter, ``new`` (git included)
beside its floor: the same files written, the builds of its check and git (new_floor.sh)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import repos
import timing
from timing import Cmd, measure

from rlgen.cli import COMMANDS

HERE = Path(__file__).resolve().parent


def help_rows() -> list[timing.Row]:
    bare = Cmd("`python -c pass`", [timing.python(), "-c", "pass"])
    # measure()'s untimed first run fills rlgen's help cache: the row is every later run's.
    rows = [measure("`rlgen --help`", Cmd("help", timing.rlgen("--help")), bare, 3.0)]
    per_command = [measure(f"`rlgen {c} --help`", Cmd(c, timing.rlgen(c, "--help")), bare, 3.0, runs=3)
                   for c in COMMANDS]
    slowest = max(per_command, key=lambda r: r.ratio)
    # The slowest is timed again with as many runs as the others: the short pass only picks it.
    name = slowest.measure.strip("`").split()[1]
    again = Cmd(name, timing.rlgen(name, "--help"))
    rows.append(measure(f"slowest subcommand: `rlgen {name} --help`", again, bare, 3.0))
    return rows


def new_row(work: Path) -> timing.Row:
    repo = work / "repo"
    timing.run(timing.rlgen("new", str(repo), "--no-input"))
    # The floor writes the same files (a copy kept aside, without git), builds the roots
    # rlgen's check before the first commit renders, as many at a time as rlgen, and commits.
    kept = work / "kept"
    shutil.copytree(repo, kept, ignore=shutil.ignore_patterns(".git"))
    roots = [str(r.relative_to(repo)) for r in repos.top_roots(repo)]
    copy = work / "copy"
    rlgen = Cmd("new", timing.rlgen("new", str(repo), "--no-input"),
                setup=lambda: shutil.rmtree(repo, ignore_errors=True))
    floor = Cmd(f"write its files, one kustomize build of each root its check renders ({len(roots)}), "
                "git init + add + commit",
                ["sh", str(HERE / "new_floor.sh"), str(kept), str(copy), str(max(2, os.cpu_count() or 2)),
                 " ".join(timing.kustomize()), *roots],
                setup=lambda: shutil.rmtree(copy, ignore_errors=True))
    return measure("`rlgen new` (incl. git)", rlgen, floor, 1.2)


def rows() -> list[timing.Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        return help_rows() + [new_row(work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    timing.main(rows)
