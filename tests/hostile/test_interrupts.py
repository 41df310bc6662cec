"""Hostile timing: a ``rlgen run new`` stopped by SIGTERM in the middle of its commit (a slow
pre-commit hook holds it there) exits 130 after putting the repository back: no run/NAME
branch, HEAD where it was, a clean tree, and a rerun that succeeds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.repos import git


def test_sigterm_during_run_new_rolls_back_and_exits_130(repo: Path, tmp_path):
    marker = tmp_path / "hook-started"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\nsleep 20\n")
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD")
    proc = subprocess.Popen([sys.executable, "-m", "rlgen", "run", "new", "second"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), proc.communicate()
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "rlgen: interrupted"
    assert git(repo, "branch", "--list", "run/second") == ""
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    hook.unlink()
    rerun = subprocess.run([sys.executable, "-m", "rlgen", "run", "new", "second"], cwd=repo,
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
