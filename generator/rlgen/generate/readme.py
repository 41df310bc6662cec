"""What the README and workflow templates are told: the selection, the first run, the Secrets
to create and each plugin's own sections."""
from __future__ import annotations

from rlgen import __version__
from rlgen.contributions import SecretRef
from rlgen.generate import skeleton
from rlgen.generate.filetree import FileTree
from rlgen.registry.selection import Selection
from rlgen.spec import Spec


def render(tree: FileTree, spec: Spec, selection: Selection, run: str, secrets: list[SecretRef],
           sections: list[str]) -> None:
    skeleton.render(tree, {
        "rlgen_version": __version__,
        "namespace": spec.namespace,
        "cluster": spec.cluster,
        "environment": spec.environment,
        "run": run,
        "plugins": dict(selection.plugins),
        "secrets": [_secret(s) for s in secrets],
        "sections": sections,
        "dataset_dir": spec.dataset_dir(),
        "bucket_note": f"Upload the model `{spec.model}` to `{spec.model_bucket_path}/` in the bucket; "
                       f"the dataset Job uploads `{spec.dataset_bucket_prefix()}`; checkpoints go to "
                       f"`{spec.volumes['checkpoints'].bucket_prefix}/<run>/`.",
    })


def _secret(s: SecretRef) -> dict:
    return {"name": s.name, "namespace": s.namespace, "secret_keys": list(s.keys), "purpose": s.purpose,
            "used_by": s.used_by, "env": [skeleton.secret_env(s.name, k, len(s.keys) == 1) for k in s.keys]}
