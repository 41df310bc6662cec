"""A hub download that ends at a deadline however slowly the hub answers.

The hubs' clients bound each read (a socket timeout), not the whole: a server that sends a byte
every few seconds holds them for ever, and their threads cannot be stopped from outside. So the
download runs in a child process, stopped at the deadline; both hubs resume a partial file on
the next run, so stopping loses only the time spent.
"""
from __future__ import annotations

import multiprocessing
from typing import Any, Callable

from rlgen.errors import RlgenError
from rlgen.tools import children

#: How long a stopped child may take to exit before it is killed.
STOP_SECONDS = 10


def call(fn: Callable[..., Any], args: tuple, deadline: float, what: str, option: str) -> Any:
    """``fn(*args)`` in a child process, its value (picklable) or its :class:`RlgenError` raised
    here; past ``deadline`` seconds an RlgenError naming ``what`` and ``option``."""
    # spawn, not fork: the parent may be drawing progress from a thread of its own.
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(deadline):
            raise RlgenError(f"{what} did not finish within the deadline of {deadline:g} s ({option}); "
                             "run it again: the download resumes")
        try:
            ok, value = receive.recv()
        except EOFError:
            child.join(STOP_SECONDS)
            raise RlgenError(f"{what} ended without a result (exit code {child.exitcode})") from None
    finally:
        _stop(child)
    if not ok:
        raise RlgenError(value)
    return value


def _child(send, fn, args) -> None:
    if ends := children.die_with_parent():
        ends()  # a killed rlgen leaves no download running
    try:
        send.send((True, fn(*args)))
    except RlgenError as exc:
        send.send((False, str(exc)))
    except KeyboardInterrupt:
        pass  # the parent says "interrupted"


def _stop(child) -> None:
    child.join(0.1)
    if child.is_alive():
        child.terminate()
        child.join(STOP_SECONDS)
    if child.is_alive():
        child.kill()
        child.join()
