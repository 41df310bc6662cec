"""Where things are in a generated repository: the paths every command that writes or reads
one agrees on."""
from __future__ import annotations

#: The run template every runs/<run>/ builds on.
TRAINING_BASE = "base/training"
RUNS_INDEX = "runs/kustomization.yaml"
#: The runs index of an environment other than the main cluster's (``runs/`` is that one's).
ENV_RUNS = "overlays/{env}/runs"
#: The name of the transformer in a run's kustomization that pins its RayJob's name.
RENAME_TRANSFORMER = "rayjob-name"
#: The label every object of a sweep's runs carries (``rlgen run sweep``): the sweep's name.
SWEEP_LABEL = "rlgen.io/sweep"
#: The label Kueue reads a job's WorkloadPriorityClass from (kueue constants.WorkloadPriorityClassLabel).
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
