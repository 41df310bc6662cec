"""Runs after an update: a run's RayJob name is a hash of its rendered spec, so when the update
changes what every run builds on (the training base or a plugin's training Component), each run
is named again; otherwise no run file is touched."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlgen.generate.kustomizations import TRAINING_BASE
from rlgen.runs import folders
from rlgen.spec import Spec
from rlgen.update import plumbing

#: Everything a run's kustomization reaches outside its own folder.
SHARED = (f"{TRAINING_BASE}/", "components/")


def shared_base_changed(root: Path, before: str, after: str) -> bool:
    def shared(treeish: str) -> dict:
        return {p: v for p, v in plumbing.tree_blobs(root, treeish).items() if p.startswith(SHARED)}
    return shared(before) != shared(after)


def repin_runs(root: Path, spec: Spec, before: str, after: str) -> list[tuple[str, str, str]]:
    """``[(run, old RayJob name, new name)]`` of the runs whose name changed."""
    if not shared_base_changed(root, before, after):
        return []
    runs = sorted(p.parent.name for p in (root / "runs").glob(f"*/{spec.run_config_key}"))
    old = {run: folders.pinned_name(root, run) for run in runs}
    # Each run is one kustomize process: threads only wait on them.
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        new = dict(zip(runs, pool.map(lambda run: _rename(root, spec, run, old[run]), runs)))
    return [(run, old[run] or "(none)", new[run]) for run in runs if old[run] != new[run]]


def _rename(root: Path, spec: Spec, run: str, old: str | None) -> str:
    path = folders.folder(root, run) / "kustomization.yaml"
    text = path.read_bytes()
    name = folders.name_run(root, spec, run)
    if name == old:
        path.write_bytes(text)  # the same name: the file stays as the user left it
    return name
