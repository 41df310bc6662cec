"""SIGTERM (a CI timeout, ``kill``, a pod being stopped) handled like Ctrl-C, so the cleanup
that runs for KeyboardInterrupt (temporary folders, incomplete uploads, child processes) runs
for it too; and the moment a child process starts, when a signal must neither be lost nor be
handled by the child.

Between fork and exec a child started with a ``preexec_fn`` runs Python code with rlgen's
handlers: a SIGTERM sent to the whole process group then raised KeyboardInterrupt inside the
child, which Python reports to the parent as "Exception occurred in preexec_fn", not as an
interrupt. The handlers here ignore the signal in any process but the one that installed them
(the parent hears the same signal and ends the child), and :func:`deferred` holds a signal
that arrives while a child starts until the parent knows the child it must end.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

#: The signals rlgen turns into KeyboardInterrupt, and holds while a child starts.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> None:
    """SIGTERM raises KeyboardInterrupt in this process, for the whole command (rlgen.cli)."""
    if _main_thread():
        signal.signal(signal.SIGTERM, _interrupt_in(os.getpid()))


def _interrupt_in(owner: int):
    def interrupt(signum, frame):
        if os.getpid() == owner:  # in a child not yet exec'd, the parent acts
            raise KeyboardInterrupt
    return interrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt_in(os.getpid()))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def deferred() -> Iterator[None]:
    """SIGINT and SIGTERM held for the block (a child's start): each that arrived is raised
    again when it ends, through the handler in place before (KeyboardInterrupt, or the
    default: the process ends). Ignored in a forked child that runs Python before exec."""
    if not _main_thread():
        yield
        return
    owner, arrived = os.getpid(), []

    def hold(signum, frame):
        if os.getpid() == owner:
            arrived.append(signum)

    previous = {s: signal.signal(s, hold) for s in INTERRUPTS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)
