"""Tracking plugin: no experiment tracker. verl logs metrics to the console (the trainer's
``trainer.logger: [console]``), which ends up in the Ray head pod's log."""
from __future__ import annotations

from rlgen.plugin_api import PluginInfo, hookimpl

NAME = "no-tracking"


@hookimpl
def rlgen_plugin():
    return PluginInfo(name=NAME, slot="tracking", summary="No experiment tracker: metrics in the trainer's log only")


@hookimpl
def rlgen_readme(ctx):
    return [
        "## Experiment tracking\n"
        "None: verl prints each step's metrics to the Ray head pod's log (`trainer.logger: [console]`), "
        "which goes with the pod. Generate with `--plugin mlflow --set mlflow.tracking_uri=URL` to log "
        "metrics, parameters and rollout traces to an MLflow tracking server."
    ]
