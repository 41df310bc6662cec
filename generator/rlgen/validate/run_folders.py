"""Files in a run folder that are not the run's. A run is its ``run.yaml`` and its
kustomization; anything else a merge brings into ``runs/<run>/`` (a ClusterRoleBinding, a
Secret, a Deployment elsewhere) is no part of a run, and would reach the cluster with the runs
stage's rights (Argo CD's runs AppProject refuses it; Flux's runs stage applies with Flux's own).
Named here, on the pull request, before the merge."""
from __future__ import annotations

from pathlib import Path

from rlgen.repo.layout import RUNS
from rlgen.rules.base import Finding

#: What a run folder holds besides run.yaml (``Spec.run_config_key``).
RUN_KUSTOMIZATION = "kustomization.yaml"
FIX = "remove it: a run changes through rlgen run; other objects go outside runs/, where the platform team reviews them"


def foreign_findings(repo: Path, config_key: str, namespace: str, target: Path | None = None) -> list[Finding]:
    """One finding per file under ``runs/<run>/`` other than the run's own two (with ``target``,
    only those it holds or lies in)."""
    folder = repo / RUNS
    rel = None if target is None or target.resolve() == repo else target.resolve().relative_to(repo).as_posix()
    found = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        parts = path.relative_to(folder).parts
        if not path.is_file() or any(p.startswith(".") for p in parts):
            continue
        if len(parts) == 2 and parts[1] in (config_key, RUN_KUSTOMIZATION):
            continue
        shown = path.relative_to(repo).as_posix()
        if rel is not None and not (shown == rel or shown.startswith(rel + "/") or rel.startswith(f"{RUNS}/{parts[0]}")):
            continue
        run = parts[0] if len(parts) > 1 else None
        whose = f"run {run}" if run else "any run"
        found.append(Finding(shown, f"file/{path.name}",
                             f"not a file of {whose} (a run folder holds {config_key} and {RUN_KUSTOMIZATION}): "
                             f"a run is a RayJob and its ConfigMap in {namespace}, nothing else", FIX))
    return found
