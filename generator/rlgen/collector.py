"""The interpreter's own costs in a command that lasts a fraction of a second to seconds.

Python's cyclic garbage collector is paused (:func:`paused`): such a command (``validate``,
``diff``) makes next to no reference cycles, and the collector would walk every parsed object
again and again, and all of them once more as Python exits. And modules a command needs only
after its first git questions are imported while git answers them (:func:`import_meanwhile`)."""
from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module


@contextmanager
def paused() -> Iterator[None]:
    gc.disable()
    # What is alive at exit is left to the operating system, not walked once more.
    atexit.register(gc.freeze)
    try:
        yield
    finally:
        gc.enable()


def import_meanwhile(*modules: str) -> threading.Thread:
    """Import ``modules`` on a thread of their own: a command that is about to wait for git
    spends that time importing what it uses next, instead of importing after the answer.
    Where the command imports them itself, the import returns at once, or waits for this one
    to finish; a failing import is left for that one to report. (No rlgen module imports
    another in a circle, so two threads importing at once never wait on each other.)"""
    def run() -> None:
        for name in modules:
            try:
                import_module(name)
            except BaseException:  # noqa: B036 - the command's own import says what failed
                return

    thread = threading.Thread(target=run, name="import-meanwhile", daemon=True)
    thread.start()
    return thread
