"""Runs after an update: a run's RayJob name is a hash of what the run builds on, so when the update
changes what every run builds on (the training base or a plugin's training Component), each run
is named again; otherwise no run file is touched.

Names follow the repository's scheme (``run_naming``, :mod:`rlgen.run.naming`). Under
scheme 1 all runs are rendered by one kustomize process (a scratch kustomization listing every
run folder, each unnamed): a parent that only lists resources renders each run exactly as the
run's own folder does. Under scheme 2 names need no render; one render of all runs checks that
each still builds.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rlgen.errors import RlgenError
from rlgen.repo import answers
from rlgen.run import config, files, naming
from rlgen.run.folder import run_kustomization, run_labels
from rlgen.spec import Spec
from rlgen.tools import kustomize, repo_files, yamlio
from rlgen.tools import git_plumbing

def shared_base_changed(root: Path, before: str, after: str) -> bool:
    """Whether what every run's kustomization reaches outside its own folder changed."""
    def shared(treeish: str) -> dict:
        return {p: v for p, v in git_plumbing.tree_blobs(root, treeish).items() if naming.is_training_input(p)}
    return shared(before) != shared(after)


def repin_runs(root: Path, spec: Spec, before: str, after: str) -> list[tuple[str, str, str]]:
    """``[(run, old RayJob name, new name)]`` of the runs whose name changed."""
    if not shared_base_changed(root, before, after):
        return []
    runs = sorted(p.parent.name for p in (root / "runs").glob(f"*/{spec.run_config_key}"))
    if not runs:
        return []
    scheme = answers.read(root)["run_naming"]
    old = {run: files.pinned_name(root, run) for run in runs}
    texts = {run: repo_files.read_bytes(files.folder_of(root, run) / "kustomization.yaml", root) for run in runs}
    # Each run keeps its own size and Volcano labels: the kustomization is written anew.
    own = {run: (_size(root, spec, run), run_labels(root, run)) for run in runs}
    if scheme == naming.INPUTS:
        shared = naming.training_inputs(root)
        new = {run: naming.inputs_name(root, spec, run, own[run][1], shared) for run in runs}
    else:
        for run in runs:
            (files.folder_of(root, run) / "kustomization.yaml").write_text(
                run_kustomization(spec, run, None, scheme, *own[run]))
        new = _names(root, spec, runs)
    for run in runs:
        path = files.folder_of(root, run) / "kustomization.yaml"
        if new[run] == old[run]:
            path.write_bytes(texts[run])  # the same name: the file stays as the user left it
        else:
            path.write_text(run_kustomization(spec, run, new[run], scheme, *own[run]))
    if scheme == naming.INPUTS:
        _render_all(root, runs)  # a run that does not render must not be committed
    return [(run, old[run] or "(none)", new[run]) for run in runs if old[run] != new[run]]


def _size(root: Path, spec: Spec, run: str):
    path = files.folder_of(root, run) / spec.run_config_key
    return config.run_size(root, spec, yamlio.load(repo_files.read_text(path, root)) or {})


def _render_all(root: Path, runs: list[str]) -> str:
    scratch = Path(tempfile.mkdtemp(prefix=".rlgen-runs-", dir=root))
    try:
        (scratch / "kustomization.yaml").write_text(yamlio.dump({"resources": [f"../runs/{r}" for r in runs]}))
        return kustomize.build(scratch)
    finally:
        shutil.rmtree(scratch)


def _names(root: Path, spec: Spec, runs: list[str]) -> dict[str, str]:
    rendered = _render_all(root, runs)
    by_object = {f"{run}-{spec.rayjob_name}": run for run in runs}
    names = {}
    for doc in yamlio.load_all(rendered):
        run = by_object.get((doc.get("metadata") or {}).get("name")) if doc.get("kind") == "RayJob" else None
        if run:
            names[run] = naming.spec_hash(run, doc["spec"])
    missing = sorted(set(runs) - set(names))
    if missing:
        raise RlgenError(f"runs {', '.join(missing)} render no RayJob named <run>-{spec.rayjob_name}")
    return names
