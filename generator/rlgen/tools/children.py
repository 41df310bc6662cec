"""Every child process rlgen runs and waits for starts here, in a process group of its own:
when rlgen is interrupted (Ctrl-C, SIGTERM) it ends the whole group, the child and whatever
the child started (a repository's pre-commit hook under ``git commit``, its ``sleep``), not the
child alone, which left a slow hook running after rlgen had exited. A signal that arrives while
the child starts is held until the child is known (:func:`rlgen.tools.signals.deferred`).

A child in a group of its own hears no Ctrl-C from the terminal: rlgen, which does, ends it.
So only children that never read the terminal start here (git with prompts off or none to make,
sops, kustomize): a background group that reads the terminal is stopped by it.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from functools import lru_cache
from typing import Any, Sequence

from rlgen.tools import signals

#: Seconds an ended group has to exit on SIGTERM before SIGKILL.
GRACE_SECONDS = 2.0


def popen(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(argv, **kwargs)`` in a new process group; interrupted while it
    starts, the child's group is ended and the interrupt raised."""
    proc = None
    try:
        with signals.deferred():
            proc = subprocess.Popen(list(argv), process_group=0, **kwargs)
    except BaseException:
        if proc is not None:
            end(proc)
        raise
    return proc


def run(argv: Sequence[str], *, input: Any = None, capture_output: bool = True, text: bool = False,
        **kwargs: Any) -> subprocess.CompletedProcess:
    """As ``subprocess.run`` (no ``check``, no timeout), the child in a group of its own that
    an interrupt ends whole."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    proc = popen(argv, text=text, **kwargs)
    try:
        out, err = proc.communicate(input)
    except BaseException:
        end(proc)
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def end(proc: subprocess.Popen) -> None:
    """End ``proc``'s process group: SIGTERM, then SIGKILL after :data:`GRACE_SECONDS`. A
    second interrupt meanwhile is held until the group is gone."""
    with signals.deferred():
        _signal_group(proc, signal.SIGTERM)
        until = time.monotonic() + GRACE_SECONDS
        try:
            proc.wait(GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        # The child may be gone and what it started (a hook) not yet.
        while _signal_group(proc, 0) and time.monotonic() < until:
            time.sleep(0.05)
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s process group at once, waiting for nothing: for children whose work is
    abandoned (a build nobody will read), whose pipes must close now."""
    _signal_group(proc, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen, signum: int) -> bool:
    """Whether the group still had a process to signal."""
    try:
        os.killpg(proc.pid, signum)
        return True
    except (ProcessLookupError, PermissionError):
        return False


@lru_cache(maxsize=1)
def die_with_parent():
    """What a child runs before it starts (None: nothing), so that it never outlives a killed
    rlgen: a git that did would go on changing the repository while the next rlgen repairs it.
    On Linux the kernel ends it with its parent (prctl PR_SET_PDEATHSIG). The function is looked
    up here, in rlgen: importing ctypes in every child cost more than most git calls."""
    if sys.platform != "linux":
        return None

    prctl = ctypes.CDLL(None).prctl
    return lambda: prctl(1, signal.SIGKILL)
