"""Start-up and ``rlgen new``: ``--help`` beside a bare interpreter, ``new`` (git included)
beside one kustomize build of the largest root of the repository it makes."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import timing
from timing import Cmd, measure

from rlgen.cli import COMMANDS


def help_rows() -> list[timing.Row]:
    bare = Cmd("`python -c pass`", [timing.python(), "-c", "pass"])
    rows = [measure("`rlgen --help`", Cmd("help", timing.rlgen("--help")), bare, 3.0)]
    per_command = [measure(f"`rlgen {c} --help`", Cmd(c, timing.rlgen(c, "--help")), bare, 3.0, runs=3)
                   for c in COMMANDS]
    slowest = max(per_command, key=lambda r: r.ratio)
    # The slowest is timed again with as many runs as the others: the short pass only picks it.
    name = slowest.measure.strip("`").split()[1]
    again = Cmd(name, timing.rlgen(name, "--help"))
    rows.append(measure(f"slowest subcommand: `rlgen {name} --help`", again, bare, 3.0))
    return rows


def largest_root(repo: Path) -> Path:
    from rlgen.tools import kustomize

    sizes = {root: len(timing.run([*timing.kustomize(), str(root)])) for root in kustomize.roots(repo)}
    return max(sizes, key=sizes.get)


def new_row(work: Path) -> timing.Row:
    repo = work / "repo"
    timing.run(timing.rlgen("new", str(repo), "--no-input"))
    root = largest_root(repo)
    # The baseline builds a copy that stays put while rlgen new replaces the repository.
    kept = work / "kept"
    shutil.copytree(repo, kept)
    kept_root = kept / root.relative_to(repo)
    rlgen = Cmd("new", timing.rlgen("new", str(repo), "--no-input"),
                setup=lambda: shutil.rmtree(repo, ignore_errors=True))
    floor = Cmd(f"one `kubectl kustomize` of its largest root ({root.relative_to(repo).as_posix()})",
                [*timing.kustomize(), str(kept_root)])
    return measure("`rlgen new` (incl. git)", rlgen, floor, 1.0)


def rows() -> list[timing.Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        return help_rows() + [new_row(work)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    timing.main(rows)
