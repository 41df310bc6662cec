"""The grid of ``rlgen run sweep``: its ``--grid KEY=VALUES`` options read, the points of their
cartesian product in order, and each point's run name. Nothing here reads the repository, so a
grid too large or malformed is refused before the command takes its lock.

VALUES is a YAML flow sequence when it starts with ``[`` (``KEY=[1e-6, "a,b"]``), the way to
write a value holding a comma, or a list value (``KEY=[[a, b], [c]]``); otherwise it is split at
every comma and each piece read as YAML, like a ``--set`` value.
"""
from __future__ import annotations

import itertools
from typing import Any

from rlgen.errors import RlgenError
from rlgen.naming import dns1035_label_error
from rlgen.run.config import show
from rlgen.verl import keys

def parse(options: tuple[str, ...]) -> dict[str, list[Any]]:
    """``{key: [values]}`` in the order the options gave them."""
    grid: dict[str, list[Any]] = {}
    for option in options:
        key, values = _one(option)
        if key in grid:
            raise RlgenError(f"--grid {key} is given twice: list all its values in one --grid {key}=V1,V2")
        grid[key] = values
    return grid


def _one(option: str) -> tuple[str, list[Any]]:
    key, sep, raw = option.partition("=")
    if not sep:
        raise RlgenError(f"--grid: expected KEY=V1,V2 with a dotted verl key, got '{option}'")
    if raw.lstrip().startswith("["):
        key, values = keys.parse(option)
        if not isinstance(values, list):  # e.g. "[a] b": YAML reads a string
            raise RlgenError(f"--grid {key}: '{raw}' is not one YAML flow list like [1e-6, 3e-6]")
    else:
        pieces = raw.split(",")
        if any(not piece.strip() for piece in pieces):
            raise RlgenError(f"--grid {key.strip()}: an empty value in '{raw}' (write null for a null, "
                             "[...] for values holding commas)")
        parsed = [keys.parse(f"{key}={piece}") for piece in pieces]
        key, values = parsed[0][0], [value for _, value in parsed]
    if not values:
        raise RlgenError(f"--grid {key}: no values")
    shown = [show(value) for value in values]
    if twice := next((s for i, s in enumerate(shown) if s in shown[:i]), None):
        raise RlgenError(f"--grid {key}: {twice} is given twice (two runs would be the same)")
    return key, values


def points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """One ``{key: value}`` per run: the first key varies slowest, the last fastest."""
    return [dict(zip(grid, combination)) for combination in itertools.product(*grid.values())]


def check_count(count: int, max_runs: int) -> None:
    if count > max_runs:
        raise RlgenError(f"the grid makes {count} runs, more than --max-runs {max_runs}: "
                         f"pass --max-runs {count} to make them all")


def run_names(sweep: str, count: int) -> list[str]:
    """``<sweep>-1`` ... in grid order, numbers padded to one width so the names sort in that order."""
    width = len(str(count))
    if problem := dns1035_label_error(sweep, 63 - 1 - width):
        raise RlgenError(f"sweep name {problem} (its runs are {sweep}-{1:0{width}d} to {sweep}-{count})")
    return [f"{sweep}-{i:0{width}d}" for i in range(1, count + 1)]


def point_text(point: dict[str, Any]) -> str:
    return ", ".join(f"{key}={show(value)}" for key, value in point.items())
