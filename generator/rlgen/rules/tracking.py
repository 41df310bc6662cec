"""Experiment tracking reaches every Ray pod. verl's MLflow logger and rollout tracer read
the server from ``MLFLOW_TRACKING_URI`` and fall back to ``sqlite:////tmp/mlruns.db`` inside
the pod, which goes with it; and after three failed attempts verl trains on without tracking.
So a run that logs to MLflow needs that variable on each Ray container, or nothing is kept."""
from __future__ import annotations

from typing import Iterator

from rlgen.repo.objects import get, pod_specs
from rlgen.rules.base import Finding, Rendered
from rlgen.rules.rayjob import trainer_config

URI = "MLFLOW_TRACKING_URI"


def _uses_mlflow(cfg: dict) -> bool:
    logger = get(cfg, "trainer", "logger", default=[]) or []
    logger = [logger] if isinstance(logger, str) else logger
    return "mlflow" in logger or get(cfg, "actor_rollout_ref", "rollout", "trace", "backend") == "mlflow"


def tracking_rules(objects: list[Rendered]) -> Iterator[Finding]:
    configs = {}
    for o in objects:
        if o.obj.get("kind") == "ConfigMap" and (cfg := trainer_config(o.obj)) is not None:
            configs[(get(o.obj, "metadata", "namespace"), get(o.obj, "metadata", "name"))] = cfg
    for item in objects:
        if item.obj.get("kind") != "RayJob":
            continue
        ns, pods = get(item.obj, "metadata", "namespace"), pod_specs(item.obj)
        cfg = next((configs[(ns, name)] for pod in pods for v in pod.get("volumes", [])
                    if (name := get(v, "configMap", "name")) and (ns, name) in configs), None)
        if cfg is None or not _uses_mlflow(cfg):
            continue
        for index, pod in enumerate(pods):
            container = (pod.get("containers") or [{}])[0]
            if not any(e.get("name") == URI for e in container.get("env", []) or []):
                group = "head" if index == 0 else f"worker group {index - 1}"
                yield Finding(item.source, item.label,
                              f"the trainer logs to mlflow but the {group} container '{container.get('name')}' has "
                              f"no {URI}: verl would write to sqlite:////tmp/mlruns.db inside the pod")
