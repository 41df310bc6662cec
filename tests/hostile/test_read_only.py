"""A read-only repository: its work tree, its .git or the runs folder made read-only with chmod.
Each committing command refuses it before writing (exit 2, one line naming the read-only path)
and leaves the repository as it was. chmod does not stop root: as root the command runs with
the capabilities that override file permissions dropped (setpriv), so the modes hold; without
setpriv the test skips, saying so."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile import record, repository_state
from support.toolchain import missing

COMMANDS = {
    "run-new": ("run", "new", "second"),
    "run-set": ("run", "set", "baseline", "trainer.total_epochs=3"),
    "run-rm": ("run", "rm", "baseline"),
    "update": ("update", "--set", "ak-storage.bucket=other-bucket"),
    "cluster-add": ("cluster", "add", "second", "--env", "staging"),
}
PARTS = ("git-dir", "work-tree", "runs-folder")
CASES = [(c, p) for c in COMMANDS for p in PARTS if p != "runs-folder" or c.startswith("run-")]
#: Root's capabilities that bypass file modes.
OVERRIDES = "-dac_override,-dac_read_search,-fowner"


def _prefix() -> list[str]:
    if os.getuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        missing("running as root, which chmod does not stop, and setpriv (util-linux) is missing to drop "
                    "the capabilities that override file modes")
    return [setpriv, f"--bounding-set={OVERRIDES}", "--"]


def _tree(root: Path, part: str) -> list[Path]:
    if part in ("git-dir", "runs-folder"):
        top = root / (".git" if part == "git-dir" else "runs")
        return [top, *top.rglob("*")]
    return [root, *(p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts)]


def _chmod(paths: list[Path], writable: bool) -> None:
    for path in paths:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.mark.parametrize(("name", "part"), CASES, ids=[f"{c}-{p}" for c, p in CASES])
def test_a_read_only_repository_is_refused(name, part, generate, tmp_path, record_property):
    prefix = _prefix()
    repo = Path(shutil.copytree(generate(), tmp_path / "repo", symlinks=True))
    (tmp_path / "tmp").mkdir()
    before = repository_state(repo)
    _chmod(_tree(repo, part), writable=False)
    try:
        result = subprocess.run([*prefix, sys.executable, "-m", "rlgen", *COMMANDS[name]], cwd=repo,
                                capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
                                timeout=300)
    finally:
        _chmod(_tree(repo, part), writable=True)
    after = repository_state(repo)
    leftovers = sorted(p.name for p in (tmp_path / "tmp").iterdir())
    record(record_property, expected=2, result=result, changed=after != before,
           leftovers=after["leftovers"] + leftovers)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "read-only" in lines[0], lines[0]
    assert after == before
    assert leftovers == []
