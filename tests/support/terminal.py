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


def answering(*args: str, replies: dict[str, list[str]], env: dict,
              timeout: float = 120) -> tuple[int, str, bytes, list[str]]:
    """(exit code, stdout, the terminal, the questions in the order asked) of ``rlgen ARGS``
    with stdin and stderr on a pseudo-terminal: each question ``PLUGIN.OPTION (...):`` gets
    the next of ``replies[PLUGIN.OPTION]``, any other one Enter (its default)."""
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "rlgen", *args], stdin=follower, stdout=subprocess.PIPE,
                             stderr=follower, env={**env, "TERM": "xterm", "COLUMNS": "400"})
    os.close(follower)
    screen, asked, deadline = b"", [], time.monotonic() + timeout
    while time.monotonic() < deadline and child.poll() is None:
        if not select.select([leader], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        screen += chunk
        last = screen.rsplit(b"\n", 1)[-1].decode(errors="replace")
        if last.rstrip(" ").endswith(":") and " (" in last:
            label = last.split(" (", 1)[0].strip()
            asked.append(label)
            answer = replies.get(label, [])
            os.write(leader, (answer.pop(0) if answer else "").encode() + b"\n")
            screen += b"\n"  # the next question starts on a line of its own, whatever the echo
    stdout = child.communicate(timeout=timeout)[0].decode()
    os.close(leader)
    return child.returncode, stdout, screen, asked
