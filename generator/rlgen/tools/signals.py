"""SIGTERM (a CI timeout, ``kill``, a pod being stopped) handled like Ctrl-C, so the cleanup
that runs for KeyboardInterrupt (temporary folders, incomplete uploads) runs for it too."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
