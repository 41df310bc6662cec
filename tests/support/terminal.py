"""rlgen run with its stderr on a pseudo-terminal, as a user at a shell sees it: what a
progress display draws is read from the terminal, stdout from a pipe."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time


def on_terminal(*args: str, env: dict, timeout: float = 60) -> tuple[int, str, bytes]:
    """(exit code, stdout, everything written to the terminal) of ``rlgen ARGS``."""
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "rlgen", *args], stdout=subprocess.PIPE, stderr=follower,
                             env={**env, "TERM": "xterm", "COLUMNS": "120"})
    os.close(follower)
    screen, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([leader], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    stdout = child.communicate(timeout=timeout)[0].decode()
    os.close(leader)
    return child.returncode, stdout, screen
