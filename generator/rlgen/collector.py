"""Python's cyclic garbage collector, paused for a command that lasts seconds: such a command
(``validate``, ``diff``) makes next to no reference cycles, and the collector would walk every
parsed object again and again, and all of them once more as Python exits."""
from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    gc.disable()
    # What is alive at exit is left to the operating system, not walked once more.
    atexit.register(gc.freeze)
    try:
        yield
    finally:
        gc.enable()
