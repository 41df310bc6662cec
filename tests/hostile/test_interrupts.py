"""Hostile timing: a ``rlgen run new`` stopped by SIGTERM in the middle of its commit (a slow
pre-commit hook holds it there) exits 130 after putting the repository back: no run/NAME
branch, HEAD where it was, a clean tree, a rerun that succeeds, and the hook ended with it
(it once went on running). A signal that arrives while a child process starts, in the parent
or in the child before it runs its program, is an interrupt, never lost nor a traceback."""
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
    pids = tmp_path / "hook-pids"
    hook.write_text(f"#!/bin/sh\nsleep 30 &\necho $$ $! > '{pids}'\ntouch '{marker}'\nwait\n")
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
    # The hook and what it started are gone, not left running after rlgen exited.
    assert [pid for pid in map(int, pids.read_text().split()) if _running(pid)] == []
    hook.unlink()
    rerun = subprocess.run([sys.executable, "-m", "rlgen", "run", "new", "second"], cwd=repo,
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for a parent (a container's PID 1 may never reap it)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


#: A child that sends SIGTERM between fork and exec, to itself or to rlgen (its parent), as a
#: SIGTERM to the whole process group does when it lands then.
_SPAWN = """
import os, signal, subprocess, sys, time
from rlgen.tools import children, signals
target = sys.argv[1]
def preexec():
    os.kill(os.getpid() if target == "child" else os.getppid(), signal.SIGTERM)
signals.install()
try:
    result = children.run(["sh", "-c", "echo started; exec sleep 30"], preexec_fn=preexec, text=True)
    print("finished", result.returncode, result.stdout.strip())
except KeyboardInterrupt:
    print("interrupted")
"""


def test_sigterm_in_a_child_before_it_runs_its_program_is_not_an_error():
    """The child ignores it (the parent, which a group's SIGTERM reaches too, acts): Python
    used to raise KeyboardInterrupt inside the child, reported as a SubprocessError."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", _SPAWN, "child"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "preexec_fn" not in err, err
    assert out.strip() == "interrupted", out + err
    assert time.monotonic() - started < 15


def test_sigterm_to_the_parent_while_a_child_starts_is_raised_once_the_child_is_known():
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", _SPAWN, "parent"], capture_output=True, text=True, timeout=30)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout.strip() == "interrupted", result.stdout + result.stderr
    # The child (its sleep of 30 s) was ended, not waited for.
    assert time.monotonic() - started < 15
