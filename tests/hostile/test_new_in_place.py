"""``rlgen new .`` in an empty folder the shell stands in: the folder is filled in place, so the
shell's folder is the repository (same inode) and the next command there works, as it does in
an empty clone whose remote is kept."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile import record
from support.repos import GIT_URL, REQUIRED


@pytest.mark.parametrize("clone", [False, True], ids=["empty-folder", "empty-clone"])
def test_new_dot_fills_the_folder_the_shell_stands_in(clone, tmp_path, record_property):
    here = tmp_path / "here"
    here.mkdir()
    required = list(REQUIRED)
    if clone:
        subprocess.run(["git", "init", "-q", "-b", "main", str(here)], check=True)
        subprocess.run(["git", "-C", str(here), "remote", "add", "origin", GIT_URL], check=True)
        at = required.index(f"rlgen.git_url={GIT_URL}")
        del required[at - 1:at + 1]  # taken from origin
    inode = here.stat().st_ino
    (tmp_path / "tmp").mkdir()
    # One shell: rlgen new ., then git and rlgen in the same working directory.
    script = (f'"{sys.executable}" -m rlgen new . {" ".join(repr(a) for a in required)} --no-input -o json >/dev/null'
              f' && git status --porcelain && git log --format=%s && "{sys.executable}" -m rlgen run list -o json')
    result = subprocess.run(["sh", "-c", script], cwd=here, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    record(record_property, expected=0, result=result)
    assert result.returncode == 0, result.stderr
    assert here.stat().st_ino == inode
    assert (here / "rlgen.yaml").is_file() and "Generate with rlgen" in result.stdout
    assert '"baseline"' in result.stdout or "baseline" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "tmp"]
    assert not [p for p in here.iterdir() if p.name.endswith(".rlgen-tmp")]
    if clone:
        assert subprocess.run(["git", "-C", str(here), "remote", "get-url", "origin"], capture_output=True,
                              text=True).stdout.strip() == GIT_URL
