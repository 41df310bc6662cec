"""What every rule shares: the rendered objects it reads and the findings it yields (the
same types a plugin's ``rlgen_validate_rules`` hook receives and returns)."""
from __future__ import annotations

from typing import Iterable

from rlgen.contributions import Finding, Rendered
from rlgen.repo.layout import RUNS_INDEX

__all__ = ["Finding", "Rendered", "by_run_file", "findings_by_run_file", "run_file"]


def run_file(source: str, label: str, runs: Iterable[str], config_key: str) -> str:
    """Where a user edits an object of the ``runs/`` root: ``runs/<run>/run.yaml`` (every object
    of a run carries the run's name as its prefix; the longest run name wins); ``source`` as it
    is for any other object."""
    root = RUNS_INDEX.rsplit("/", 1)[0]
    if source != root:
        return source
    name = label.rsplit("/", 1)[-1]
    run = next((r for r in sorted(runs, key=len, reverse=True) if name.startswith(f"{r}-")), None)
    return f"{root}/{run}/{config_key}" if run else source


def by_run_file(objects: list[Rendered], runs: Iterable[str], config_key: str) -> list[Rendered]:
    """``objects`` with the source a user edits (:func:`run_file`)."""
    runs = list(runs)
    return [Rendered(run_file(o.source, o.label, runs, config_key), o.obj, o.trainer_config) for o in objects]


def findings_by_run_file(findings: list[Finding], runs: Iterable[str], config_key: str) -> list[Finding]:
    """``findings`` naming the file a user edits (:func:`run_file`)."""
    runs = list(runs)
    return [Finding(run_file(f.source, f.obj, runs, config_key), f.obj, f.message, f.fix) for f in findings]
