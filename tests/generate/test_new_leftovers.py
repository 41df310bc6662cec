"""rlgen new killed at any point leaves either nothing or a complete, committed repository,
and the next run in the same folder removes a killed run's temporary folder; SIGTERM cleans
up at once like Ctrl-C; the target gets the user's umask, or keeps an existing folder's mode."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from support.repos import REQUIRED, git, ok, run_rlgen


def start_new(target):
    return subprocess.Popen([sys.executable, "-m", "rlgen", "new", str(target), *REQUIRED, "--no-input"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.endswith(".rlgen-tmp"))


def assert_complete_or_absent(target):
    if target.exists():
        assert git(target, "status", "--porcelain") == ""
        assert git(target, "log", "--format=%s").startswith("Generate with rlgen")


def test_a_killed_new_leaves_nothing_half_written(tmp_path):
    rng = random.Random(12)
    for i in range(4):
        target = tmp_path / f"repo{i}"
        process = start_new(target)
        time.sleep(rng.uniform(0.3, 2.5))
        process.send_signal(signal.SIGKILL if i % 2 == 0 else signal.SIGTERM)
        process.wait()
        if process.returncode == -signal.SIGTERM or process.returncode == 130:
            # SIGTERM: the process cleaned up its own folder (a killed round's may wait for a sweep).
            assert not [n for n in leftovers(tmp_path) if n.startswith(f".{target.name}.")]
        assert_complete_or_absent(target)
    ok(run_rlgen("new", str(tmp_path / "after"), *REQUIRED, "--no-input"))
    assert leftovers(tmp_path) == []
    assert_complete_or_absent(tmp_path / "after")


def test_a_running_new_keeps_its_temporary_folder(tmp_path):
    # A folder whose pid is alive (this test) is another run's, in progress: not swept.
    busy = tmp_path / f".other.{os.getpid()}.abc123.rlgen-tmp"
    busy.mkdir()
    dead = tmp_path / ".gone.999999999.abc123.rlgen-tmp"
    dead.mkdir()
    ok(run_rlgen("new", str(tmp_path / "repo"), *REQUIRED, "--no-input"))
    assert leftovers(tmp_path) == [busy.name]


def test_new_uses_the_umask_and_keeps_an_existing_folders_mode(tmp_path):
    existing = tmp_path / "existing"
    existing.mkdir()
    os.chmod(existing, 0o775)
    ok(run_rlgen("new", str(existing), *REQUIRED, "--no-input"))
    assert existing.stat().st_mode & 0o777 == 0o775
    old = os.umask(0o027)
    try:
        ok(run_rlgen("new", str(tmp_path / "fresh"), *REQUIRED, "--no-input"))
    finally:
        os.umask(old)
    assert (tmp_path / "fresh").stat().st_mode & 0o777 == 0o750


def test_a_parent_that_is_a_file_is_one_error_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    result = run_rlgen("new", str(tmp_path / "afile" / "sub"), *REQUIRED, "--no-input")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "afile" in result.stderr and "Traceback" not in result.stderr
