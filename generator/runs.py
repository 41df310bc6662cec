"""Training runs as folders: ``runs/<run>/`` builds the training base under its own names.

KubeRay ignores edits to a started RayJob and never re-runs a finished one, so a run's
RayJob is named ``<run>-<hash of its rendered spec>``: an edit renders as a new RayJob and
the sync engine prunes the old one.
"""
from __future__ import annotations

from pathlib import Path

from rlgen import kustomize, yamlio
from rlgen.naming import MAX_RAYJOB_NAME, hashed_name
from rlgen.spec import Spec

RENAME_TRANSFORMER = "rayjob-name"


def run_kustomization(spec: Spec, run: str, rayjob_name: str | None) -> str:
    doc: dict = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../../base/training"],
        # Every object of the run carries its name, so runs never collide in one namespace.
        "namePrefix": f"{run}-",
        "configMapGenerator": [{
            "name": spec.trainer_configmap,
            "behavior": "merge",
            "files": [spec.run_config_key],
        }],
    }
    if rayjob_name:
        # A transformer runs after namePrefix, so the RayJob gets exactly this name.
        doc["transformers"] = [yamlio.dump({
            "apiVersion": "builtin",
            "kind": "PatchTransformer",
            "metadata": {"name": RENAME_TRANSFORMER},
            "target": {"kind": "RayJob"},
            "patch": f'[{{"op": "replace", "path": "/metadata/name", "value": "{rayjob_name}"}}]',
        }).rstrip("\n")]
    comment = (f"Training run '{run}'. Change it in run.yaml; the RayJob name below is set by\n"
               "`rlgen run` from a hash of the rendered run, so an edit starts a new RayJob.")
    return yamlio.dump(doc, comment)


def rayjob_name(run: str, rendered: str) -> str:
    """The name for a run rendered without its rename transformer."""
    for doc in yamlio.load_all(rendered):
        if doc.get("kind") == "RayJob":
            return hashed_name(run, yamlio.dump(doc["spec"]).encode(), MAX_RAYJOB_NAME)
    raise ValueError(f"run {run} renders no RayJob")


def name_run(repo: Path, spec: Spec, run: str) -> str:
    """Render ``runs/<run>`` and pin its RayJob name into its kustomization."""
    folder = repo / "runs" / run
    (folder / "kustomization.yaml").write_text(run_kustomization(spec, run, None))
    name = rayjob_name(run, kustomize.build(folder))
    (folder / "kustomization.yaml").write_text(run_kustomization(spec, run, name))
    return name


def runs_index(runs: list[str]) -> str:
    doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": sorted(runs)}
    return yamlio.dump(doc, "The active training runs: removing one here (or its folder) prunes its RayJob.")
