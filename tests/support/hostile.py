"""What every hostile case records, for the corpus figures tests/hostile/conftest.py prints:
the exit code expected and got, whether stderr was one line, data lost, the repository changed
or left with leftovers, and secrets found in outputs or by the scanners."""
from __future__ import annotations

import subprocess
from pathlib import Path

from support.repos import git


def record(record_property, *, expected: int, result: subprocess.CompletedProcess | None = None,
           exit: int | None = None, data_lost=(), changed: bool = False, leftovers=(), secrets=(),
           scanner_findings: int | None = None) -> None:
    lines = result.stderr.strip().splitlines() if result is not None else []
    outcome = {
        "expected": expected,
        "exit": result.returncode if result is not None else exit,
        "one_line": result is not None and len(lines) == 1 and "Traceback" not in result.stderr,
        "data_lost": list(data_lost),
        "changed": changed,
        "leftovers": list(leftovers),
        "secrets": list(secrets),
    }
    if scanner_findings is not None:
        outcome["scanner_findings"] = scanner_findings
    for key, value in outcome.items():
        record_property(f"hostile_{key}", value)


def repository_state(repo: Path) -> dict:
    """What a refused or rolled-back change must leave as it found: refs, HEAD, the index's
    entries, the status, and git's and rlgen's lock and journal files."""
    git_dir = repo / ".git"
    return {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": (git_dir / "HEAD").read_text(),
        "index": git(repo, "ls-files", "--stage"),
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "leftovers": leftovers(repo),
    }


def leftovers(repo: Path) -> list[str]:
    """Lock files of git (rlgen.lock is rlgen's lasting flock file, never stale), rlgen's
    journal, merge state and scratch refs."""
    git_dir = repo / ".git"
    found = [p.relative_to(git_dir).as_posix() for p in git_dir.rglob("*.lock") if p.name != "rlgen.lock"]
    found += [name for name in ("rlgen-change.json", "rlgen-change.tmp", "MERGE_HEAD", "MERGE_MSG")
              if (git_dir / name).exists()]
    found += git(repo, "for-each-ref", "--format=%(refname)", "refs/rlgen/").split()
    return sorted(found)
