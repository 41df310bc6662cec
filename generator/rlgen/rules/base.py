"""What every rule shares: the rendered objects it reads and the findings it yields (the
same types a plugin's ``rlgen_validate_rules`` hook receives and returns)."""
from __future__ import annotations

from typing import Iterable

from rlgen.contributions import Finding, Rendered
from rlgen.repo.layout import RUNS, is_runs_root

__all__ = ["Finding", "Rendered", "by_run_file", "findings_by_run_file", "run_file"]


def run_file(source: str, label: str, runs: Iterable[str], config_key: str) -> str:
    """Where a user edits an object of an environment's runs root: ``runs/<run>/run.yaml`` (every
    object of a run carries the run's name as its prefix; the longest run name wins); ``source``
    as it is for any other object."""
    return _RunFiles(runs, config_key)(source, label)


def by_run_file(objects: list[Rendered], runs: Iterable[str], config_key: str) -> list[Rendered]:
    """``objects`` with the source a user edits (:func:`run_file`)."""
    where = _RunFiles(runs, config_key)
    return [Rendered(where(o.source, o.label), o.obj, o.trainer_config) for o in objects]


def findings_by_run_file(findings: list[Finding], runs: Iterable[str], config_key: str) -> list[Finding]:
    """``findings`` naming the file a user edits (:func:`run_file`)."""
    where = _RunFiles(runs, config_key)
    return [Finding(where(f.source, f.obj), f.obj, f.message, f.fix) for f in findings]


class _RunFiles:
    """:func:`run_file` for many objects: a name's prefixes up to each ``-`` are looked up,
    longest first, rather than every run tried against every object."""

    def __init__(self, runs: Iterable[str], config_key: str) -> None:
        self.runs, self.config_key = set(runs), config_key

    def __call__(self, source: str, label: str) -> str:
        if not is_runs_root(source):
            return source
        name = label.rsplit("/", 1)[-1]
        end = len(name)
        while (end := name.rfind("-", 0, end)) > 0:
            if name[:end] in self.runs:
                return f"{RUNS}/{name[:end]}/{self.config_key}"
        return source
