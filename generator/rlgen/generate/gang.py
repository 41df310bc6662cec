"""Gang scheduling of a run's pods (``rlgen.gang_scheduling``): all of them start, or none
holds a GPU while it waits for the others.

- ``volcano``: KubeRay's batch-scheduler integration. KubeRay makes one PodGroup per RayJob
  (minMember = head + workers) when the operator runs with ``--batch-scheduler=volcano``; the
  RayJob only names its queue and priority.
- ``coscheduling``: ACK's kube-scheduler Gang scheduling, by labels on every pod. KubeRay's own
  ``scheduler-plugins`` mode names a second scheduler ACK does not run, so it is not used.
"""
from __future__ import annotations

from rlgen.errors import RlgenError
from rlgen.naming import dns1123_label_error
from rlgen.spec import Spec
from rlgen.verl.batch_rules import Size

CLUSTER = "/spec/rayClusterSpec"
WORKERS = f"{CLUSTER}/workerGroupSpecs/0"
TEMPLATES = (f"{CLUSTER}/headGroupSpec/template", f"{WORKERS}/template")
VOLCANO_QUEUE = "volcano.sh/queue-name"
VOLCANO_PRIORITY = "ray.io/priority-class-name"
POD_GROUP = "pod-group.scheduling.sigs.k8s.io/name"
MIN_AVAILABLE = "pod-group.scheduling.sigs.k8s.io/min-available"

_NOTES = {
    "volcano": ("Gang scheduling by Volcano: needs Volcano installed and the KubeRay operator started with\n"
                "--batch-scheduler=volcano (Helm value batchScheduler.name=volcano; checked against KubeRay\n"
                "1.7.0). KubeRay then creates one PodGroup per RayJob; these labels pick its queue and priority."),
    "coscheduling": ("Gang scheduling by ACK's scheduler (ACK Pro, Gang scheduling of kube-scheduler): every pod\n"
                     "carries the pod-group labels, min-available = head + GPU workers. KubeRay runs without\n"
                     "--batch-scheduler; each run's RayJob name becomes its pod group's name."),
}


def escape(key: str) -> str:
    """A map key as one JSON pointer segment."""
    return key.replace("~", "~0").replace("/", "~1")


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


def run_labels(spec: Spec, queue: str | None, priority_class: str | None) -> dict[str, str]:
    """One run's own Volcano queue and priority, over the repository's (``rlgen run new --queue``)."""
    given = {VOLCANO_QUEUE: queue, VOLCANO_PRIORITY: priority_class}
    given = {k: v for k, v in given.items() if v is not None}
    if given and spec.gang_scheduling != "volcano":
        raise RlgenError("--queue and --priority-class need rlgen.gang_scheduling=volcano "
                         f"(this repository: {spec.gang_scheduling})")
    for key, value in given.items():
        if problem := dns1123_label_error(value):
            raise RlgenError(f"{'--queue' if key == VOLCANO_QUEUE else '--priority-class'}: {problem}")
    return given


def size_ops(spec: Spec, size: Size) -> list[dict]:
    """A resized run's pod group waits for its own number of pods."""
    if spec.gang_scheduling != "coscheduling":
        return []
    return [{"op": "replace", "path": f"{t}/metadata/labels/{escape(MIN_AVAILABLE)}", "value": str(1 + size.nnodes)}
            for t in TEMPLATES]


def name_ops(spec: Spec, rayjob_name: str) -> list[dict]:
    """Each RayJob its own pod group: two runs, or a run and its renamed successor, never share one."""
    if spec.gang_scheduling != "coscheduling":
        return []
    return [{"op": "replace", "path": f"{t}/metadata/labels/{escape(POD_GROUP)}", "value": rayjob_name}
            for t in TEMPLATES]
