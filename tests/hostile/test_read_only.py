"""A read-only repository: its work tree or its .git made read-only with chmod. Each committing
command refuses it before writing (exit 2, one line naming the read-only path) and leaves the
repository as it was. chmod does not stop root, so as root the command runs as the
unprivileged user ``nobody`` on a copy that user owns (the test skips, saying so, when there
is no such user to run as)."""
from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.hostile import record, repository_state
from support.toolchain import tool

COMMANDS = {
    "run-new": ("run", "new", "second"),
    "run-set": ("run", "set", "baseline", "trainer.total_epochs=3"),
    "run-rm": ("run", "rm", "baseline"),
    "update": ("update", "--set", "ak-storage.bucket=other-bucket"),
    "cluster-add": ("cluster", "add", "second", "--env", "staging"),
}
#: What is made read-only, and the text the one error line holds.
PARTS = {"git-dir": ".git", "work-tree": "work tree", "runs-folder": "runs"}
CASES = [(c, p) for c in COMMANDS for p in PARTS if p != "runs-folder" or c.startswith("run-")]


def _user() -> tuple[int, int] | None:
    """(uid, gid) to run as: None for the current user, unless that is root."""
    if os.getuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root, which chmod does not stop, and no user 'nobody' to run the command as")
    return entry.pw_uid, entry.pw_gid


@pytest.fixture(scope="module")
def open_folder():
    """A folder ``nobody`` can reach (pytest's own temporary folders are the owner's alone),
    with a copy of kustomize it may run."""
    folder = Path(tempfile.mkdtemp(prefix="rlgen-read-only-"))
    folder.chmod(0o755)
    (folder / "bin").mkdir()
    shutil.copy2(tool("kustomize"), folder / "bin" / "kustomize")
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    shutil.rmtree(folder)


def _chmod(paths, writable: bool) -> None:
    for path in paths:
        mode = path.lstat().st_mode
        if not path.is_symlink():
            path.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _tree(root: Path, part: str) -> list[Path]:
    if part == "git-dir":
        top = root / ".git"
        return [top, *top.rglob("*")]
    if part == "runs-folder":
        top = root / "runs"
        return [top, *top.rglob("*")]
    return [root, *(p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts)]


@pytest.mark.parametrize(("name", "part"), CASES, ids=[f"{c}-{p}" for c, p in CASES])
def test_a_read_only_repository_is_refused(name, part, generate, open_folder, record_property):
    user = _user()
    case = open_folder / f"{name}-{part}"
    repo = Path(shutil.copytree(generate(), case / "repo", symlinks=True))
    (case / "home").mkdir()
    (case / "tmp").mkdir()
    before = repository_state(repo)
    if user:
        for path in [case, *case.rglob("*")]:
            os.lchown(path, *user)
    _chmod(_tree(repo, part), writable=False)

    def drop():
        if user:
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])

    env = {**os.environ, "HOME": str(case / "home"), "TMPDIR": str(case / "tmp"),
           "PATH": f"{open_folder / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    try:
        result = subprocess.run([sys.executable, "-m", "rlgen", *COMMANDS[name]], cwd=repo, capture_output=True,
                                text=True, env=env, preexec_fn=drop, timeout=300)
    finally:
        _chmod(_tree(repo, part), writable=True)
        if user:
            for path in [case, *case.rglob("*")]:
                os.lchown(path, 0, 0)
    after = repository_state(repo)
    leftovers = sorted(p.name for p in (case / "tmp").iterdir())
    record(record_property, expected=2, result=result, changed=after != before,
           leftovers=after["leftovers"] + leftovers)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "read-only" in lines[0] or "Permission denied" in lines[0], lines[0]
    assert after == before
    assert leftovers == []
