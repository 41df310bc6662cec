"""Leftover merge conflict markers in committable files (an ``rlgen update`` or any merge).

The rules see rendered objects only, and a file with markers rarely renders at all, so this
scans the files themselves, before anything is rendered.
"""
from __future__ import annotations

import re
from pathlib import Path

from rlgen.tools import git, repo_files
from rlgen.rules.base import Finding

# git writes exactly seven characters, the ours/theirs markers followed by a label.
_START, _MIDDLE, _END = re.compile(rb"^<{7}( |$)"), re.compile(rb"^={7}$"), re.compile(rb"^>{7}( |$)")


def conflict_findings(repo: Path) -> list[Finding]:
    # A question, asked the cheaper way (nothing to tie to rlgen's life: it changes nothing).
    listing = git.start(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")()
    findings = []
    for rel in sorted(set(filter(None, listing.split("\0")))):
        path = repo / rel
        if path.is_file() and (line := _first_conflict(repo_files.read_bytes(path, repo))):
            findings.append(Finding(rel, "(file)", f"merge conflict markers from line {line}: resolve them"))
    return findings


def _first_conflict(data: bytes) -> int | None:
    """The line of the first complete ``<<<<<<< / ======= / >>>>>>>`` block, if any."""
    if b"<<<<<<<" not in data:
        return None
    start, middle = None, False
    for number, line in enumerate(data.splitlines(), 1):
        if _START.match(line):
            start, middle = number, False
        elif start and _MIDDLE.match(line):
            middle = True
        elif start and middle and _END.match(line):
            return start
    return None
