"""Gang scheduling of a run's pods (``rlgen.gang_scheduling``): all of them start, or none
holds a GPU while it waits for the others.

- ``volcano``: KubeRay's batch-scheduler integration. KubeRay makes one PodGroup per RayJob
  (minMember = head + workers) when the operator runs with ``--batch-scheduler=volcano``; the
  RayJob only names its queue and priority.
- ``coscheduling``: ACK's kube-scheduler Gang scheduling, by labels on every pod. KubeRay's own
  ``scheduler-plugins`` mode names a second scheduler ACK does not run, so it is not used.

A run's own queue and priority, and its own pod group and size under ACK's, are its
kustomization's (:mod:`rlgen.run.folder`).
"""
from __future__ import annotations

from rlgen.run.folder import MIN_AVAILABLE, POD_GROUP, VOLCANO_PRIORITY, VOLCANO_QUEUE
from rlgen.spec import Spec

_NOTES = {
    "volcano": ("Gang scheduling by Volcano: needs Volcano installed and the KubeRay operator started with\n"
                "--batch-scheduler=volcano (Helm value batchScheduler.name=volcano; checked against KubeRay\n"
                "1.7.0). KubeRay then creates one PodGroup per RayJob; these labels pick its queue and priority."),
    "coscheduling": ("Gang scheduling by ACK's scheduler (ACK Pro, Gang scheduling of kube-scheduler): every pod\n"
                     "carries the pod-group labels, min-available = head + GPU workers. KubeRay runs without\n"
                     "--batch-scheduler; each run's RayJob name becomes its pod group's name."),
}


def apply(job: dict, spec: Spec) -> None:
    if spec.gang_scheduling == "volcano":
        labels = {VOLCANO_QUEUE: spec.queue or "default"}
        if spec.priority_class:
            labels[VOLCANO_PRIORITY] = spec.priority_class
        job["metadata"]["labels"] = labels
        job["metadata"].yaml_set_comment_before_after_key("labels", before=_NOTES["volcano"], indent=2)
    elif spec.gang_scheduling == "coscheduling":
        cluster = job["spec"]["rayClusterSpec"]
        for i, template in enumerate((cluster["headGroupSpec"]["template"], cluster["workerGroupSpecs"][0]["template"])):
            labels = {POD_GROUP: spec.rayjob_name, MIN_AVAILABLE: str(1 + spec.nnodes)}
            template.insert(0, "metadata", {"labels": labels})
            if i == 0:
                template.yaml_set_comment_before_after_key("metadata", before=_NOTES["coscheduling"], indent=8)
            if spec.priority_class:
                # ACK gangs only pods of one priority.
                template["spec"]["priorityClassName"] = spec.priority_class
