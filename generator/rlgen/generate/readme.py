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
        "bucket_note": _bucket_note(spec),
    })


def _bucket_note(spec: Spec) -> str:
    revision = f" --revision {spec.model_revision}" if spec.model_revision else ""
    return (
        f"The model Job downloads `{spec.model}` from {spec.model_source} and uploads it to "
        f"`{spec.model_bucket_path}/` in the bucket, where the trainer loads it as `{spec.model_path}`; "
        f"the dataset Job uploads `{spec.dataset_bucket_prefix()}`; checkpoints go to "
        f"`{spec.volumes['checkpoints'].bucket_prefix}/<run>/`. Both Jobs run code you can run yourself "
        f"(`rlgen data model --source {spec.model_source} --model {spec.model}{revision} --out model/` then "
        f"`rlgen data upload model/ oss://<bucket>/{spec.model_bucket_path}/`); a second run fetches and "
        "uploads only what is missing. `--set rlgen.model_source=modelscope` downloads from ModelScope "
        "(nearer in mainland-China regions)."
    )


def _secret(s: SecretRef) -> dict:
    return {"name": s.name, "namespace": s.namespace, "secret_keys": list(s.keys), "purpose": s.purpose,
            "used_by": s.used_by, "env": [skeleton.secret_env(s.name, k, len(s.keys) == 1) for k in s.keys]}
