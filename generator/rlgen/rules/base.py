"""What every rule shares: the rendered objects it reads and the findings it yields (the
same types a plugin's ``rlgen_validate_rules`` hook receives and returns)."""
from __future__ import annotations

from typing import Iterable

from rlgen.contributions import Finding, Rendered
from rlgen.repo.layout import RUNS_INDEX

__all__ = ["Finding", "Rendered", "by_run_file"]


def by_run_file(objects: list[Rendered], runs: Iterable[str], config_key: str) -> list[Rendered]:
    """The objects of the ``runs/`` root named by the file a user edits, ``runs/<run>/run.yaml``
    (every object of a run carries the run's name as its prefix; the longest run name wins)."""
    root = RUNS_INDEX.rsplit("/", 1)[0]
    names = sorted(runs, key=len, reverse=True)
    out = []
    for o in objects:
        name = str((o.obj.get("metadata") or {}).get("name") or "")
        run = next((r for r in names if name.startswith(f"{r}-")), None) if o.source == root else None
        out.append(Rendered(f"{root}/{run}/{config_key}", o.obj) if run else o)
    return out
